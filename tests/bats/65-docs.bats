#!/usr/bin/env bats
# The documentation is tested as a user would follow it: docs/USER-GUIDE.md's first program and
# the commands after it run exactly as printed against an installed pdcbb, the guide's error
# table matches the code, and no document points to something that is not part of pdcbb.

load helpers
use_install_prefix

GUIDE="$REPO_DIR/docs/USER-GUIDE.md"

setup() {
    setup_workdir
}

teardown() {
    cleanup_workdir
}

# The first ```c block of the guide, verbatim.
guide_program() {
    awk '!done && /^```c$/ {on = 1; next} on && /^```$/ {on = 0; done = 1} on' "$GUIDE"
}

# The fenced blocks of language $1 between the first ```c block and the next heading, verbatim.
guide_blocks_after_program() {
    awk -v lang="$1" '
        !seen && /^```c$/ {inc = 1; next}
        inc && /^```$/ {inc = 0; seen = 1; next}
        !seen || inc {next}
        !fence && /^#/ {exit}
        !fence && /^```/ {fence = 1; take = ($0 == "```" lang); next}
        fence && /^```$/ {fence = 0; take = 0; next}
        fence && take {print}' "$GUIDE"
}

# The environment the guide assumes: the installed pdcbb on PATH, pkg-config finding pdc.pc.
# No LD_LIBRARY_PATH: pdc.pc's rpath must be enough. TMPDIR keeps `pdcbb run`'s work directory
# inside this test's directory.
guide_env() {
    env -u LD_LIBRARY_PATH PATH="$PREFIX/bin:$PATH" \
        PKG_CONFIG_PATH="$(dirname "$(ls "$PREFIX"/lib*/pkgconfig/pdc.pc)")" TMPDIR="$WORKDIR" "$@"
}

@test "USER-GUIDE.md opens with a C program; it builds and runs as a local job exactly as printed" {
    # The guide's first code block is the program.
    run awk '/^```/ {print; exit}' "$GUIDE"
    assert_output '```c'
    mkdir "$WORKDIR/src"
    guide_program > "$WORKDIR/src/first.c"
    guide_blocks_after_program sh > "$WORKDIR/src/commands.sh"
    guide_blocks_after_program text > "$WORKDIR/expected"
    # What the guide promises: a program with these calls, a build line and a run line.
    for call in PDCinit PDCcont_create PDCobj_create PDCprop_set_obj_dims PDCregion_create \
        PDCregion_transfer_create PDCregion_transfer_start PDCregion_transfer_wait \
        PDCobj_put_tag PDCobj_get_tag PDCobj_close PDCcont_close PDCclose; do
        grep -q "$call(" "$WORKDIR/src/first.c" || { echo "first.c does not call $call" >&2; return 1; }
    done
    grep -q 'pkg-config --cflags --libs pdc' "$WORKDIR/src/commands.sh"
    grep -q '^pdcbb run --nodes 2 -- ./first$' "$WORKDIR/src/commands.sh"
    [ "$(wc -l < "$WORKDIR/expected")" -ge 3 ]

    cd "$WORKDIR/src"
    run guide_env bash -e commands.sh
    assert_success
    while IFS= read -r line; do
        assert_line "$line"
    done < "$WORKDIR/expected"
    assert_no_daemons "$WORKDIR"
    # pdcbb run removed its temporary work directory.
    run bash -c "ls -d '$WORKDIR'/pdcbb-run.* 2>/dev/null"
    assert_output ""
}

@test "the guide's program is clean C and checks its read-back" {
    guide_program > "$WORKDIR/first.c"
    # shellcheck disable=SC2046
    guide_env cc -std=c11 -Wall -Wextra -Werror -o "$WORKDIR/first" "$WORKDIR/first.c" \
        $(guide_env pkg-config --cflags --libs pdc)
    # Object names are unique within a job, as the guide says: a second run in the same job
    # fails on PDCobj_create with the message the guide quotes.
    run guide_env "$PREFIX/bin/pdcbb" run --nodes 2 -- sh -c "'$WORKDIR/first' && '$WORKDIR/first'"
    assert_failure 1
    assert_line "first: OK"
    assert_output --partial "first: PDCobj_create failed: PDCobj_create: an object named 'temperature' already exists"
    grep -q "an object named 'temperature' already" "$GUIDE"
    assert_no_daemons "$WORKDIR"
}

# The fenced blocks of language $2 in the guide's section whose "## " heading starts with $1
# (its subsections included), verbatim.
guide_section() {
    awk -v head="## $1" -v lang="$2" '
        /^## / {sec = (index($0, head) == 1)}
        !sec {next}
        !fence && /^```/ {fence = 1; take = ($0 == "```" lang); next}
        fence && /^```$/ {fence = 0; take = 0; next}
        fence && take {print}' "$GUIDE"
}

@test "USER-GUIDE.md's tag search and data query programs build and run as printed, with the printed output" {
    mkdir "$WORKDIR/find"
    cd "$WORKDIR/find"
    # the two programs, in the order the commands name them
    guide_section "Finding data" c | awk '/^\/\* find\.c/ {f = "find.c"} /^\/\* query\.c/ {f = "query.c"} f {print > f}'
    guide_section "Finding data" sh >commands.sh
    guide_section "Finding data" text >expected
    grep -q 'PDC_Client_query_kvtag(' find.c
    grep -q 'PDC_Client_search_obj_ref_through_dart(' find.c
    grep -q 'PDCquery_get_selection(' query.c
    [ "$(wc -l <commands.sh)" -eq 3 ]
    [ "$(wc -l <expected)" -ge 10 ]
    run guide_env bash -e commands.sh
    echo "$output"
    assert_success
    assert_equal "$output" "$(cat expected)"
}

@test "KV.md's program builds and runs under mpirun exactly as printed, with the printed output" {
    kvdoc="$REPO_DIR/docs/KV.md"
    mkdir "$WORKDIR/kv"
    # The first ```c, ```sh and ```text blocks of the page: the program, its commands, its output.
    for lang in c sh text; do
        awk -v lang="$lang" '!done && $0 == "```" lang {on = 1; next} on && /^```$/ {on = 0; done = 1} on' \
            "$kvdoc" > "$WORKDIR/kv/block.$lang"
    done
    mv "$WORKDIR/kv/block.c" "$WORKDIR/kv/kv_demo.c"
    head -1 "$WORKDIR/kv/kv_demo.c" | grep -q '^/\* kv_demo.c:'
    grep -q 'cc -o kv_demo kv_demo.c $(pkg-config --cflags --libs pdc)' "$WORKDIR/kv/block.sh"
    [ "$(wc -l < "$WORKDIR/kv/block.text")" -ge 5 ]
    cd "$WORKDIR/kv"
    run guide_env bash -e block.sh
    echo "$output"
    assert_success
    # Rank 0's lines, in the printed order.
    assert_equal "$(grep -E '^(temperature|key|keys)[ ,]' <<<"$output")" "$(cat block.text)"
    assert_no_daemons "$WORKDIR"

    # USER-GUIDE.md's "KV objects after the job" commands, on the drain of this program's job:
    # job id 1234 as printed; only the destination /scratch/me/run1 is this test's.
    mkdir dest
    run guide_env pdcbb run --nodes 2 --job-id 1234 --drain "$WORKDIR/kv/dest" -- \
        mpirun --oversubscribe -np 2 ./kv_demo
    assert_success
    awk '/^### KV objects after the job/ {f = 1} f && /^```sh$/ {on = 1; next} on && /^```$/ {exit} on' \
        "$GUIDE" > guide_kv.sh
    grep -q '^pdcbb kv keys /scratch/me/run1/pdcbb.1234 index --tag 9 ' guide_kv.sh
    [ "$(grep -c '^pdcbb kv ' guide_kv.sh)" -eq 4 ]
    sed -i "s|/scratch/me/run1|$WORKDIR/kv/dest|g" guide_kv.sh
    run guide_env bash -e guide_kv.sh
    echo "$output"
    assert_success
    assert_line "job 1234: 1 KV object in $WORKDIR/kv/dest/pdcbb.1234"
    assert_line --regexp '^run42 +index +STRING +HASH +2 +8 +4$'
    for k in rank0.a rank0.b rank1.a rank1.b; do assert_line "$(printf '%s\t9' "$k")"; done
    assert_line "$(printf 'temperature\t8')"
    assert_output --partial "23.1"
    # The export holds the 4 keys of the latest state (temperature is deleted from tag 10 on).
    [ "$(wc -l < index.jsonl)" -eq 4 ]
    python3 -c 'import json,sys; [json.loads(l) for l in open("index.jsonl")]'
    ! grep -q temperature index.jsonl
    assert_no_daemons "$WORKDIR"
}

@test "the guide's table of error codes is the code's list" {
    codes="$(sed -n 's/^ *X(\(PDCBB_[A-Z_]*\), \([0-9]*\), "\(.*\)").*$/| \2 | `\1` | \3 |/p' \
        "$REPO_DIR/common/pdcbb_error.h")"
    [ "$(printf '%s\n' "$codes" | wc -l)" -ge 30 ]
    run bash -c "grep -E '^\| [0-9]+ \| \`PDCBB_' '$GUIDE'"
    assert_output "$codes"
}

@test "no document points to something outside pdcbb or to a page that does not exist" {
    cd "$REPO_DIR"
    run grep -rn -E 'will join this list|DESIGN\.md|pdcbb\(7\)|LIMITS\.md|LIMITS notes|PDC_API\.md|SLURM_LAB|/work/shared|design document' \
        README.md docs man include bbd client cli common jobctl spank_plugin stager yaml examples \
        bench scripts tests/unit
    assert_output ""
    # Every docs/*.md and man page named in a document exists.
    for f in $(grep -rhoE 'docs/[A-Z][A-Z0-9_-]*\.md|man/[a-z_]+\.[18]' README.md docs man include | sort -u); do
        [ -e "$f" ] || { echo "a document names $f, which does not exist" >&2; return 1; }
    done
}

@test "every mpirun example with more ranks than this 2-core machine's cores says --oversubscribe" {
    # Open MPI refuses more ranks than cores ("not enough slots") without it; the examples run
    # as printed on a 2-core node. Placeholders (-np P, -np NP) count as more.
    cd "$REPO_DIR"
    local lines
    lines="$(grep -rh mpirun README.md docs man examples bench/*.c | sed 's/\\-/-/g' |
        grep -oE 'mpirun( [^`|]*)? -np [A-Z0-9$"{}]+[^`|]*')"
    [ "$(grep -c . <<<"$lines")" -ge 5 ]   # the scan sees the examples
    run awk '{ n = $0; sub(/.*-np /, "", n); sub(/ .*/, "", n)
               if ((n !~ /^[0-9]+$/ || n + 0 > 2) && $0 !~ /--oversubscribe/) print }' <<<"$lines"
    echo "$output"
    assert_output ""
}

@test "ADMIN.md's site file is complete and loads as printed" {
    awk '/^## The site file/ {f = 1} f && /^```yaml/ {on = 1; next} on && /^```/ {exit} on' \
        "$REPO_DIR/docs/ADMIN.md" > "$BATS_TEST_TMPDIR/site.yaml"
    [ -s "$BATS_TEST_TMPDIR/site.yaml" ]
    run "$BBD" --config "$BATS_TEST_TMPDIR/site.yaml" --print-config
    assert_success
    assert_line 'max_capacity: 200G'
    assert_line 'rendezvous_dir: "~/.pdcbb"'
    # Every key the daemon knows is in the guide's file, so an admin sees all of them.
    for key in $("$BBD" --print-config | sed -n 's/^\([a-z_]*\):.*/\1/p'); do
        grep -q "^$key:" "$BATS_TEST_TMPDIR/site.yaml" ||
            { echo "ADMIN.md's site file lacks $key" >&2; return 1; }
    done
}

@test "PERFORMANCE.md: the PDCinit benchmark runs as printed and reports every node count" {
    cmd="$(awk '/^## PDCinit/ {f = 1} f && /^```sh/ {on = 1; next} on && /^```/ {exit} on' \
        "$REPO_DIR/docs/PERFORMANCE.md")"
    [ "$cmd" = "bench/init.sh --reps 7" ]
    cd "$REPO_DIR"
    run env PDCBB_BUILD_DIR="$BUILD_DIR" bash -ec "$cmd"
    echo "$output"
    assert_success
    for n in 1 2 4; do
        grep -Eq "^$n +[0-9.]+ +[0-9.]+ +[0-9.]+$" <<<"$output"
    done
}

@test "PERFORMANCE.md: every other sh block runs as printed (PDCBB_BENCH_QUICK=1: smoke runs)" {
    # The printed commands name bench/ and build/ relative to the top of the tree: run them in
    # a directory where those are this tree's scripts and this test's build.
    mkdir "$WORKDIR/top" "$WORKDIR/tmp"
    ln -s "$REPO_DIR/bench" "$WORKDIR/top/bench"
    ln -s "$BUILD_DIR" "$WORKDIR/top/build"
    awk '/^```sh$/ {on = 1; next} on && /^```$/ {on = 0} on' "$REPO_DIR/docs/PERFORMANCE.md" |
        grep -vx 'bench/init.sh --reps 7' >"$WORKDIR/commands"
    # What the page promises: the data-path runs, the drain and the metadata runs.
    [ "$(grep -c '^bench/run.sh \|^PDCBB_DIRECT=0 bench/run.sh ' "$WORKDIR/commands")" -ge 5 ]
    grep -q '^bench/drain.sh ' "$WORKDIR/commands"
    [ "$(grep -c 'bench/meta.sh ' "$WORKDIR/commands")" -ge 3 ]
    [ "$(grep -c 'pdc_strided_bench' "$WORKDIR/commands")" -eq 3 ]
    [ "$(grep -c 'pdc_append_bench' "$WORKDIR/commands")" -eq 2 ]
    grep -q '^bench/mount.sh' "$WORKDIR/commands"
    grep -q '^bench/forward.sh ' "$WORKDIR/commands"
    cd "$WORKDIR/top"
    while IFS= read -r cmd; do
        echo "== $cmd"
        run env PDCBB_BENCH_QUICK=1 TMPDIR="$WORKDIR/tmp" bash -ec "$cmd" </dev/null
        echo "$output" | tail -15
        assert_success
        case "$cmd" in
        *bench/run.sh*--no-vpic*) assert_output --partial "RESULT name=sweep" ;;
        *bench/run.sh*) assert_output --regexp "RESULT name=vpic_write .* ratio=[0-9.]+ nodes=" ;;
        *bench/drain.sh*--help*) assert_output --partial "usage: bench/drain.sh" ;;
        *bench/quiet.sh*)
            assert_line --regexp "^the idle daemon meanwhile: CPU [0-9]+ ms "
            for p in create tag_put tag_get open; do
                assert_line --regexp "^$p +[0-9]+ +[0-9]+ +[0-9.]+$"
            done ;;
        *bench/drain.sh*) assert_output --regexp "drain/cp" ;;
        *bench/meta.sh*) assert_output --partial "== spn1-p1:" ;;
        *bench/read_check.sh*)
            for k in get get-off npy hdf5; do assert_line --regexp "^1 +$k +[0-9.]+ +- +-$"; done ;;
        *pdc_kv_bench*) assert_output --regexp "RESULT name=kv_set_list .* ratio=[0-9.]+" ;;
        *pdc_strided_bench*)
            for c in cols cols-box rows rows-box; do
                assert_line --regexp "^$c +[0-9]+ bytes  write .*  first: write +[0-9.]+ MB/s  read +[0-9.]+ MB/s$"
            done ;;
        *bench/mount.sh*)
            for f in write read create stat read4k remove; do
                for side in mount fuse-ref; do
                    assert_line --regexp "^RESULT name=mount_$f side=$side unit=[a-zA-Z/]+ first=[0-9.]+ first_ratio=[0-9.]+ steady=[0-9.]+ steady_ratio=[0-9.]+ steady_reps=1 steady_ref_ratio=[0-9.]+$"
                done
                assert_line --regexp "^RESULT name=mount_$f side=fuse-ref .* steady_ref_ratio=1.000$"
            done
            assert_line --regexp "^write +pdc-1xfer +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9.]+ " ;;
        *bench/forward.sh*)
            for p in create tag_put tag_get open; do
                assert_line --regexp "^$p +[0-9]+ +[0-9]+ +[0-9.]+$"
            done
            for p in write_first write_steady read_first read_steady; do
                assert_line --regexp "^64M $p +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+$"
            done ;;
        *pdc_append_bench*)
            assert_line --regexp "^  append +[0-9.]+ s +[0-9.]+ MiB/s +[0-9.]+x cp   first +[0-9.]+ s +[0-9.]+ MiB/s +[0-9.]+x cp$"
            assert_line "append data: ok" ;;
        *) echo "no check for: $cmd" >&2; return 1 ;;
        esac
    done <"$WORKDIR/commands"
    # Every run.sh and meta.sh run left its results file here, and no job left a daemon.
    [ "$(ls bench-*.txt | wc -l)" -ge 6 ]
    [ "$(cat meta-results-*.txt | grep -c '^RESULT name=meta_create ')" -ge 3 ]
    assert_no_daemons "$WORKDIR/tmp"
}

@test "SCALE.md: the scale test bed's commands run as printed (PDCBB_BENCH_QUICK=1: smoke runs)" {
    mkdir "$WORKDIR/top" "$WORKDIR/tmp"
    ln -s "$REPO_DIR/bench" "$WORKDIR/top/bench"
    ln -s "$BUILD_DIR" "$WORKDIR/top/build"
    awk '/^```sh$/ {on = 1; next} on && /^```$/ {on = 0} on' "$REPO_DIR/docs/SCALE.md" \
        >"$WORKDIR/commands"
    [ "$(grep -c '^\(PDCBB_FORWARD=[a-z]* \)\{0,1\}bench/scale.sh .*build$' "$WORKDIR/commands")" -eq 5 ]
    grep -qx 'bench/scale.sh --help' "$WORKDIR/commands"
    cd "$WORKDIR/top"
    while IFS= read -r cmd; do
        echo "== $cmd"
        run env PDCBB_BENCH_QUICK=1 TMPDIR="$WORKDIR/tmp" bash -ec "$cmd" </dev/null
        echo "$output" | tail -5
        assert_success
        case "$cmd" in
        *--help*) assert_output --partial "usage: bench/scale.sh" ;;
        *) assert_line --regexp "^4 +4 +[0-9.]+ +[0-9.]+ +[0-9.]+ +1 +[0-9.]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$" ;;
        esac
    done <"$WORKDIR/commands"
    assert_no_daemons "$WORKDIR/tmp"
}

@test "RELIABILITY.md: the reliability suite runs as printed" {
    block="$(awk '/^## The reliability suite$/ {on = 1} on && /^```sh$/ {take = 1; next}
                  take && /^```$/ {exit} take {print}' "$REPO_DIR/docs/RELIABILITY.md")"
    [ "$block" = "scripts/reliability.sh" ]
    cd "$REPO_DIR"
    run env BUILD_DIR="$BUILD_DIR" TMPDIR="$WORKDIR" bash -e -c "$block"
    echo "$output"
    assert_success
    # every phase, checked in the job and from the drain
    [ "$(grep -c "^ok " <<<"$output")" -eq 8 ]
    [ "$(grep -c "^    checked .*: 0 missing, 0 bad" <<<"$output")" -eq 8 ]
    [ "$(grep -c "^    from the drain: checked .*: 0 missing, 0 bad" <<<"$output")" -eq 8 ]
    assert_output --regexp "operations acknowledged: [0-9]{4,}"
}


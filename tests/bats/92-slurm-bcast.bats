#!/usr/bin/env bats
# `pdcbb bcast` on a real local Slurm cluster (3 nodes, node-local storage private to each,
# the SPANK plugin): in a 3-node batch job of an unprivileged user, a file on the shared
# filesystem is broadcast from the batch script and from a one-task job step on another node,
# to a path relative to the job directory and to an absolute node-local path; every node checks
# its own copy (sha256, mode) from a step on every node while the job runs; an unwritable
# destination names every node; the counters show the broadcast. Then the bench script's quick
# mode (it starts its own 4-node cluster, so this one is stopped first).

load helpers
load slurm_helpers

setup_file() {
    pdc_cluster_start
}

teardown_file() {
    pdc_cluster_stop
}

@test "pdcbb bcast in a 3-node job: every node's private storage gets an identical copy" {
    src="$SITE/out/bcast-src.bin"
    head -c 5000017 /dev/urandom > "$src"
    chmod 754 "$src"
    sum=$(sha256sum "$src" | cut -d' ' -f1)
    run_job pdcbbtest "
set -x
cd \$PDCBB_JOB_DIR
timeout 120 $SITE/bin/pdcbb bcast --verbose --chunk 1M $src in/copy.bin; echo bcast_batch=\$?
timeout 120 srun -N1 -n1 -w n3 $SITE/bin/pdcbb bcast $src \$PDCBB_JOB_DIR/abs-%n.bin; echo bcast_step=\$?
timeout 120 $SITE/bin/pdcbb bcast $src /etc/pdcbb-bcast-test.bin; echo bcast_etc=\$?
timeout 60 srun -N3 --ntasks-per-node=1 bash -c 'for f in in/copy.bin abs-\$SLURMD_NODENAME.bin; do echo \"COPY \$SLURMD_NODENAME \$f \$(stat -c %a \$f) \$(sha256sum < \$f | cut -d\" \" -f1)\"; done; ls -a \$PDCBB_JOB_DIR/in | grep -c bcast- | sed \"s/^/TMP \$SLURMD_NODENAME /\"'
timeout 60 $SITE/bin/pdcbb stats --json > $SITE/out/bcast-stats.\$SLURM_JOB_ID.json; echo stats=\$?
" -N3 --pdc=capacity=1G
    echo "$OUT"
    grep -q "bcast_batch=0" <<<"$OUT"
    grep -q "bcast_step=0" <<<"$OUT"
    grep -q "on 3 nodes: 5000017 bytes" <<<"$OUT"
    # --verbose: each node's copy in its own job directory (the same path on every node).
    for n in n1 n2 n3; do
        grep -qE "^[0-2] $n $LOCAL/pdcbb\.$JOB/in/copy.bin\$" <<<"$OUT"
        for f in in/copy.bin abs-$n.bin; do
            grep -q "^COPY $n $f 754 $sum\$" <<<"$OUT" || { echo "$n: no good $f" >&2; return 1; }
        done
        grep -q "^TMP $n 0\$" <<<"$OUT"
    done
    # The user may not write /etc: every node says so, nothing is left there.
    grep -q "bcast_etc=1" <<<"$OUT"
    for n in n1 n2 n3; do
        grep -qE "node $n \(daemon [0-2]\): cannot create /etc/pdcbb-bcast-test.bin: Permission denied" <<<"$OUT"
        on_node $n test ! -e /etc/pdcbb-bcast-test.bin
    done
    # Every daemon received the file's bytes twice (two broadcasts) under `broadcast`.
    jq -e '[.daemons[].kinds.broadcast.bytes_recv] | length == 3 and all(. >= 2 * 5000017)' \
        "$SITE/out/bcast-stats.$JOB.json"
    no_daemons_left
    no_job_dirs "$JOB"
}

@test "bench/bcast_bench.sh (PDCBB_BENCH_QUICK=1) compares pdcbb bcast, srun cp and sbcast" {
    # One cluster at a time: stop this file's before the bench starts its own.
    pdc_cluster_stop
    CL=""
    run env PDCBB_BENCH_QUICK=1 timeout 600 "$REPO_DIR/bench/bcast_bench.sh" "$BUILD_DIR"
    echo "$output"
    assert_success
    for m in "cp \\(local\\)" pdcbb_bcast srun_cp sbcast; do
        assert_line --regexp "^$m +[0-9]+\.[0-9]{3} +[0-9]+\.[0-9] +[0-9]+\.[0-9]{2}\$"
    done
}

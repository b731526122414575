#!/usr/bin/env bats
# The Python module pdcbb on a real local Slurm cluster (3 nodes, the SPANK plugin,
# scripts/slurm-cluster.sh): docs/PYTHON.md's first.py, as printed, under srun in a --pdc job
# of 2 nodes as the job user prints what the page shows; after the job, after.py reads the
# job's drain as that user and prints what the page shows.

load helpers
load slurm_helpers

setup_file() {
    pdc_cluster_start
    # The job user reads the module, libpdc ($SITE/lib) and the page's programs from $SITE.
    mkdir -p "$SITE/python"
    cp -r "$BUILD_DIR/python/pdcbb" "$SITE/python/"
    awk -v out="$SITE/python/block." '
        /^## / {insec = ($0 == "## A complete example")}
        !insec {next}
        !fence && /^```/ {fence = 1; lang = substr($0, 4); n[lang]++; next}
        fence && /^```$/ {fence = 0; next}
        fence {print > (out lang "." n[lang])}' "$REPO_DIR/docs/PYTHON.md"
    cp "$SITE/python/block.python.1" "$SITE/python/first.py"
    cp "$SITE/python/block.python.2" "$SITE/python/after.py"
    chmod -R a+rX "$SITE/python"
}

teardown_file() {
    pdc_cluster_stop
}

@test "srun /usr/bin/python3 first.py in a --pdc job prints what PYTHON.md shows; after.py reads the drain" {
    local env="PYTHONPATH=$SITE/python PDCBB_LIBPDC=$SITE/lib/libpdc.so.0 PYTHONDONTWRITEBYTECODE=1"
    run_job pdcbbtest "export $env
cd $SITE/python
timeout 120 srun -N1 -n1 -w n2 /usr/bin/python3 first.py; echo first_exit=\$?" \
        -N2 --pdc=capacity=1G,drain=$SITE/drain
    echo "$OUT"
    grep -q "^first_exit=0$" <<<"$OUT"
    # the page's lines, in its order (the job's output also has the drain's lines)
    diff "$SITE/python/block.text.1" <(grep -Fx -f "$SITE/python/block.text.1" <<<"$OUT")
    no_daemons_left
    [ -f "$SITE/drain/pdcbb.$JOB/COMPLETE" ]
    run runuser -u pdcbbtest -- env $env /usr/bin/python3 "$SITE/python/after.py" "$SITE/drain/pdcbb.$JOB"
    echo "$output"
    [ "$status" -eq 0 ]
    diff "$SITE/python/block.text.2" <(echo "$output")
}

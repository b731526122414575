#!/usr/bin/env bats
# The site's side of the SPANK plugin on a real local Slurm cluster (3 slurmd started by
# scripts/slurm-cluster.sh, each node's local storage private to it, the plugin installed into
# a prefix): the plugstack.conf line printed in docs/CONFIG.md and docs/ADMIN.md works as
# printed, and the plugin fails closed: an unknown plugstack argument or a site file it cannot
# read or parse refuses --pdc jobs at submission with a message for the user, never runs them
# with built-in defaults, leaves jobs without --pdc alone, and never drains a node.

load helpers
load slurm_helpers

# The documented line: the first "required ..." line of the plugstack example in a doc.
doc_plugstack_line() { # doc
    awk '/^```/ { inblock = !inblock; next } inblock && /^required .*spank_pdc\.so/ { print; exit }' "$1"
}

setup_file() {
    # The standard set-up, with max_capacity 10G: 3 nodes with private node-local storage.
    pdc_cluster_start "max_capacity: 10G"
    # The install prefix the docs tell the admin to substitute for /usr/local.
    export PREFIX="$SITE/prefix"
    mkdir -p "$PREFIX/lib/slurm"
    cp "$BUILD_DIR/spank_plugin/spank_pdc.so" "$PREFIX/lib/slurm/"
    chmod -R a+rX "$PREFIX"
    cp "$SITE/site.yaml" "$SITE/site.yaml.good"
    # Exactly as printed, with only the two paths the docs say to replace.
    DOC_LINE="$(doc_plugstack_line "$REPO_DIR/docs/CONFIG.md")"
    export DOC_LINE
    [ -n "$DOC_LINE" ]
    [ "$DOC_LINE" = "$(doc_plugstack_line "$REPO_DIR/docs/ADMIN.md")" ]
    sed -e "s|/usr/local|$PREFIX|" -e "s|/etc/pdcbb/site.yaml|$SITE/site.yaml|" <<<"$DOC_LINE" \
        > "$SITE/plugstack.good"
    # The form CONFIG.md used to print: the site file as a bare argument.
    echo "required $PREFIX/lib/slurm/spank_pdc.so $SITE/site.yaml" > "$SITE/plugstack.bare"
    echo "required $PREFIX/lib/slurm/spank_pdc.so config=$SITE/site.yaml drain_roots=/" \
        > "$SITE/plugstack.extra"
    # The plugin as installed in the prefix by the documented line, instead of the build's.
    pdc_cluster_restart "$SITE/plugstack.good"
}

teardown_file() {
    pdc_cluster_stop
}

teardown() {
    cp "$SITE/site.yaml.good" "$SITE/site.yaml"
    chmod 644 "$SITE/site.yaml"
}

# A --pdc submission refused because the site configuration is broken; $1: the reason's text.
assert_refused_broken() {
    local why=$1
    shift
    run runuser -u pdcbbtest -- sbatch "$@"
    echo "$output"
    assert_failure
    assert_output --partial "the site's pdcbb configuration is broken"
    assert_output --partial "$why"
    assert_output --partial "contact your administrator"
    refute_output --partial "(null)"
    refute_output --partial "Invalid --pdc argument"
}

# Jobs without --pdc are not the plugin's business, whatever the site file says.
assert_plain_job_runs() {
    run_job pdcbbtest "echo plain-job-ran on \$(hostname)" -N3
    echo "$OUT"
    grep -q "plain-job-ran" <<<"$OUT"
}

@test "the plugstack.conf line printed in CONFIG.md and ADMIN.md works as printed" {
    echo "doc line: $DOC_LINE"
    [[ "$DOC_LINE" == "required /usr/local/lib/slurm/spank_pdc.so config=/etc/pdcbb/site.yaml" ]]
    run_job pdcbbtest "timeout 60 srun -N1 -n1 $SITE/bin/pdc_meta_tool info; echo tool_exit=\$?" -N3 --pdc=capacity=1G
    echo "$OUT"
    grep -q "tool_exit=0" <<<"$OUT"
    grep -q "nservers=3" <<<"$OUT"
    no_daemons_left
    # the site file is in force: its max_capacity and drain_roots bind the user
    run runuser -u pdcbbtest -- sbatch -N1 --pdc=capacity=20G --wrap true
    assert_failure
    assert_output --partial "max_capacity"
    run runuser -u pdcbbtest -- sbatch -N1 --pdc=drain=/tmp --wrap true
    assert_failure
    assert_output --partial "not under an allowed drain root"
    nodes_idle
}

@test "an unknown plugstack.conf argument refuses --pdc at submission; other jobs run; no node drained" {
    pdc_cluster_restart "$SITE/plugstack.bare"
    assert_refused_broken "unknown plugstack.conf argument '$SITE/site.yaml'" -N1 --pdc --wrap true
    # a spec the built-in defaults would have let through (no max_capacity, no drain_roots)
    assert_refused_broken "unknown plugstack.conf argument" -N1 --pdc=capacity=20G,drain=/tmp --wrap true
    run timeout 30 runuser -u pdcbbtest -- salloc -N1 --pdc true
    assert_failure
    assert_output --partial "the site's pdcbb configuration is broken"
    run timeout 30 runuser -u pdcbbtest -- srun -N1 --pdc true
    assert_failure
    assert_output --partial "the site's pdcbb configuration is broken"
    pdc_cluster_restart "$SITE/plugstack.extra"
    assert_refused_broken "unknown plugstack.conf argument 'drain_roots=/'" -N1 --pdc=capacity=1G --wrap true
    assert_plain_job_runs
    run squeue -h
    assert_output ""
    nodes_idle
    no_daemons_left
    pdc_cluster_restart "$SITE/plugstack.good"
}

@test "a site file the user cannot read refuses --pdc at submission; other jobs run" {
    chmod 600 "$SITE/site.yaml"
    assert_refused_broken "$SITE/site.yaml" -N1 --pdc --wrap true
    assert_output --partial "Permission denied"
    assert_plain_job_runs
    rm "$SITE/site.yaml"
    assert_refused_broken "$SITE/site.yaml" -N1 --pdc=capacity=1G --wrap true
    assert_plain_job_runs
    nodes_idle
}

@test "a site file that does not parse refuses --pdc at submission with the file named" {
    printf 'local_root: [unclosed\n' > "$SITE/site.yaml"
    assert_refused_broken "$SITE/site.yaml" -N1 --pdc --wrap true
    printf 'local_root: /l\nmax_capasity: 1G\n' > "$SITE/site.yaml"
    assert_refused_broken "max_capasity" -N1 --pdc=capacity=1G --wrap true
    assert_plain_job_runs
    nodes_idle
}

@test "a site file broken after submission: the prolog starts no burst buffer, the job runs, no node drained" {
    JOB="$(runuser -u pdcbbtest -- sbatch --parsable --hold -o "$SITE/out/%j.out" -N3 --pdc=capacity=1G \
        --wrap "echo job-ran; echo dir=\${PDCBB_JOB_DIR:-none}")"
    printf 'local_root: [unclosed\n' > "$SITE/site.yaml"
    scontrol release "$JOB"
    wait_job "$JOB"
    echo "$OUT"
    grep -q "job-ran" <<<"$OUT"
    grep -q "dir=none" <<<"$OUT"
    run grep -h "job $JOB: burst buffer not started: the site's pdcbb configuration is broken" "$CL"/log/slurmd-n*.log
    echo "$output"
    [ "${#lines[@]}" -eq 3 ]
    # nothing was created on any node's local storage (nor on the host's mount point)
    [ -z "$(ls -A "$LOCAL")" ]
    for n in n1 n2 n3; do [ -z "$(ls -A "$(node_dir $n)")" ]; done
    no_job_dirs "$JOB"
    nodes_idle
    no_daemons_left
}

@test "a bare --pdc that the site's defaults make invalid is refused without '(null)'" {
    cp "$SITE/site.yaml.good" "$SITE/site.yaml"
    echo "capacity: 20G" >> "$SITE/site.yaml"
    run runuser -u pdcbbtest -- sbatch -N1 --pdc --wrap true
    echo "$output"
    assert_failure
    assert_output --partial "spank_pdc: --pdc: "
    assert_output --partial "max_capacity"
    refute_output --partial "(null)"
    run squeue -h
    assert_output ""
}

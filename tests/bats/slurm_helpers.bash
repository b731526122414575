# Shared set-up of the Slurm end-to-end tests: a real local cluster of 3 nodes
# (scripts/slurm-cluster.sh) whose node-local storage is private to each node, as on a real
# cluster, with the SPANK plugin installed through plugstack.conf.
#
#   $BASE   a fresh directory under /tmp (every parent traversable: munge and the job users
#           need that), removed by pdc_cluster_stop
#   $SITE   binaries and libpdc copied where the job users can run them (bin/, lib/), the site
#           file site.yaml, drain/ (1777), out/ (1777, job output)
#   $CL     the cluster directory
#   $LOCAL  the node-local root: the same path on every node, private to each node; from the
#           host use `node_dir nX` (that node's backing directory) or `on_node nX CMD...`
#
# Load after helpers.bash. Call pdc_cluster_start in setup_file and pdc_cluster_stop in
# teardown_file.
#
#   pdc_cluster_start [--no-drain-roots] [--accounting] [LINE...]
#       site.yaml gets local_root: $LOCAL, daemon_path, mount_path, listen_address, ucx_net_devices,
#       max_capacity: 2P, drain_roots: [$SITE/drain] and ready_timeout: 20, then each LINE.
#       A LINE whose key is one of these replaces it (e.g. "max_capacity: 10G");
#       --no-drain-roots leaves drain_roots out (any directory the user may write is a
#       destination); --accounting gives the cluster slurmdbd and MariaDB (sacct works). The plugin is installed by $SITE/plugstack.conf (the build's
#       spank_pdc.so, config=$SITE/site.yaml).
#   pdc_cluster_restart FILE
#       restart the same cluster (3 nodes, same $LOCAL) with another plugstack.conf: slurmd
#       reads the plugin stack at start. Job ids start at 1 again, nodes' storage is fresh.
#   run_job USER BODY [SBATCH-OPTION...]   submit, wait; sets JOB and OUT
#   wait_job ID     wait for a job submitted otherwise (e.g. held, then released); sets OUT
#   nodes_idle      fail unless n1..n3 are all idle (none drained)

# Start the cluster. Arguments: [--no-drain-roots] then extra lines for site.yaml.
pdc_cluster_start() {
    require_build
    local drain_roots=1 accounting=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --no-drain-roots) drain_roots=0; shift ;;
            --accounting) accounting=(--accounting); shift ;;
            *) break ;;
        esac
    done
    BASE="$(mktemp -d /tmp/pdcbb-bats-slurm.XXXXXX)"
    chmod 755 "$BASE"
    export BASE CL="$BASE/cluster" SITE="$BASE/site" LOCAL="$BASE/local"
    mkdir -p "$SITE/bin" "$SITE/lib" "$SITE/drain" "$SITE/out" "$LOCAL"
    chmod 0755 "$LOCAL"
    # The job user must reach what it runs: copies in a world-readable place.
    cp "$BBD" "$TOOL" "$RAWMSG" "$PDCBB" "$BUILD_DIR/tests/pdc_stage_check" \
        "$BUILD_DIR/mount/pdcbb_mount" "$BUILD_DIR/tests/hdf5_file_check" "$SITE/bin/"
    [ -x "$MPI_TOOL" ] && cp "$MPI_TOOL" "$BUILD_DIR/tests/mpi_file_exchange" "$SITE/bin/"
    cp -a "$BUILD_DIR"/client/libpdc.so* "$SITE/lib/"
    chmod -R a+rX "$SITE"
    chmod 1777 "$SITE/drain" "$SITE/out"
    local defaults=("local_root: $LOCAL" "daemon_path: $SITE/bin/pdc_bbd"
        "mount_path: $SITE/bin/pdcbb_mount" "listen_address: 127.0.0.1"
        "ucx_net_devices: lo" "max_capacity: 2P")
    [ "$drain_roots" = 1 ] && defaults+=("drain_roots: [$SITE/drain]")
    defaults+=("ready_timeout: 20")
    {
        local line extra
        for line in "${defaults[@]}"; do
            for extra in "$@"; do
                [ "${extra%%:*}" = "${line%%:*}" ] && continue 2   # replaced by the caller's
            done
            echo "$line"
        done
        for line in "$@"; do echo "$line"; done
    } > "$SITE/site.yaml"
    chmod 644 "$SITE/site.yaml"
    echo "required $BUILD_DIR/spank_plugin/spank_pdc.so config=$SITE/site.yaml" > "$SITE/plugstack.conf"
    "$REPO_DIR/scripts/slurm-cluster.sh" start --dir "$CL" --nodes 3 --node-local "$LOCAL" \
        --plugstack "$SITE/plugstack.conf" "${accounting[@]}" >&3
    eval "$("$REPO_DIR/scripts/slurm-cluster.sh" env --dir "$CL")"
    export SLURM_CONF
}

# Restart the cluster with another plugstack.conf (same nodes, same node-local path).
pdc_cluster_restart() {
    "$REPO_DIR/scripts/slurm-cluster.sh" start --dir "$CL" --nodes 3 --node-local "$LOCAL" \
        --plugstack "$1" >&3
    cmp "$1" "$CL/plugstack.conf"    # it runs with that file
}

# Stop the cluster (by pid), kill any daemon left, remove $BASE; fails if a daemon was left.
pdc_cluster_stop() {
    [ -n "${CL:-}" ] || return 0
    "$REPO_DIR/scripts/slurm-cluster.sh" stop --dir "$CL" >&3 || true
    local left
    left="$(pgrep -f "pdc_bbd .*--job-dir $LOCAL/" || true)"
    [ -n "$left" ] && kill -9 $left
    rm -rf "$BASE"
    [ -z "$left" ]
}

# The host's view of node NODE's local root ($LOCAL on that node).
node_dir() {
    "$REPO_DIR/scripts/slurm-cluster.sh" node-local-dir --dir "$CL" "$1"
}

# Run a command as root on node NODE (in its mount namespace).
on_node() {
    local node=$1
    shift
    "$REPO_DIR/scripts/slurm-cluster.sh" exec --dir "$CL" "$node" -- "$@"
}

# Submit a batch script as a user and wait for the job to end; sets JOB and OUT.
run_job() { # user script-body [sbatch options...]
    local user=$1 body=$2
    shift 2
    local script="$SITE/out/job.$RANDOM.sh"
    printf '#!/bin/bash\nexport UCX_WARN_UNUSED_ENV_VARS=n LD_LIBRARY_PATH=%s\n%s\n' "$SITE/lib" "$body" > "$script"
    chmod 755 "$script"
    JOB="$(runuser -u "$user" -- sbatch --parsable -o "$SITE/out/%j.out" "$@" "$script")"
    wait_job "$JOB" || true
}

# Wait (bounded, 60 s) for job $1 to leave the queue; sets OUT to its output
# ($SITE/out/ID.out); fails if it is still queued.
wait_job() {
    local rc=1
    for _ in $(seq 240); do
        squeue -h -j "$1" 2>/dev/null | grep -q . || { rc=0; break; }
        sleep 0.25
    done
    OUT="$(cat "$SITE/out/$1.out" 2>/dev/null || true)"
    return $rc
}

# Wait (bounded) until no daemon of this cluster runs.
no_daemons_left() {
    for _ in $(seq 40); do
        [ -z "$(pgrep -f "pdc_bbd .*--job-dir $LOCAL/" || true)" ] && return 0
        sleep 0.25
    done
    echo "pdc_bbd still running: $(pgrep -af "pdc_bbd .*--job-dir $LOCAL/")" >&2
    return 1
}

# Fail unless every node is idle: none drained (a failing prolog or epilog drains a node).
nodes_idle() {
    run sinfo -h -N -o "%N %t"
    echo "$output"
    refute_output --partial "drain"
    for n in n1 n2 n3; do assert_output --partial "$n idle"; done
}

# Fail if any node still holds the job directory of job $1.
no_job_dirs() {
    local n
    for n in n1 n2 n3; do
        if [ -e "$(node_dir "$n")/pdcbb.$1" ]; then
            echo "$n still has pdcbb.$1" >&2
            return 1
        fi
    done
}

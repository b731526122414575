#!/usr/bin/env bats
# The local Slurm test cluster of scripts/slurm-cluster.sh (docs/TEST-CLUSTER.md), started
# with 3 nodes and --node-local: nodes come up idle, jobs of the unprivileged test user span
# all nodes (sbatch, salloc + srun), OpenMPI runs under srun --mpi=pmix with the documented
# settings, each node's node-local directory is private to that node (steps, batch jobs,
# prologs, 'exec'), a SPANK plugin loads through --plugstack, stop/start restarts it, and
# nothing of the cluster (daemons, steps, processes in the nodes' mount namespaces) is left
# running afterwards. Needs root and the Slurm packages, not the project build.

load helpers
bats_require_minimum_version 1.5.0

CLUSTER="$REPO_DIR/scripts/slurm-cluster.sh"
NODES=3

# "pid command" of every live slurmctld, slurmd or munged whose command line names the
# cluster directory.
cluster_daemons() {
    local f pid cmd
    for f in /proc/[0-9]*/cmdline; do
        pid=${f#/proc/}; pid=${pid%/cmdline}
        cmd="$(tr '\0' ' ' 2>/dev/null <"$f")" || continue
        case "$cmd" in
            *"$CLUSTER_DIR/"*) ;;
            *) continue ;;
        esac
        case "$cmd" in
            slurmctld\ *|slurmd\ *|munged\ *|*/slurmctld\ *|*/slurmd\ *|*/munged\ *) ;;
            *) continue ;;
        esac
        grep -q '^[^ ]* ([^)]*) [ZX]' "/proc/$pid/stat" 2>/dev/null && continue
        echo "$pid $cmd"
    done
}

# Pids (live, not zombies) of every process in mount namespace $1 ("mnt:[N]") of one of
# this cluster's nodes (namespace numbers are reused: it must still hide CLUSTER_DIR/nodes).
pids_in_ns() {
    local pid
    # One pass over /proc ("mnt:[N] /proc/PID/ns/mnt"): a readlink per process is slow.
    for pid in $(find /proc -mindepth 3 -maxdepth 3 -path '/proc/[0-9]*/ns/mnt' -printf '%l %p\n' \
        2>/dev/null | awk -v ns="$1" '$1 == ns { split($2, p, "/"); print p[3] }'); do
        grep -q '^[^ ]* ([^)]*) [ZX]' "/proc/$pid/stat" 2>/dev/null && continue
        grep -qF " $CLUSTER_DIR/nodes " "/proc/$pid/mountinfo" 2>/dev/null || continue
        echo "$pid"
    done
    return 0
}

# "PID:START" (START: its start time in clock ticks since boot) for each given pid: pids
# come round again within seconds on a busy machine, the pair does not.
with_start() {
    local pid stat
    for pid in "$@"; do
        stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || continue
        stat="${stat##*) }"
        echo "$pid:$(echo "$stat" | cut -d' ' -f20)"
    done
}

# The PID:START pairs among the arguments whose process still runs (not a zombie).
alive() {
    local pair pid stat
    for pair in "$@"; do
        pid=${pair%%:*}
        stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || continue
        stat="${stat##*) }"
        case "${stat:0:1}" in Z|X) continue ;; esac
        [ "$(echo "$stat" | cut -d' ' -f20)" = "${pair#*:}" ] && echo "$pair"
    done
    return 0
}

# Run a shell command as the test user in the work directory, with this cluster's
# SLURM_CONF.
as_user() {
    runuser -u pdcbbtest -- env SLURM_CONF="$SLURM_CONF" bash -c "cd '$WORK' && $1"
}

# Wait until batch job $1 has left the queue (at most $2 seconds, default 60) and print
# its final "JobState=... ExitCode=...". Polls: `sbatch --wait` polls every few seconds.
wait_job() {
    local id=$1 deadline=$(( SECONDS + ${2:-60} ))
    while [ -n "$(squeue -h -j "$id" -o %i 2>/dev/null)" ]; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "job $id still in the queue after ${2:-60} s" >&2
            return 1
        fi
        sleep 0.1
    done
    scontrol show job "$id" | grep -o 'JobState=[^ ]*\|ExitCode=[^ ]*' | tr '\n' ' '
    echo
}

setup_file() {
    [ "$(id -u)" -eq 0 ] || { echo "the test cluster needs root" >&2; return 1; }
    for c in slurmctld slurmd munged srun; do
        command -v "$c" >/dev/null || { echo "$c not installed (scripts/install-deps.sh)" >&2; return 1; }
    done
    # Not under BATS_FILE_TMPDIR: that is mode 0700 and the test user must reach the
    # cluster's slurm.conf and munge socket.
    CLUSTER_DIR="$(mktemp -d /tmp/pdcbb-slurm-bats.XXXXXX)"
    chmod 0755 "$CLUSTER_DIR"
    export CLUSTER_DIR
    # The nodes' node-local PATH (the same path on every node). Mode 1777 like a scratch
    # directory the test user may write: start gives every node's directory that mode.
    NODE_LOCAL="$(mktemp -d /tmp/pdcbb-slurm-bats-local.XXXXXX)"
    chmod 1777 "$NODE_LOCAL"
    export NODE_LOCAL
    "$CLUSTER" start --dir "$CLUSTER_DIR" --nodes "$NODES" --node-local "$NODE_LOCAL"
    eval "$("$CLUSTER" env --dir "$CLUSTER_DIR")"
    # The test user's working directory (outside the cluster directory, which a restart
    # wipes).
    WORK="$(mktemp -d /tmp/pdcbb-slurm-bats-work.XXXXXX)"
    chown pdcbbtest: "$WORK"
    chmod 0755 "$WORK"
    export WORK
    # Root-owned, readable by all: SPANK plugins load in root daemons and in user clients.
    SPANK_DIR="$(mktemp -d /tmp/pdcbb-slurm-bats-spank.XXXXXX)"
    chmod 0755 "$SPANK_DIR"
    export SPANK_DIR
}

teardown_file() {
    [ -n "${CLUSTER_DIR:-}" ] || return 0
    "$CLUSTER" stop --dir "$CLUSTER_DIR"
    local left pid
    left="$(cluster_daemons)"
    if [ -n "$left" ]; then
        echo "still running after stop:" >&2
        echo "$left" >&2
        for pid in $(echo "$left" | cut -d' ' -f1); do kill -9 "$pid" 2>/dev/null || true; done
        return 1
    fi
    rm -rf "$CLUSTER_DIR" "${WORK:-}" "${SPANK_DIR:-}" "${NODE_LOCAL:-}" "${NODE_LOCAL:-}.new"
}

@test "start brings up $NODES idle nodes n1..n$NODES" {
    run timeout 30 sinfo -h -N -t idle -o '%N'
    assert_success
    assert_line n1
    assert_line n2
    assert_line n3
    assert_equal "${#lines[@]}" "$NODES"
}

@test "status, env, exec, node-local-dir and a second start while running" {
    run "$CLUSTER" status --dir "$CLUSTER_DIR"
    assert_success
    assert_output --partial "state:      running"
    assert_output --partial "test user:  pdcbbtest "
    assert_output --partial "test user:  pdcbbtest2 "
    assert_output --partial "node-local: $NODE_LOCAL, private to each node"
    assert_output --partial "$NODE_LOCAL of n3: $CLUSTER_DIR/nodes/n3/local on the host"
    run "$CLUSTER" env --dir "$CLUSTER_DIR"
    assert_success
    assert_line "export SLURM_CONF=$CLUSTER_DIR/slurm.conf"
    assert_line "export PDCBB_SLURM_NODE_LOCAL=$NODE_LOCAL"
    run "$CLUSTER" start --dir "$CLUSTER_DIR" --nodes "$NODES"
    assert_success
    assert_output --partial "already running"
    run "$CLUSTER" start --dir "$CLUSTER_DIR" --node-local "$NODE_LOCAL"
    assert_success
    assert_output --partial "already running"
    run "$CLUSTER" frobnicate
    assert_failure 2

    # The wrong --node-local, named in the message; the running cluster is untouched.
    run "$CLUSTER" start --dir "$CLUSTER_DIR" --node-local /tmp/pdcbb-other-local
    assert_failure 1
    assert_output --partial "--node-local '$NODE_LOCAL' already runs in $CLUSTER_DIR (asked for '/tmp/pdcbb-other-local'): stop it first"
    run "$CLUSTER" start --dir "$CLUSTER_DIR" --node-local relative/dir
    assert_failure 1
    assert_output --partial "--node-local 'relative/dir': must be an absolute path"
    run "$CLUSTER" start --dir "$CLUSTER_DIR" --node-local "$(dirname "$CLUSTER_DIR")"
    assert_failure 1
    assert_output --partial "contains --dir $CLUSTER_DIR"
    run "$CLUSTER" start --dir "$CLUSTER_DIR" --node-local "$CLUSTER_DIR/local"
    assert_failure 1
    assert_output --partial "is inside --dir $CLUSTER_DIR"
    run "$CLUSTER" status --dir "$CLUSTER_DIR" --node-local "$NODE_LOCAL"
    assert_failure 1
    assert_output --partial "only go with 'start'"
    [ ! -e /tmp/pdcbb-other-local ]

    # exec and node-local-dir, and their mistakes.
    run "$CLUSTER" exec --dir "$CLUSTER_DIR" n1 -- sh -c 'echo "in n1: $(stat -c %a "$1")"; exit 7' sh "$NODE_LOCAL"
    assert_failure 7
    assert_output "in n1: 1777"
    run "$CLUSTER" node-local-dir --dir "$CLUSTER_DIR" n2
    assert_success
    assert_output "$CLUSTER_DIR/nodes/n2/local"
    run "$CLUSTER" exec --dir "$CLUSTER_DIR" n9 -- true
    assert_failure 1
    assert_output --partial "unknown node 'n9': the nodes of $CLUSTER_DIR are n1 n2 n3"
    run "$CLUSTER" exec --dir "$CLUSTER_DIR" n1 true
    assert_failure 1
    assert_output --partial "exec: put '--' before the command"
    run "$CLUSTER" exec --dir "$CLUSTER_DIR" n1 --
    assert_failure 1
    assert_output --partial "exec needs a command after '--'"
    run "$CLUSTER" node-local-dir --dir "$CLUSTER_DIR"
    assert_failure 1
    assert_output --partial "node-local-dir needs a node"
}

@test "sbatch -N$NODES as the test user runs a step on every node" {
    cat >"$WORK/job.sh" <<'EOF'
#!/bin/bash
srun sh -c 'echo "$SLURM_NODEID $SLURMD_NODENAME $(id -un)"'
EOF
    chmod 0644 "$WORK/job.sh"
    run as_user "timeout 30 sbatch --parsable -N$NODES -o job.out job.sh"
    echo "$output"
    assert_success
    local id=$output
    run wait_job "$id" 60
    echo "$output"
    assert_success
    assert_output "JobState=COMPLETED ExitCode=0:0 "
    run sort "$WORK/job.out"
    assert_success
    assert_equal "${#lines[@]}" 3
    assert_line --index 0 "0 n1 pdcbbtest"
    assert_line --index 1 "1 n2 pdcbbtest"
    assert_line --index 2 "2 n3 pdcbbtest"
    assert_equal "$(stat -c %U "$WORK/job.out")" pdcbbtest
}

@test "salloc -N$NODES srun as the test user" {
    run as_user "timeout 60 salloc -N$NODES srun sh -c 'echo node \$SLURM_NODEID \$SLURMD_NODENAME'"
    echo "$output"
    assert_success
    assert_line "node 0 n1"
    assert_line "node 1 n2"
    assert_line "node 2 n3"
}

@test "srun --mpi=list lists pmix" {
    run timeout 30 srun --mpi=list
    assert_success
    assert_output --partial pmix
}

# What a step on one node writes under the node-local PATH, only that node sees: later
# steps on the same node do, steps on other nodes don't; 'exec' shows it from the node,
# node-local-dir finds it on the host, and the host's own PATH stays empty.
@test "--node-local: a file a step on n2 writes is seen on n2 only" {
    run as_user "timeout 30 srun -N1 -w n2 sh -c 'echo \"from \$SLURMD_NODENAME\" >$NODE_LOCAL/mine; ls $NODE_LOCAL'"
    echo "$output"
    assert_success
    assert_output "mine"
    local node
    for node in n1 n3; do
        run as_user "timeout 30 srun -N1 -w $node sh -c 'ls -A $NODE_LOCAL; cat $NODE_LOCAL/mine'"
        echo "$node: $output"
        assert_failure
        assert_output --partial "$NODE_LOCAL/mine: No such file or directory"
    done
    run as_user "timeout 30 srun -N1 -w n2 cat $NODE_LOCAL/mine"
    assert_success
    assert_output "from n2"

    run "$CLUSTER" exec --dir "$CLUSTER_DIR" n2 -- ls -l "$NODE_LOCAL"
    echo "$output"
    assert_success
    assert_output --regexp " pdcbbtest +pdcbbtest .* mine"
    run "$CLUSTER" exec --dir "$CLUSTER_DIR" n1 -- ls -A "$NODE_LOCAL"
    assert_success
    assert_output ""

    local n2dir
    n2dir="$("$CLUSTER" node-local-dir --dir "$CLUSTER_DIR" n2)"
    assert_equal "$(cat "$n2dir/mine")" "from n2"
    assert_equal "$(stat -c %U "$n2dir/mine")" pdcbbtest
    [ ! -e "$("$CLUSTER" node-local-dir --dir "$CLUSTER_DIR" n1)/mine" ]
    [ ! -e "$("$CLUSTER" node-local-dir --dir "$CLUSTER_DIR" n3)/mine" ]
    assert_equal "$(ls -A "$NODE_LOCAL")" ""
    # Every node's directory took the mode and owner of PATH.
    assert_equal "$(stat -c '%a %U' "$n2dir")" "1777 root"
}

@test "--node-local: a batch job's srun -N$NODES -n$NODES prints $NODES different views" {
    cat >"$WORK/views.sh" <<EOF
#!/bin/bash
srun -N$NODES -n$NODES sh -c 'mkdir -p $NODE_LOCAL/views && touch $NODE_LOCAL/views/\$SLURMD_NODENAME'
srun -N$NODES -n$NODES sh -c 'echo "\$SLURMD_NODENAME sees \$(ls $NODE_LOCAL/views | tr "\\n" " ")"'
EOF
    chmod 0644 "$WORK/views.sh"
    run as_user "timeout 30 sbatch --parsable -N$NODES -o views.out views.sh"
    assert_success
    local id=$output
    run wait_job "$id" 60
    echo "$output"
    assert_success
    assert_output "JobState=COMPLETED ExitCode=0:0 "
    run sort "$WORK/views.out"
    echo "$output"
    assert_equal "${#lines[@]}" 3
    assert_line --index 0 "n1 sees n1 "
    assert_line --index 1 "n2 sees n2 "
    assert_line --index 2 "n3 sees n3 "
}

@test "--node-local: the nodes' backing directories are out of reach from a job" {
    # Inside a node DIR/nodes is an empty tmpfs, for the job user and for root.
    run as_user "timeout 30 srun -N1 -w n1 sh -c 'ls -A $CLUSTER_DIR/nodes; ls $CLUSTER_DIR/nodes/n2/local'"
    echo "$output"
    assert_failure
    # Nothing listed, only the error and srun's report of it (in either order).
    assert_line "ls: cannot access '$CLUSTER_DIR/nodes/n2/local': No such file or directory"
    assert_line "srun: error: n1: task 0: Exited with exit code 2"
    assert_equal "${#lines[@]}" 2
    run "$CLUSTER" exec --dir "$CLUSTER_DIR" n3 -- ls -A "$CLUSTER_DIR/nodes"
    assert_success
    assert_output ""
    # The TmpFS of a node (DIR/tmp/nX) is private too; on the host it is DIR/nodes/nX/tmp.
    run as_user "timeout 30 srun -N1 -w n1 sh -c 'echo n1 >$CLUSTER_DIR/tmp/n1/tmpfile'"
    assert_success
    run as_user "timeout 30 srun -N1 -w n2 ls -A $CLUSTER_DIR/tmp/n1"
    assert_success
    assert_output ""
    assert_equal "$(cat "$CLUSTER_DIR/nodes/n1/tmp/tmpfile")" n1
    [ ! -e "$CLUSTER_DIR/tmp/n1/tmpfile" ]
    # On the host DIR/nodes is root's alone.
    run runuser -u pdcbbtest -- ls "$CLUSTER_DIR/nodes/n2/local"
    assert_failure
    assert_output --partial "Permission denied"
}

# An MPI program across three "nodes". All nodes share the hostname and /dev/shm: the
# cluster's TaskProlog gives each node its own vader backing directory, and TCP between
# nodes must be allowed on lo (OpenMPI excludes lo by default).
@test "OpenMPI under srun --mpi=pmix -N3 -n6, with and without shared memory" {
    command -v mpicc >/dev/null || { echo "mpicc not installed" >&2; return 1; }
    local mpi="$CLUSTER_DIR/mpi"
    mkdir -p "$mpi"
    cat >"$mpi/hello.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    static char buf[1 << 20];
    int rank, size, one, sum = 0, got = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    one = rank + 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT,
                 (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv_replace(buf, sizeof buf, MPI_CHAR, (rank + 1) % size, 1,
                         (rank + size - 1) % size, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d of %d node %s sum %d from %d\n", rank, size,
           getenv("SLURM_NODEID") ? getenv("SLURM_NODEID") : "?", sum, got);
    MPI_Finalize();
    return 0;
}
EOF
    mpicc -O -o "$mpi/hello" "$mpi/hello.c"
    chmod -R a+rX "$mpi"
    local btl
    for btl in self,vader,tcp self,tcp; do
        run as_user "OMPI_MCA_btl=$btl OMPI_MCA_btl_tcp_if_include=lo \
            timeout 120 srun --mpi=pmix -N3 -n6 '$mpi/hello'"
        echo "btl=$btl: $output"
        assert_success
        assert_line --partial "rank 0 of 6 node 0 sum 21 from 5"
        assert_line --partial "rank 1 of 6 node 0 sum 21 from 0"
        assert_line --partial "rank 2 of 6 node 1 sum 21 from 1"
        assert_line --partial "rank 3 of 6 node 1 sum 21 from 2"
        assert_line --partial "rank 4 of 6 node 2 sum 21 from 3"
        assert_line --partial "rank 5 of 6 node 2 sum 21 from 4"
    done
}

# A SPANK plugin through --plugstack: job_prolog runs as root on every node at allocation
# (PrologFlags=Alloc) inside that node's mount namespace, task_init's spank_setenv reaches
# the tasks of the test user. The restart keeps --node-local.
@test "start --plugstack loads a SPANK plugin: job_prolog on every node, task_init in tasks" {
    command -v gcc >/dev/null && [ -f /usr/include/slurm/spank.h ] \
        || { echo "gcc or slurm/spank.h (libslurm-dev) missing" >&2; return 1; }
    local dir="$SPANK_DIR"
    cat >"$dir/probe.c" <<'EOF'
#include <slurm/spank.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
SPANK_PLUGIN(probe, 1);
/* One empty file per argument directory: DIR/prolog.JOB.NODE. */
int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
    uint32_t job = 0;
    char path[4096];
    const char *node = getenv("SLURMD_NODENAME");
    spank_get_item(sp, S_JOB_ID, &job);
    for (int i = 0; i < ac; i++) {
        snprintf(path, sizeof path, "%s/prolog.%u.%s", av[i], job, node ? node : "unknown");
        FILE *f = fopen(path, "w");
        if (f)
            fclose(f);
    }
    return 0;
}
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    spank_setenv(sp, "PDCBB_PROBE", "seen", 1);
    return 0;
}
EOF
    gcc -shared -fPIC -o "$dir/probe.so" "$dir/probe.c"
    mkdir -p "$dir/out"
    echo "required $dir/probe.so $dir/out $NODE_LOCAL" >"$dir/plugstack.conf"
    chmod -R a+rX "$dir"
    run "$CLUSTER" start --dir "$CLUSTER_DIR" --plugstack "$dir/plugstack.conf"
    echo "$output"
    assert_success
    assert_output --partial "restarting"
    assert_output --partial "node-local storage: $NODE_LOCAL is private to each node"
    assert_equal "$(cat "$CLUSTER_DIR/plugstack.conf")" "required $dir/probe.so $dir/out $NODE_LOCAL"
    # srun, not salloc: with a job_prolog salloc polls every 3 s for the prologs.
    run as_user "timeout 60 srun -N$NODES sh -c 'echo \$SLURMD_NODENAME \${PDCBB_PROBE:-none}'"
    echo "$output"
    assert_success
    assert_line "n1 seen"
    assert_line "n2 seen"
    assert_line "n3 seen"
    run ls "$dir/out"
    assert_line "prolog.1.n1"
    assert_line "prolog.1.n2"
    assert_line "prolog.1.n3"
    # Each prolog wrote into its own node's PATH.
    local node
    for node in n1 n2 n3; do
        run ls "$("$CLUSTER" node-local-dir --dir "$CLUSTER_DIR" "$node")"
        assert_output "prolog.1.$node"
    done
}

# Stop with a job running on every node and a process in n3's namespace that nothing in
# Slurm knows of (no SLURM_* in its environment, reparented to init): afterwards none of
# the daemons, steps or namespace processes is left.
@test "stop ends daemons, job steps and everything in the nodes' mount namespaces" {
    as_user "timeout 30 srun -N1 -w n3 sh -c 'env -i setsid sh -c \"sleep 300 </dev/null >/dev/null 2>&1 &\"'"
    run as_user "timeout 30 sbatch --parsable -N$NODES -o sleep.out --wrap 'srun sleep 300'"
    assert_success
    local id=$output deadline=$(( SECONDS + 30 ))
    until [ "$(squeue -h -j "$id" -o %t)" = R ] \
        && [ "$(pgrep -c -x -u pdcbbtest sleep || true)" -ge 4 ]; do
        [ "$SECONDS" -lt "$deadline" ] || { squeue; false; }
        sleep 0.1
    done
    local node pid nss=() pids=() stepds
    for node in n1 n2 n3; do
        pid="$(cat "$CLUSTER_DIR/run/slurmd-$node.pid")"
        pids+=("$pid")
        nss+=("$(readlink "/proc/$pid/ns/mnt")")
    done
    assert_not_equal "${nss[0]}" "$(readlink /proc/self/ns/mnt)"
    assert_not_equal "${nss[0]}" "${nss[1]}"
    assert_not_equal "${nss[1]}" "${nss[2]}"
    for pid in $(pids_in_ns "${nss[0]}") $(pids_in_ns "${nss[1]}") $(pids_in_ns "${nss[2]}"); do
        pids+=("$pid")
    done
    local -a pairs
    read -r -a pairs <<<"$(with_start "${pids[@]}" | tr '\n' ' ')"
    stepds="$(for pid in "${pids[@]}"; do
        if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ]; then echo "$pid"; fi
    done)"
    [ "$(echo "$stepds" | wc -w)" -ge 3 ]
    # The stray sleep is in n3's namespace.
    local stray=""
    for pid in $(pids_in_ns "${nss[2]}"); do
        if grep -qx sleep "/proc/$pid/comm" && ! grep -qz '^SLURM_' "/proc/$pid/environ"; then
            stray+="$pid "
        fi
    done
    [ -n "$stray" ]

    run "$CLUSTER" stop --dir "$CLUSTER_DIR"
    echo "$output"
    assert_success
    assert_output --partial "stopped slurmctld"
    assert_output --partial "stopped slurmd n1"
    assert_output --partial "stopped slurmd n2"
    assert_output --partial "stopped slurmd n3"
    assert_output --partial "stopped munged"
    assert_output --partial "ending processes left in the nodes' mount namespaces: n3 pid"
    assert_equal "$(alive "${pairs[@]}")" ""
    for node in 0 1 2; do assert_equal "$(pids_in_ns "${nss[$node]}")" ""; done
    assert_equal "$(cluster_daemons)" ""
    run "$CLUSTER" status --dir "$CLUSTER_DIR"
    assert_failure 3
    run "$CLUSTER" stop --dir "$CLUSTER_DIR"
    assert_success
    assert_output --partial "not running"
}

@test "start again in the same directory without --node-local: every node sees the host's files" {
    run "$CLUSTER" start --dir "$CLUSTER_DIR" --nodes "$NODES"
    echo "$output"
    assert_success
    run timeout 30 sinfo -h -N -t idle -o '%N'
    assert_equal "${#lines[@]}" "$NODES"
    # A clean state: job ids start at 1 again.
    run as_user "timeout 60 srun -N$NODES sh -c 'echo job \$SLURM_JOB_ID'"
    assert_success
    assert_line "job 1"
    run "$CLUSTER" status --dir "$CLUSTER_DIR"
    assert_success
    assert_output --partial "node-local: none"
    run "$CLUSTER" node-local-dir --dir "$CLUSTER_DIR" n1
    assert_failure 1
    assert_output --partial "was started without --node-local"
    # exec still works: the node's namespace is the host's.
    run "$CLUSTER" exec --dir "$CLUSTER_DIR" n2 -- readlink /proc/self/ns/mnt
    assert_success
    assert_output "$(readlink /proc/self/ns/mnt)"
    run as_user "timeout 30 srun -N1 -w n3 sh -c 'touch $NODE_LOCAL/shared'"
    assert_success
    [ -e "$NODE_LOCAL/shared" ]
}

@test "start --node-local on a missing PATH creates it (root, 0755) and node directories alike" {
    local path="$NODE_LOCAL.new"
    [ ! -e "$path" ]
    run "$CLUSTER" start --dir "$CLUSTER_DIR" --nodes 4 --node-local "$path"
    echo "$output"
    assert_failure 1
    assert_output --partial "a cluster with 3 nodes already runs"
    run "$CLUSTER" stop --dir "$CLUSTER_DIR"
    assert_success
    run "$CLUSTER" start --dir "$CLUSTER_DIR" --nodes 4 --node-local "$path"
    echo "$output"
    assert_success
    assert_equal "$(stat -c '%a %U:%G' "$path")" "755 root:root"
    local node
    for node in n1 n2 n3 n4; do
        assert_equal "$(stat -c '%a %U:%G' "$("$CLUSTER" node-local-dir --dir "$CLUSTER_DIR" "$node")")" "755 root:root"
    done
    run timeout 30 srun -N4 -n4 sh -c "echo \$SLURMD_NODENAME >$path/me; cat $path/*"
    assert_success
    assert_line n1
    assert_line n4
    assert_equal "${#lines[@]}" 4
    # What start created, stop removes; a PATH that existed stays.
    run "$CLUSTER" stop --dir "$CLUSTER_DIR"
    assert_success
    [ ! -e "$path" ]
    [ -d "$NODE_LOCAL" ]
}

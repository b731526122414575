#!/usr/bin/env bats
# The local Slurm test cluster of scripts/slurm-cluster.sh (docs/TEST-CLUSTER.md): nodes
# come up idle, jobs of the unprivileged test user span both nodes (sbatch, salloc + srun),
# OpenMPI runs under srun --mpi=pmix with the documented settings, a SPANK plugin loads
# through --plugstack, stop/start restarts it, and nothing of the cluster is left running
# afterwards. Needs root and the Slurm
# packages, not the project build.

load helpers
bats_require_minimum_version 1.5.0

CLUSTER="$REPO_DIR/scripts/slurm-cluster.sh"
NODES=2

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
    "$CLUSTER" start --dir "$CLUSTER_DIR" --nodes "$NODES"
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
    rm -rf "$CLUSTER_DIR" "${WORK:-}" "${SPANK_DIR:-}"
}

@test "start brings up $NODES idle nodes n1..n$NODES" {
    run timeout 30 sinfo -h -N -t idle -o '%N'
    assert_success
    assert_line n1
    assert_line n2
    assert_equal "${#lines[@]}" "$NODES"
}

@test "status, env and a second start while running" {
    run "$CLUSTER" status --dir "$CLUSTER_DIR"
    assert_success
    assert_output --partial "state:      running"
    assert_output --partial "test user:  pdcbbtest "
    assert_output --partial "test user:  pdcbbtest2 "
    run "$CLUSTER" env --dir "$CLUSTER_DIR"
    assert_success
    assert_line "export SLURM_CONF=$CLUSTER_DIR/slurm.conf"
    run "$CLUSTER" start --dir "$CLUSTER_DIR" --nodes "$NODES"
    assert_success
    assert_output --partial "already running"
    run "$CLUSTER" frobnicate
    assert_failure 2
}

@test "sbatch -N2 as the test user runs a step on n1 and n2" {
    cat >"$WORK/job.sh" <<'EOF'
#!/bin/bash
srun sh -c 'echo "$SLURM_NODEID $SLURMD_NODENAME $(id -un)"'
EOF
    chmod 0644 "$WORK/job.sh"
    run as_user "timeout 30 sbatch --parsable -N2 -o job.out job.sh"
    echo "$output"
    assert_success
    local id=$output
    run wait_job "$id" 60
    echo "$output"
    assert_success
    assert_output "JobState=COMPLETED ExitCode=0:0 "
    run sort "$WORK/job.out"
    assert_success
    assert_equal "${#lines[@]}" 2
    assert_line --index 0 "0 n1 pdcbbtest"
    assert_line --index 1 "1 n2 pdcbbtest"
    assert_equal "$(stat -c %U "$WORK/job.out")" pdcbbtest
}

@test "salloc -N2 srun as the test user" {
    run as_user "timeout 60 salloc -N2 srun sh -c 'echo node \$SLURM_NODEID \$SLURMD_NODENAME'"
    echo "$output"
    assert_success
    assert_line "node 0 n1"
    assert_line "node 1 n2"
}

@test "srun --mpi=list lists pmix" {
    run timeout 30 srun --mpi=list
    assert_success
    assert_output --partial pmix
}

# An MPI program across the two "nodes". Both nodes share the hostname and /dev/shm: the
# cluster's TaskProlog gives each node its own vader backing directory, and TCP between
# nodes must be allowed on lo (OpenMPI excludes lo by default).
@test "OpenMPI under srun --mpi=pmix -N2 -n4, with and without shared memory" {
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
            timeout 120 srun --mpi=pmix -N2 -n4 '$mpi/hello'"
        echo "btl=$btl: $output"
        assert_success
        assert_line --partial "rank 0 of 4 node 0 sum 10 from 3"
        assert_line --partial "rank 1 of 4 node 0 sum 10 from 0"
        assert_line --partial "rank 2 of 4 node 1 sum 10 from 1"
        assert_line --partial "rank 3 of 4 node 1 sum 10 from 2"
    done
}

# A SPANK plugin through --plugstack: job_prolog runs as root on every node at allocation
# (PrologFlags=Alloc), task_init's spank_setenv reaches the tasks of the test user.
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
int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
    uint32_t job = 0;
    char path[4096];
    const char *node = getenv("SLURMD_NODENAME");
    spank_get_item(sp, S_JOB_ID, &job);
    snprintf(path, sizeof path, "%s/prolog.%u.%s", ac > 0 ? av[0] : "/tmp", job,
             node ? node : "unknown");
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
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
    echo "required $dir/probe.so $dir/out" >"$dir/plugstack.conf"
    chmod -R a+rX "$dir"
    run "$CLUSTER" start --dir "$CLUSTER_DIR" --plugstack "$dir/plugstack.conf"
    echo "$output"
    assert_success
    assert_output --partial "restarting"
    assert_equal "$(cat "$CLUSTER_DIR/plugstack.conf")" "required $dir/probe.so $dir/out"
    # srun, not salloc: with a job_prolog salloc polls every 3 s for the prologs.
    run as_user "timeout 60 srun -N2 sh -c 'echo \$SLURMD_NODENAME \${PDCBB_PROBE:-none}'"
    echo "$output"
    assert_success
    assert_line "n1 seen"
    assert_line "n2 seen"
    run ls "$dir/out"
    assert_line "prolog.1.n1"
    assert_line "prolog.1.n2"
}

@test "stop, then start again in the same directory" {
    run "$CLUSTER" stop --dir "$CLUSTER_DIR"
    echo "$output"
    assert_success
    assert_output --partial "stopped slurmctld"
    assert_output --partial "stopped slurmd n1"
    assert_output --partial "stopped slurmd n2"
    assert_output --partial "stopped munged"
    assert_equal "$(cluster_daemons)" ""
    run "$CLUSTER" status --dir "$CLUSTER_DIR"
    assert_failure 3
    run "$CLUSTER" stop --dir "$CLUSTER_DIR"
    assert_success
    assert_output --partial "not running"

    run "$CLUSTER" start --dir "$CLUSTER_DIR" --nodes "$NODES"
    echo "$output"
    assert_success
    run timeout 30 sinfo -h -N -t idle -o '%N'
    assert_equal "${#lines[@]}" "$NODES"
    # A clean state: job ids start at 1 again.
    run as_user "timeout 60 srun -N2 sh -c 'echo job \$SLURM_JOB_ID'"
    assert_success
    assert_line "job 1"
}

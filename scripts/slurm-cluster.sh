#!/usr/bin/env bash
# Start, stop and inspect a real local Slurm test cluster on this machine: one munged, one
# slurmctld and N slurmd ("nodes" n1..nN) on 127.0.0.1, everything under one directory.
# With --node-local PATH every slurmd runs in its own mount namespace where PATH is that
# node's private directory, as node-local storage is on a real cluster.
# See docs/TEST-CLUSTER.md. Needs root and the Debian packages slurmctld, slurmd,
# slurm-client and munge (scripts/install-deps.sh).
set -euo pipefail

PROG="slurm-cluster.sh"
DEFAULT_DIR=/tmp/pdcbb-slurm
SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mapfile -t TEST_USERS < <("$SCRIPTS_DIR/test-users.sh" list)   # the one list of test users
MARKER=.pdcbb-slurm-cluster       # marks a directory this script created and may wipe
START_TIMEOUT=${PDCBB_SLURM_START_TIMEOUT:-30}   # seconds for all nodes to become idle
STOP_TIMEOUT=${PDCBB_SLURM_STOP_TIMEOUT:-30}     # seconds for jobs to end, then for daemons

usage() {
    cat <<EOF
Usage: $PROG COMMAND [OPTIONS]

A local Slurm test cluster: munged, slurmctld and N slurmd (nodes n1..nN) on 127.0.0.1,
with everything (config, munge key and socket, state, spool, logs, pid files, per-node
TmpFS) under one directory.

Commands:
  start [--dir DIR] [--nodes N] [--plugstack FILE] [--node-local PATH] [--accounting]
                      start the cluster with a clean state (job ids restart at 1) and wait
                      until all nodes are idle. Already running: says so and exits 0
                      (fails if --nodes or --node-local differs; restarts if --plugstack
                      FILE differs, keeping the running cluster's --node-local).
                      --plugstack copies FILE to DIR/plugstack.conf (default: empty).
                      --node-local PATH: each node's slurmd, and everything it starts
                      (prolog, epilog, job steps, daemons), runs in a mount namespace of
                      its own in which PATH is that node's private directory (on the host:
                      DIR/nodes/nX/local); no node sees another node's PATH, nor what
                      another node keeps in its TmpFS DIR/tmp/nX (on the host: in
                      DIR/nodes/nX/tmp; DIR/nodes is empty on every node). PATH is an
                      absolute path outside DIR, the same on every node (like
                      /local/scratch); start creates it (root, 0755) if missing, and stop
                      removes it again; the node directories take the mode and owner of
                      an existing PATH.
                      --accounting: job accounting as a site keeps it, so sacct and
                      sacctmgr work: a MariaDB server (data in DIR/db, on 127.0.0.1) and
                      slurmdbd, started before slurmctld and stopped after it. A restart
                      keeps the running cluster's choice.
  stop [--dir DIR]    cancel remaining jobs, shut everything down, wait for every daemon
                      by pid, end what is left in the nodes' mount namespaces; exits 0 if
                      nothing runs.
  status [--dir DIR]  daemons, nodes, ports, node-local storage, test users; exit 0
                      running, 3 stopped, 1 partly running.
  env [--dir DIR]     print 'export SLURM_CONF=...' lines: eval "\$($PROG env)"
  exec [--dir DIR] NODE -- CMD [ARG...]
                      run CMD as root inside node NODE's mount namespace (nsenter into
                      its slurmd), e.g. 'exec n2 -- ls -l PATH'; the working directory is
                      the caller's if it exists there, else /. Exits with CMD's status.
  node-local-dir [--dir DIR] NODE
                      print the host directory that is NODE's PATH (DIR/nodes/NODE/local)
  --help              this text

DIR defaults to $DEFAULT_DIR, N to 2. Must run as root. Test users (created at start if
missing): ${TEST_USERS[*]}.
Environment: PDCBB_SLURM_START_TIMEOUT (default 30 s), PDCBB_SLURM_STOP_TIMEOUT (30 s).
EOF
}

die() { echo "$PROG: error: $*" >&2; exit 1; }
say() { echo "$PROG: $*"; }

# ---------------------------------------------------------------------------------------
# Layout

set_paths() {
    CONF="$DIR/slurm.conf"
    PLUGSTACK="$DIR/plugstack.conf"
    MUNGE_DIR="$DIR/munge"              # 0755: socket, pid, log (clients need the socket)
    MUNGE_KEY_DIR="$MUNGE_DIR/key"      # 0700: key and seed
    MUNGE_KEY="$MUNGE_KEY_DIR/munge.key"
    MUNGE_SEED="$MUNGE_KEY_DIR/munged.seed"
    MUNGE_SOCKET="$MUNGE_DIR/munge.socket"
    MUNGE_PID="$MUNGE_DIR/munged.pid"
    MUNGE_LOG="$MUNGE_DIR/munged.log"
    STATE_DIR="$DIR/state"
    RUN_DIR="$DIR/run"
    LOG_DIR="$DIR/log"
    TMPFS_DIR="$DIR/tmp"
    CTLD_PID="$RUN_DIR/slurmctld.pid"
    CTLD_LOG="$LOG_DIR/slurmctld.log"
    TASK_PROLOG="$DIR/task-prolog.sh"
    NODES_DIR="$DIR/nodes"              # backing directories of every node's PATH
    NODE_LOCAL_FILE="$DIR/node-local"   # the --node-local PATH of the last start
    NODE_LOCAL_MADE="$DIR/node-local.created"   # present if start created PATH: stop removes it
    ACCOUNTING_FILE="$DIR/accounting"   # present if the last start had --accounting
    DB_DIR="$DIR/db"                    # MariaDB: data, socket, pid, log (--accounting)
    DB_PID="$DB_DIR/mariadbd.pid"
    DB_SOCK="$DB_DIR/mariadbd.sock"
    DB_LOG="$LOG_DIR/mariadbd.log"
    DBD_CONF="$DIR/slurmdbd.conf"       # slurmdbd reads it beside slurm.conf
    DBD_PID="$RUN_DIR/slurmdbd.pid"
    DBD_LOG="$LOG_DIR/slurmdbd.log"
}
slurmd_pidfile() { echo "$RUN_DIR/slurmd-$1.pid"; }
slurmd_mntns_file() { echo "$RUN_DIR/slurmd-$1.mntns"; }  # its mount namespace, "mnt:[N]"
node_backing_dir() { echo "$NODES_DIR/$1/local"; }
# The --node-local PATH this cluster was started with (empty: none).
recorded_node_local() {
    if [ -f "$NODE_LOCAL_FILE" ]; then cat "$NODE_LOCAL_FILE"; fi
    return 0
}
slurmd_log() { echo "$LOG_DIR/slurmd-$1.log"; }

# Node names from the generated slurm.conf (empty if there is none).
conf_nodes() {
    [ -f "$CONF" ] || return 0
    sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' "$CONF"
}
conf_value() {  # conf_value KEY: first KEY=value of slurm.conf
    [ -f "$CONF" ] || return 0
    sed -n "s/^$1=\\([^ ]*\\).*/\\1/p" "$CONF" | head -n 1
}

# ---------------------------------------------------------------------------------------
# Processes, always by pid

# True if PID runs and is not a zombie (the sandbox reaps orphans late).
pid_alive() {
    local pid=$1 stat
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"
    case "${stat:0:1}" in Z|X|"") return 1 ;; esac
    return 0
}

# Pid from a pid file if that process is alive and its command line mentions DIR (guards
# against a stale pid file whose pid was reused).
pid_from_file() {
    local file=$1 pid
    [ -f "$file" ] || return 1
    pid="$(tr -dc '0-9' 2>/dev/null <"$file")" || return 1
    pid_alive "$pid" || return 1
    tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$DIR/" || return 1
    echo "$pid"
}

# Wait until every given pid is gone, at most $1 seconds. Returns 1 on timeout.
wait_pids_gone() {
    local timeout=$1; shift
    local deadline=$(( SECONDS + timeout )) p left
    while :; do
        left=0
        for p in "$@"; do pid_alive "$p" && left=1; done
        [ "$left" -eq 0 ] && return 0
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}

# Run a daemon's start command with no inherited descriptors above 2 (a daemon holding,
# say, bats' fd 3 open would hang the caller) and its early output in a file. The command
# may be a function of this script that execs in the end (node_wrapper).
run_detached() {
    local out=$1; shift
    (
        for fd in /proc/"$BASHPID"/fd/*; do
            fd=${fd##*/}
            if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
        done
        exec </dev/null >>"$out" 2>&1
        if declare -F "$1" >/dev/null; then "$@"; else exec "$@"; fi
    )
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
elapsed() {  # elapsed T0_MS: seconds since T0_MS, one decimal
    local ms=$(( $(now_ms) - $1 ))
    printf '%d.%d' $(( ms / 1000 )) $(( ms % 1000 / 100 ))
}

show_log() {  # show_log FILE [LINES]
    local f=$1 n=${2:-20}
    if [ -s "$f" ]; then
        echo "---- last $n lines of $f" >&2
        tail -n "$n" "$f" >&2
    fi
}

# ---------------------------------------------------------------------------------------
# Ports

port_listening() {  # port_listening PORT: true if some socket listens on TCP PORT
    ss -Htln 2>/dev/null | awk '{print $4}' | grep -qE "[:.]$1\$"
}

# Choose SlurmctldPort and one port per node: NODES+1 consecutive free ports in
# 20000-27999 (below the ephemeral range), starting at a point derived from DIR so that
# clusters in different directories do not race for the same ports.
pick_ports() {
    local n=$1 base tries p ok
    base=$(( 20000 + ( $(printf '%s' "$DIR" | cksum | cut -d' ' -f1) % 380 ) * 20 ))
    for (( tries = 0; tries < 400; tries++ )); do
        ok=1
        for (( p = base; p <= base + n; p++ )); do
            if port_listening "$p"; then ok=0; break; fi
        done
        if [ "$ok" -eq 1 ]; then echo "$base"; return 0; fi
        base=$(( base + 20 ))
        [ "$base" -gt $(( 27999 - n )) ] && base=20000
    done
    die "no $((n + 1)) consecutive free TCP ports found in 20000-27999 (see 'ss -ltn')"
}

# ---------------------------------------------------------------------------------------
# Test users

ensure_test_users() {
    "$SCRIPTS_DIR/test-users.sh" create | sed "s/^test-users.sh: /$PROG: /" \
        || die "could not create the test users (scripts/test-users.sh create)"
}

# ---------------------------------------------------------------------------------------
# Accounting (--accounting): MariaDB and slurmdbd, everything under DIR, on 127.0.0.1

# start_accounting DBD_PORT DB_PORT: a fresh MariaDB on DB_PORT with the slurm database user,
# slurmdbd.conf, slurmdbd on DBD_PORT, and the cluster's record ("pdcbb"). 1 on failure.
start_accounting() {
    local dbd_port=$1 db_port=$2 deadline
    for cmd in mariadb-install-db mariadbd mariadb slurmdbd sacctmgr; do
        command -v "$cmd" >/dev/null || { echo "$PROG: error: $cmd not found: run scripts/install-deps.sh" >&2; return 1; }
    done
    mkdir -p "$DB_DIR"
    chmod 0700 "$DB_DIR"
    if ! mariadb-install-db --no-defaults --datadir="$DB_DIR/data" --user=root \
        --auth-root-authentication-method=normal >"$DB_DIR/install.out" 2>&1; then
        show_log "$DB_DIR/install.out"
        echo "$PROG: error: mariadb-install-db failed" >&2
        return 1
    fi
    # mariadbd stays in the foreground: setsid --fork puts it in a session of its own and
    # returns at once
    if ! run_detached "$DB_DIR/mariadbd.out" setsid --fork mariadbd --no-defaults \
        --datadir="$DB_DIR/data" --socket="$DB_SOCK" --port="$db_port" --bind-address=127.0.0.1 \
        --pid-file="$DB_PID" --user=root --skip-name-resolve --log-error="$DB_LOG"; then
        show_log "$DB_DIR/mariadbd.out"
        echo "$PROG: error: mariadbd failed to start" >&2
        return 1
    fi
    deadline=$(( SECONDS + 30 ))
    until [ -S "$DB_SOCK" ] && pid_from_file "$DB_PID" >/dev/null \
        && mariadb --no-defaults -S "$DB_SOCK" -u root -e 'select 1' >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            show_log "$DB_LOG"
            echo "$PROG: error: MariaDB did not answer within 30 s (log: $DB_LOG)" >&2
            return 1
        fi
        sleep 0.1
    done
    mariadb --no-defaults -S "$DB_SOCK" -u root -e "CREATE USER 'slurm'@'127.0.0.1' \
        IDENTIFIED BY 'pdcbb-test-cluster'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" \
        || { echo "$PROG: error: cannot create the slurm database user" >&2; return 1; }
    {
        echo "# Generated by pdcbb scripts/slurm-cluster.sh --accounting; 'start' rewrites it."
        echo "AuthType=auth/munge"
        echo "AuthInfo=socket=$MUNGE_SOCKET"
        echo "DbdAddr=127.0.0.1"
        echo "DbdHost=localhost"
        echo "DbdPort=$dbd_port"
        echo "SlurmUser=root"
        echo "DebugLevel=info"
        echo "LogFile=$DBD_LOG"
        echo "PidFile=$DBD_PID"
        echo "StorageType=accounting_storage/mysql"
        echo "StorageHost=127.0.0.1"
        echo "StoragePort=$db_port"
        echo "StorageUser=slurm"
        echo "StoragePass=pdcbb-test-cluster"
        echo "StorageLoc=slurm_acct_db"
    } >"$DBD_CONF"
    chmod 0600 "$DBD_CONF"   # slurmdbd refuses a readable one: it holds the password
    if ! run_detached "$LOG_DIR/slurmdbd.out" slurmdbd; then
        show_log "$LOG_DIR/slurmdbd.out"; show_log "$DBD_LOG"
        echo "$PROG: error: slurmdbd failed to start (log: $DBD_LOG)" >&2
        return 1
    fi
    deadline=$(( SECONDS + 30 ))
    until port_listening "$dbd_port"; do
        if [ "$SECONDS" -ge "$deadline" ] || { [ -s "$DBD_PID" ] && ! dbd_pid >/dev/null; }; then
            show_log "$LOG_DIR/slurmdbd.out"; show_log "$DBD_LOG"
            echo "$PROG: error: slurmdbd is not listening on port $dbd_port (log: $DBD_LOG)" >&2
            return 1
        fi
        sleep 0.1
    done
    if ! timeout 30 sacctmgr -i add cluster pdcbb >"$LOG_DIR/sacctmgr.out" 2>&1; then
        show_log "$LOG_DIR/sacctmgr.out"
        echo "$PROG: error: sacctmgr add cluster failed" >&2
        return 1
    fi
}

# The pid of this cluster's slurmdbd if it runs: slurmdbd takes no config option (it reads
# slurmdbd.conf beside $SLURM_CONF), so it is ours when its environment holds our SLURM_CONF.
dbd_pid() {
    local pid
    [ -f "$DBD_PID" ] || return 1
    pid="$(tr -dc '0-9' <"$DBD_PID" 2>/dev/null)" || return 1
    pid_alive "$pid" || return 1
    grep -qzxF "SLURM_CONF=$CONF" "/proc/$pid/environ" 2>/dev/null || return 1
    echo "$pid"
}

# Pids of this cluster's slurmdbd and MariaDB that run (MariaDB's command line names DIR).
accounting_pids() {
    dbd_pid || true
    pid_from_file "$DB_PID" || true
}

# Stop slurmdbd, then MariaDB, by pid. Echoes "name (pid N)" for each it stopped.
stop_accounting() {
    local pid name
    for name in slurmdbd mariadbd; do
        if [ "$name" = slurmdbd ]; then pid="$(dbd_pid || true)"
        else pid="$(pid_from_file "$DB_PID" || true)"; fi
        [ -n "$pid" ] || continue
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_pids_gone 20 "$pid"; then
            kill -KILL "$pid" 2>/dev/null || true
            wait_pids_gone 5 "$pid" || true
        fi
        echo "$name (pid $pid)"
    done
    rm -f "$DBD_PID" "$DB_PID"
}

# ---------------------------------------------------------------------------------------
# start

write_conf() {
    local nodes=$1 base=$2 host i
    host="$(hostname -s)"
    {
        echo "# Generated by pdcbb scripts/slurm-cluster.sh; 'start' rewrites it."
        echo "ClusterName=pdcbb"
        echo "SlurmctldHost=$host(127.0.0.1)"
        echo "SlurmctldPort=$base"
        echo "SlurmdPort=$(( base + 1 ))"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "AuthType=auth/munge"
        echo "AuthInfo=socket=$MUNGE_SOCKET"
        echo "CredType=cred/munge"
        echo "StateSaveLocation=$STATE_DIR"
        echo "SlurmdSpoolDir=$DIR/slurmd-%n"
        echo "SlurmctldPidFile=$CTLD_PID"
        echo "SlurmdPidFile=$RUN_DIR/slurmd-%n.pid"
        echo "SlurmctldLogFile=$CTLD_LOG"
        echo "SlurmdLogFile=$LOG_DIR/slurmd-%n.log"
        echo "SlurmctldDebug=info"
        echo "SlurmdDebug=info"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "JobAcctGatherType=jobacct_gather/none"
        if [ -n "$ACCOUNTING" ]; then
            echo "AccountingStorageType=accounting_storage/slurmdbd"
            echo "AccountingStorageHost=127.0.0.1"
            echo "AccountingStoragePort=$(( base + nodes + 1 ))"
            echo "AccountingStoragePass=$MUNGE_SOCKET"   # slurmdbd's munge socket
        else
            echo "AccountingStorageType=accounting_storage/none"
        fi
        echo "JobCompType=jobcomp/none"
        echo "SwitchType=switch/none"
        echo "MpiDefault=none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_Core"
        echo "SchedulerType=sched/backfill"
        echo "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0"
        echo "PrologFlags=Alloc"
        echo "TmpFS=$TMPFS_DIR/%n"
        echo "PlugStackConfig=$PLUGSTACK"
        echo "TaskProlog=$TASK_PROLOG"
        echo "SlurmdParameters=config_overrides"
        echo "ReturnToService=2"
        echo "KillWait=5"
        echo "InactiveLimit=0"
        echo "MailProg=/bin/true"
        for (( i = 1; i <= nodes; i++ )); do
            echo "NodeName=n$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$(( base + i )) CPUs=2 RealMemory=2000 State=UNKNOWN"
        done
        echo "PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP"
    } >"$CONF"
    chmod 0644 "$CONF"

    # All "nodes" share one hostname and one /dev/shm: OpenMPI's vader BTL names its
    # segments after the hostname, so ranks on two nodes would map each other's segments
    # (segfaults). Give every node its own backing directory, as separate machines would
    # have. Overrides a value this script set (a batch script passes its node's value on
    # to its steps), keeps one the user chose.
    cat >"$TASK_PROLOG" <<EOF
#!/bin/sh
# Generated by pdcbb scripts/slurm-cluster.sh: runs as the job user before every task;
# "export" lines on stdout go into the task's environment.
case "\${OMPI_MCA_btl_vader_backing_directory:-}" in
    ""|$TMPFS_DIR/*) echo "export OMPI_MCA_btl_vader_backing_directory=$TMPFS_DIR/\$SLURMD_NODENAME" ;;
esac
EOF
    chmod 0755 "$TASK_PROLOG"
}

# node_wrapper NODE_LOCAL NODE CMD...: the command line that starts NODE's slurmd. Without
# NODE_LOCAL just CMD. With it CMD runs in a new mount namespace (private propagation: no
# mount goes in or out) in which NODE's backing directory is bind-mounted on NODE_LOCAL,
# DIR/nodes/NODE/tmp on NODE's TmpFS DIR/tmp/NODE (so the node's TmpFS files, such as
# OpenMPI's shared-memory segments, are its own too), and an empty tmpfs covers DIR/nodes,
# so nothing on the node reaches another node's directories.
# unshare without --fork and sh's exec keep one pid, so slurmd's own pid file stays right
# and the namespace lives exactly as long as slurmd and what it starts.
node_wrapper() {
    local node_local=$1 node=$2; shift 2
    if [ -z "$node_local" ]; then
        exec "$@"
    fi
    # shellcheck disable=SC2016  # expanded by the inner sh
    exec unshare --mount --propagation private -- sh -c '
        mount --bind -- "$1" "$2" || { echo "node $6: cannot bind $1 on $2" >&2; exit 1; }
        mount --bind -- "$3" "$4" || { echo "node $6: cannot bind $3 on $4" >&2; exit 1; }
        mount -t tmpfs -o mode=0755,size=64k,nosuid,nodev,noexec pdcbb-hidden "$5" \
            || { echo "node $6: cannot hide $5" >&2; exit 1; }
        shift 6
        exec "$@"' pdcbb-node "$(node_backing_dir "$node")" "$node_local" \
        "$NODES_DIR/$node/tmp" "$TMPFS_DIR/$node" "$NODES_DIR" "$node" "$@"
}

# check_node_namespace NODE: after start, NODE's slurmd must be in a mount namespace of its
# own, with NODE's backing directory at PATH; records that namespace for stop.
check_node_namespace() {
    local node=$1 pid ns node_local host_id node_id
    node_local="$(recorded_node_local)"
    pid="$(pid_from_file "$(slurmd_pidfile "$node")")" \
        || { echo "$PROG: error: slurmd for $node is not running" >&2; return 1; }
    ns="$(readlink "/proc/$pid/ns/mnt")" || { echo "$PROG: error: cannot read /proc/$pid/ns/mnt" >&2; return 1; }
    if [ "$ns" = "$(readlink /proc/$$/ns/mnt)" ]; then
        echo "$PROG: error: slurmd for $node (pid $pid) runs in the host's mount namespace" >&2
        return 1
    fi
    printf '%s\n' "$ns" >"$(slurmd_mntns_file "$node")"
    host_id="$(stat -c %d:%i "$(node_backing_dir "$node")")"
    node_id="$(nsenter -t "$pid" -m -- stat -c %d:%i "$node_local" 2>&1)"
    if [ "$host_id" != "$node_id" ]; then
        echo "$PROG: error: on $node, $node_local is not $(node_backing_dir "$node") ($node_id, host $host_id)" >&2
        return 1
    fi
}

# Undo a failed start: stop by pid whatever did start.
abort_start() {
    echo "$PROG: start failed; stopping what was started (logs stay in $DIR)" >&2
    do_stop quiet >&2 || true
    exit 1
}

all_nodes_idle() {  # all_nodes_idle N
    local idle
    idle="$(sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l)" || return 1
    [ "$idle" -eq "$1" ]
}

do_start() {
    local nodes=$1 plugstack_src=$2 node_local=$3 plugstack_text="" t0 i n pid base deadline
    local running_local
    [ "$(id -u)" -eq 0 ] || die "start needs root (the daemons run as root, test users are created)"
    for cmd in munged mungekey slurmctld slurmd sinfo scontrol ss unshare nsenter mount; do
        command -v "$cmd" >/dev/null || die "$cmd not found: run scripts/install-deps.sh"
    done
    if [ -n "$plugstack_src" ]; then
        [ -r "$plugstack_src" ] || die "--plugstack $plugstack_src: not a readable file"
        plugstack_text="$(cat "$plugstack_src")"
    fi

    # Already running?
    if pid_from_file "$CTLD_PID" >/dev/null || pid_from_file "$MUNGE_PID" >/dev/null \
        || [ -n "$(running_slurmds)" ]; then
        n="$(conf_nodes | wc -l)"
        running_local="$(recorded_node_local)"
        if status_healthy; then
            if [ -n "$NODES_SET" ] && [ "$n" -ne "$nodes" ]; then
                die "a cluster with $n nodes already runs in $DIR (asked for $nodes): stop it first"
            fi
            if [ -n "$ACCOUNTING_SET" ] && [ ! -e "$ACCOUNTING_FILE" ]; then
                die "a cluster without --accounting already runs in $DIR: stop it first"
            fi
            if [ -n "$NODE_LOCAL_SET" ] && [ "$node_local" != "$running_local" ]; then
                die "a cluster with --node-local '${running_local:-(none)}' already runs in $DIR" \
                    "(asked for '$node_local'): stop it first"
            fi
            if [ -z "$plugstack_src" ] || [ "$plugstack_text" = "$(cat "$PLUGSTACK")" ]; then
                say "already running in $DIR ($n nodes)"
                return 0
            fi
            # slurmd decides at its start whether any plugin has a job_prolog/job_epilog
            # (not even 'scontrol reconfigure' changes that): restart.
            say "already running in $DIR with another plugstack.conf: restarting with $plugstack_src"
        else
            say "a previous cluster in $DIR is only partly running: stopping it first"
        fi
        if [ -z "$NODES_SET" ] && [ "$n" -gt 0 ]; then nodes=$n; fi
        if [ -z "$NODE_LOCAL_SET" ]; then node_local=$running_local; fi
        if [ -z "$ACCOUNTING_SET" ] && [ -e "$ACCOUNTING_FILE" ]; then ACCOUNTING=1; fi
        do_stop
    fi

    # PATH's mode and owner, read before anything is created: the nodes' directories get
    # the same (a site's /local/scratch may be 1777); a PATH start creates is root's, 0755.
    local local_mode=0755 local_owner=0:0
    if [ -n "$node_local" ]; then
        if [ -e "$node_local" ] || [ -L "$node_local" ]; then
            if [ ! -d "$node_local" ] || [ -L "$node_local" ]; then
                die "--node-local $node_local: exists and is not a directory"
            fi
            local_mode="$(stat -c %a "$node_local")"
            local_owner="$(stat -c %u:%g "$node_local")"
        fi
    fi

    t0=$(now_ms)
    # A clean directory: wipe it only if this script made it (or it is empty).
    if [ -d "$DIR" ]; then
        if [ -e "$DIR/$MARKER" ]; then
            find "$DIR" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
        elif [ -n "$(ls -A "$DIR")" ]; then
            die "$DIR exists, is not empty and was not made by $PROG: choose another --dir"
        fi
    fi
    mkdir -p "$DIR" "$MUNGE_KEY_DIR" "$STATE_DIR" "$RUN_DIR" "$LOG_DIR" "$TMPFS_DIR"
    touch "$DIR/$MARKER"
    chmod 0755 "$DIR" "$MUNGE_DIR" "$RUN_DIR" "$LOG_DIR" "$TMPFS_DIR"
    chmod 0700 "$MUNGE_KEY_DIR" "$STATE_DIR"
    # Non-root clients must reach slurm.conf and the munge socket through every parent.
    local parent
    parent="$(dirname "$DIR")"
    while [ "$parent" != / ]; do
        case "$(stat -c %A "$parent")" in
            ?????????[xt]) ;;
            *) echo "$PROG: warning: $parent is not traversable by other users: non-root srun will fail" >&2 ;;
        esac
        parent="$(dirname "$parent")"
    done
    for (( i = 1; i <= nodes; i++ )); do
        mkdir -p "$DIR/slurmd-n$i" "$TMPFS_DIR/n$i"
        chmod 0755 "$DIR/slurmd-n$i"
        chmod 1777 "$TMPFS_DIR/n$i"
    done
    if [ -n "$node_local" ]; then
        if [ ! -d "$node_local" ]; then
            mkdir -p "$node_local" || die "--node-local $node_local: cannot create it"
            chown 0:0 "$node_local"
            chmod 0755 "$node_local"
            : >"$NODE_LOCAL_MADE"
        fi
        mkdir -p "$NODES_DIR"
        chmod 0700 "$NODES_DIR"   # the host side: nobody but root looks into other nodes
        for (( i = 1; i <= nodes; i++ )); do
            mkdir -p "$NODES_DIR/n$i" "$(node_backing_dir "n$i")" "$NODES_DIR/n$i/tmp"
            chmod 0755 "$NODES_DIR/n$i"
            chmod 1777 "$NODES_DIR/n$i/tmp"
            chown "$local_owner" "$(node_backing_dir "n$i")"
            chmod "$local_mode" "$(node_backing_dir "n$i")"
        done
        printf '%s\n' "$node_local" >"$NODE_LOCAL_FILE"
    fi
    if [ -n "$plugstack_src" ]; then
        printf '%s\n' "$plugstack_text" >"$PLUGSTACK"
    else
        : >"$PLUGSTACK"
    fi
    chmod 0644 "$PLUGSTACK"
    if [ -n "$ACCOUNTING" ]; then
        base="$(pick_ports $(( nodes + 2 )))"   # + slurmdbd and MariaDB
        : >"$ACCOUNTING_FILE"
    else
        base="$(pick_ports "$nodes")"
    fi
    write_conf "$nodes" "$base"
    ensure_test_users

    # 1. munge
    mungekey --create --keyfile="$MUNGE_KEY" >"$MUNGE_DIR/mungekey.out" 2>&1 \
        || { show_log "$MUNGE_DIR/mungekey.out"; die "mungekey -c -k $MUNGE_KEY failed"; }
    chmod 0600 "$MUNGE_KEY"
    if ! run_detached "$MUNGE_DIR/munged.out" munged --key-file="$MUNGE_KEY" \
        --socket="$MUNGE_SOCKET" --pid-file="$MUNGE_PID" --seed-file="$MUNGE_SEED" \
        --log-file="$MUNGE_LOG"; then
        show_log "$MUNGE_DIR/munged.out"; show_log "$MUNGE_LOG"
        echo "$PROG: error: munged failed to start (log: $MUNGE_LOG)" >&2
        abort_start
    fi
    deadline=$(( SECONDS + 10 ))
    until [ -S "$MUNGE_SOCKET" ] && pid_from_file "$MUNGE_PID" >/dev/null; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            show_log "$MUNGE_DIR/munged.out"; show_log "$MUNGE_LOG"
            echo "$PROG: error: munged did not create $MUNGE_SOCKET within 10 s (log: $MUNGE_LOG)" >&2
            abort_start
        fi
        sleep 0.05
    done

    # 1b. accounting: MariaDB, then slurmdbd, then the cluster's record in it
    if [ -n "$ACCOUNTING" ]; then
        start_accounting "$(( base + nodes + 1 ))" "$(( base + nodes + 2 ))" || abort_start
    fi

    # 2. slurmctld with a clean state
    if ! run_detached "$LOG_DIR/slurmctld.out" slurmctld -f "$CONF" -c; then
        show_log "$LOG_DIR/slurmctld.out"; show_log "$CTLD_LOG"
        echo "$PROG: error: slurmctld failed to start (log: $CTLD_LOG)" >&2
        abort_start
    fi
    deadline=$(( SECONDS + 15 ))
    until pid_from_file "$CTLD_PID" >/dev/null; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            show_log "$LOG_DIR/slurmctld.out"; show_log "$CTLD_LOG"
            echo "$PROG: error: slurmctld wrote no live pid to $CTLD_PID within 15 s (log: $CTLD_LOG)" >&2
            abort_start
        fi
        sleep 0.05
    done

    # 3. one slurmd per node (with --node-local each in a mount namespace of its own)
    for (( i = 1; i <= nodes; i++ )); do
        if ! run_detached "$LOG_DIR/slurmd-n$i.out" node_wrapper "$node_local" "n$i" \
            slurmd -f "$CONF" -N "n$i"; then
            show_log "$LOG_DIR/slurmd-n$i.out"; show_log "$(slurmd_log "n$i")"
            echo "$PROG: error: slurmd -N n$i failed to start (log: $(slurmd_log "n$i"))" >&2
            abort_start
        fi
    done

    # 4. all nodes idle
    deadline=$(( SECONDS + START_TIMEOUT ))
    until all_nodes_idle "$nodes"; do
        for (( i = 1; i <= nodes; i++ )); do
            if ! pid_from_file "$(slurmd_pidfile "n$i")" >/dev/null \
                && [ -s "$(slurmd_pidfile "n$i")" ]; then
                show_log "$LOG_DIR/slurmd-n$i.out"; show_log "$(slurmd_log "n$i")"
                echo "$PROG: error: slurmd for n$i exited (log: $(slurmd_log "n$i"))" >&2
                abort_start
            fi
        done
        if ! pid_from_file "$CTLD_PID" >/dev/null; then
            show_log "$CTLD_LOG"
            echo "$PROG: error: slurmctld exited (log: $CTLD_LOG)" >&2
            abort_start
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "$PROG: error: not all $nodes nodes idle after $START_TIMEOUT s:" >&2
            sinfo -N -l >&2 || true
            show_log "$CTLD_LOG"
            for (( i = 1; i <= nodes; i++ )); do
                if ! pid_from_file "$(slurmd_pidfile "n$i")" >/dev/null; then
                    echo "$PROG: slurmd for n$i is not running (no live pid in $(slurmd_pidfile "n$i"))" >&2
                fi
                show_log "$LOG_DIR/slurmd-n$i.out" 5; show_log "$(slurmd_log "n$i")" 10
            done
            abort_start
        fi
        sleep 0.1
    done
    if [ -n "$node_local" ]; then
        for (( i = 1; i <= nodes; i++ )); do
            check_node_namespace "n$i" || abort_start
        done
    fi
    say "started in $DIR: $nodes nodes (n1..n$nodes) idle, slurmctld port $base," \
        "node ports $(( base + 1 ))-$(( base + nodes )), $(elapsed "$t0") s"
    if [ -n "$node_local" ]; then
        say "node-local storage: $node_local is private to each node (host side:" \
            "$NODES_DIR/nX/local; look from a node with '$PROG exec nX -- CMD')"
    fi
    say "use it with: eval \"\$($0 env --dir $DIR)\""
}

# ---------------------------------------------------------------------------------------
# stop

# "node pid" lines for the slurmd of this cluster that run.
running_slurmds() {
    local f node pid
    for f in "$RUN_DIR"/slurmd-*.pid; do
        [ -e "$f" ] || continue
        node="${f##*/slurmd-}"; node="${node%.pid}"
        if pid="$(pid_from_file "$f")"; then echo "$node $pid"; fi
    done
}

# Pids of this cluster's job steps and job processes: slurmstepd processes (they inherit
# slurmd's environment, where this script put SLURM_CONF) and processes whose environment
# has this SLURM_CONF and a SLURM_JOB_ID (an srun left behind by a killed batch script,
# daemons started by a prolog). Never this script or its ancestors.
cluster_job_pids() {
    local f pid self=" " p=$$
    while [ "$p" -gt 1 ] 2>/dev/null; do
        self+="$p "
        p="$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null || echo 0)"
    done
    # One grep over every environment (NUL-separated entries).
    grep -lzxF "SLURM_CONF=$CONF" /proc/[0-9]*/environ 2>/dev/null | while read -r f; do
        pid=${f#/proc/}; pid=${pid%/environ}
        [[ "$self" == *" $pid "* ]] && continue
        pid_alive "$pid" || continue
        if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ] \
            || grep -qz '^SLURM_JOB_ID=' "/proc/$pid/environ" 2>/dev/null; then
            echo "$pid"
        fi
    done
    return 0
}

# The given pids and all their descendants.
with_descendants() {
    local all=" $* " changed=1 pid ppid
    while [ "$changed" -eq 1 ]; do
        changed=0
        while read -r pid ppid; do
            if [[ "$all" == *" $ppid "* ]] && [[ "$all" != *" $pid "* ]]; then
                all+="$pid "; changed=1
            fi
        done < <(ps -eo pid=,ppid=)
    done
    echo "$all"
}

# SIGKILL the slurmstepd of this cluster and their processes (jobs that did not end in
# time). Adds the pids to the caller's "killed" array.
kill_leftover_steps() {
    local stepds victims=()
    stepds="$(cluster_job_pids | tr '\n' ' ')"
    [ -n "${stepds// /}" ] || return 0
    # shellcheck disable=SC2086  # word splitting of the pid list is wanted
    read -r -a victims <<<"$(with_descendants $stepds)"
    say "killing leftover job steps and their processes: pids ${victims[*]}"
    kill -KILL "${victims[@]}" 2>/dev/null || true
    killed+=("${victims[@]}")
    wait_pids_gone 5 "${victims[@]}" || true
}

# "node pid" of every live process in the mount namespace of one of this cluster's nodes
# (recorded at start; none without --node-local). After slurmd is gone these are leftovers:
# processes a prolog started that no epilog stopped, or steps that outlived slurmd.
node_namespace_pids() {
    local f node ns all="" host pid checked
    host="$(readlink /proc/$$/ns/mnt)"
    for f in "$RUN_DIR"/slurmd-*.mntns; do
        [ -e "$f" ] || continue
        node="${f##*/slurmd-}"; node="${node%.mntns}"
        ns="$(cat "$f")"
        # Never the host's namespace, whatever the file says.
        if [ -z "$ns" ] || [ "$ns" = "$host" ]; then continue; fi
        # Every process's namespace in one pass ("mnt:[N] /proc/PID/ns/mnt" lines).
        [ -n "$all" ] || all="$(find /proc -mindepth 3 -maxdepth 3 -path '/proc/[0-9]*/ns/mnt' \
            -printf '%l %p\n' 2>/dev/null)"
        # Namespace numbers are reused once a namespace is gone: it counts as this node's
        # only if it still has the tmpfs over DIR/nodes that node_wrapper mounted.
        checked=""
        while read -r pid; do
            pid_alive "$pid" || continue
            if [ -z "$checked" ]; then
                grep -qF " $NODES_DIR rw,nosuid,nodev,noexec" "/proc/$pid/mountinfo" 2>/dev/null \
                    || break
                checked=1
            fi
            echo "$node $pid"
        done < <(awk -v ns="$ns" '$1 == ns { split($2, p, "/"); print p[3] }' <<<"$all")
    done
    return 0
}

# End what is left in the nodes' namespaces: SIGTERM, 3 s, SIGKILL. Adds the SIGKILLed pids
# to the caller's "killed" array. When it returns, the namespaces are gone.
kill_node_namespaces() {
    local left pids=() node pid
    left="$(node_namespace_pids)"
    [ -n "$left" ] || return 0
    while read -r node pid; do pids+=("$pid"); done <<<"$left"
    say "ending processes left in the nodes' mount namespaces:" \
        "$(echo "$left" | awk '{printf "%s%s pid %s", (NR > 1 ? ", " : ""), $1, $2}')"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    if ! wait_pids_gone 3 "${pids[@]}"; then
        for pid in "${pids[@]}"; do
            if pid_alive "$pid"; then
                kill -KILL "$pid" 2>/dev/null || true
                killed+=("$pid")
            fi
        done
        wait_pids_gone 5 "${pids[@]}" \
            || echo "$PROG: warning: still alive after SIGKILL: $(node_namespace_pids | tr '\n' ' ')" >&2
    fi
}

# A --node-local PATH that start created goes with the cluster (the host's side of it is
# only a mount point, empty unless something on the host wrote there: then it stays).
remove_made_node_local() {
    local path
    [ -e "$NODE_LOCAL_MADE" ] || return 0
    path="$(recorded_node_local)"
    rm -f "$NODE_LOCAL_MADE"
    [ -n "$path" ] && [ -d "$path" ] || return 0
    rmdir -- "$path" 2>/dev/null \
        || echo "$PROG: warning: kept $path (start created it, but it is not empty on the host)" >&2
}

# do_stop [quiet]: stop everything of DIR by pid.
do_stop() {
    local quiet=${1:-} ctld munge ids t0 stopped=() killed=() pids=() node pid line
    t0=$(now_ms)
    ctld="$(pid_from_file "$CTLD_PID" || true)"
    munge="$(pid_from_file "$MUNGE_PID" || true)"
    local slurmds
    slurmds="$(running_slurmds)"
    if [ -z "$ctld" ] && [ -z "$munge" ] && [ -z "$slurmds" ] \
        && [ -z "$(node_namespace_pids)" ] && [ -z "$(accounting_pids)" ]; then
        rm -f "$RUN_DIR"/slurmd-*.mntns
        remove_made_node_local
        [ -n "$quiet" ] || say "not running in $DIR"
        return 0
    fi

    if [ -n "$ctld" ]; then
        # Cancel what still runs, then wait for the queue (running and completing jobs) to
        # drain: otherwise slurmstepd and job processes outlive the cluster.
        ids="$(timeout 10 squeue -h -o '%i' 2>/dev/null | tr '\n' ' ' || true)"
        if [ -n "${ids// /}" ]; then
            say "cancelling jobs: $ids"
            # shellcheck disable=SC2086  # word splitting of the id list is wanted
            timeout 10 scancel $ids 2>/dev/null || true
        fi
        local deadline=$(( SECONDS + STOP_TIMEOUT ))
        while [ -n "$(timeout 10 squeue -h -o '%i %t' 2>/dev/null || true)" ]; do
            if [ "$SECONDS" -ge "$deadline" ]; then
                echo "$PROG: warning: jobs still in the queue after $STOP_TIMEOUT s:" >&2
                timeout 10 squeue >&2 || true
                # slurmd would wait for these steps at shutdown.
                kill_leftover_steps
                break
            fi
            sleep 0.1
        done
        timeout 15 scontrol shutdown >/dev/null 2>&1 \
            || echo "$PROG: warning: 'scontrol shutdown' failed; stopping the daemons by signal" >&2
        stopped+=("slurmctld (pid $ctld)")
        pids+=("$ctld")
    fi
    while read -r node pid; do
        [ -n "$pid" ] || continue
        stopped+=("slurmd $node (pid $pid)")
        pids+=("$pid")
        # Without slurmctld nobody else tells slurmd to stop.
        [ -n "$ctld" ] || kill -TERM "$pid" 2>/dev/null || true
    done <<<"$slurmds"
    if [ "${#pids[@]}" -gt 0 ] && ! wait_pids_gone 15 "${pids[@]}"; then
        for pid in "${pids[@]}"; do
            if pid_alive "$pid"; then kill -TERM "$pid" 2>/dev/null || true; fi
        done
        if ! wait_pids_gone 5 "${pids[@]}"; then
            for pid in "${pids[@]}"; do
                if pid_alive "$pid"; then
                    kill -KILL "$pid" 2>/dev/null || true
                    killed+=("$pid")
                fi
            done
            wait_pids_gone 5 "${pids[@]}" || true
        fi
    fi

    # Job steps that outlived the daemons, then anything else in the nodes' namespaces.
    kill_leftover_steps
    kill_node_namespaces

    while read -r line; do
        [ -n "$line" ] && stopped+=("$line")
    done < <(stop_accounting)

    if [ -n "$munge" ]; then
        kill -TERM "$munge" 2>/dev/null || true
        if ! wait_pids_gone 10 "$munge"; then
            kill -KILL "$munge" 2>/dev/null || true
            killed+=("$munge")
            wait_pids_gone 5 "$munge" || true
        fi
        stopped+=("munged (pid $munge)")
    fi
    rm -f "$CTLD_PID" "$RUN_DIR"/slurmd-*.pid "$RUN_DIR"/slurmd-*.mntns "$MUNGE_PID"
    remove_made_node_local

    if [ -z "$quiet" ]; then
        for line in "${stopped[@]}"; do say "stopped $line"; done
        [ "${#killed[@]}" -eq 0 ] || say "had to SIGKILL pids ${killed[*]}"
        say "stopped in $(elapsed "$t0") s"
    fi
}

# ---------------------------------------------------------------------------------------
# status / env

status_healthy() {
    local n
    pid_from_file "$CTLD_PID" >/dev/null || return 1
    pid_from_file "$MUNGE_PID" >/dev/null || return 1
    n="$(conf_nodes | wc -l)"
    [ "$n" -gt 0 ] && [ "$(running_slurmds | wc -l)" -eq "$n" ]
}

do_status() {
    local ctld munge node pid up=0 total=0 u base node_local
    echo "directory:  $DIR"
    if [ ! -f "$CONF" ]; then
        echo "state:      stopped (no $CONF)"
        return 3
    fi
    node_local="$(recorded_node_local)"
    if [ -n "$node_local" ]; then
        echo "node-local: $node_local, private to each node (--node-local; host side $NODES_DIR/nX/local)"
    else
        echo "node-local: none (every node sees the same files; start --node-local PATH)"
    fi
    if ctld="$(pid_from_file "$CTLD_PID")"; then
        echo "slurmctld:  running, pid $ctld, port $(conf_value SlurmctldPort), log $CTLD_LOG"; up=$((up + 1))
    else
        echo "slurmctld:  not running (log $CTLD_LOG)"
    fi
    total=$((total + 1))
    if munge="$(pid_from_file "$MUNGE_PID")"; then
        echo "munged:     running, pid $munge, socket $MUNGE_SOCKET"; up=$((up + 1))
    else
        echo "munged:     not running (log $MUNGE_LOG)"
    fi
    total=$((total + 1))
    for node in $(conf_nodes); do
        total=$((total + 1))
        base="$(sed -n "s/^NodeName=$node .*Port=\\([0-9]*\\).*/\\1/p" "$CONF")"
        if pid="$(pid_from_file "$(slurmd_pidfile "$node")")"; then
            echo "slurmd $node: running, pid $pid, port $base, log $(slurmd_log "$node")"; up=$((up + 1))
            if [ -n "$node_local" ]; then
                echo "    $node_local of $node: $(node_backing_dir "$node") on the host," \
                    "mount namespace $(readlink "/proc/$pid/ns/mnt" 2>/dev/null || echo '?')"
            fi
        else
            echo "slurmd $node: not running (log $(slurmd_log "$node"))"
        fi
    done
    for u in "${TEST_USERS[@]}"; do
        if getent passwd "$u" >/dev/null; then
            echo "test user:  $u (uid $(id -u "$u"), home $(getent passwd "$u" | cut -d: -f6))"
        else
            echo "test user:  $u (missing: 'start' creates it)"
        fi
    done
    echo "config:     export SLURM_CONF=$CONF"
    if [ -n "${ctld:-}" ]; then
        echo "nodes:"
        timeout 10 sinfo -N -o '  %N %T %C' 2>&1 || true
    fi
    if [ "$up" -eq "$total" ]; then echo "state:      running"; return 0; fi
    if [ "$up" -eq 0 ]; then echo "state:      stopped"; return 3; fi
    echo "state:      partly running ($up of $total daemons): run 'stop', then 'start'"
    return 1
}

do_env() {
    local node_local
    [ -f "$CONF" ] || die "no cluster configured in $DIR (run '$PROG start --dir $DIR')"
    echo "export SLURM_CONF=$CONF"
    echo "export PDCBB_SLURM_DIR=$DIR"
    node_local="$(recorded_node_local)"
    if [ -n "$node_local" ]; then echo "export PDCBB_SLURM_NODE_LOCAL=$node_local"; fi
}

# check_node NODE: NODE is a node of this cluster's slurm.conf.
check_node() {
    local node=$1 all
    [ -f "$CONF" ] || die "no cluster configured in $DIR (run '$PROG start --dir $DIR')"
    all="$(conf_nodes | tr '\n' ' ')"
    [[ " $all" == *" $node "* ]] || die "unknown node '$node': the nodes of $DIR are ${all% }"
}

do_exec() {
    local node=$1 pid; shift
    [ "$(id -u)" -eq 0 ] || die "exec needs root (it enters a node's mount namespace)"
    check_node "$node"
    pid="$(pid_from_file "$(slurmd_pidfile "$node")")" \
        || die "slurmd of $node is not running in $DIR (see '$PROG status --dir $DIR')"
    # shellcheck disable=SC2016  # expanded by the inner sh
    exec nsenter -t "$pid" -m -- sh -c 'cd -- "$1" 2>/dev/null || cd /; shift; exec "$@"' \
        pdcbb-exec "$PWD" "$@"
}

do_node_local_dir() {
    local node=$1
    check_node "$node"
    [ -n "$(recorded_node_local)" ] \
        || die "the cluster in $DIR was started without --node-local: every node sees the host's files"
    node_backing_dir "$node"
}

# ---------------------------------------------------------------------------------------
# main

[ $# -gt 0 ] || { usage >&2; exit 2; }
cmd=$1; shift
case "$cmd" in
    -h|--help|help) usage; exit 0 ;;
    start|stop|status|env|exec|node-local-dir) ;;
    *) echo "$PROG: unknown command '$cmd'" >&2; usage >&2; exit 2 ;;
esac

DIR=$DEFAULT_DIR
NODES=2
NODES_SET=""   # set if --nodes was given: then a running cluster must have that many
PLUGSTACK_SRC=""
NODE_LOCAL=""
NODE_LOCAL_SET=""
ACCOUNTING=""      # --accounting: MariaDB and slurmdbd
ACCOUNTING_SET=""
NODE=""        # exec and node-local-dir
EXEC_CMD=()    # exec: the command after --
while [ $# -gt 0 ]; do
    case "$1" in
        --) [ "$cmd" = exec ] || die "unexpected '--' for $cmd (see --help)"
            shift; EXEC_CMD=("$@"); break ;;
        --node-local) [ $# -ge 2 ] || die "--node-local needs a value"; NODE_LOCAL=$2; NODE_LOCAL_SET=1; shift 2 ;;
        --node-local=*) NODE_LOCAL=${1#--node-local=}; NODE_LOCAL_SET=1; shift ;;
        --dir) [ $# -ge 2 ] || die "--dir needs a value"; DIR=$2; shift 2 ;;
        --dir=*) DIR=${1#--dir=}; shift ;;
        --nodes) [ $# -ge 2 ] || die "--nodes needs a value"; NODES=$2; NODES_SET=1; shift 2 ;;
        --nodes=*) NODES=${1#--nodes=}; NODES_SET=1; shift ;;
        --plugstack) [ $# -ge 2 ] || die "--plugstack needs a value"; PLUGSTACK_SRC=$2; shift 2 ;;
        --plugstack=*) PLUGSTACK_SRC=${1#--plugstack=}; shift ;;
        --accounting) ACCOUNTING=1; ACCOUNTING_SET=1; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option '$1' for $cmd (see --help)" ;;
        *)  if [ -z "$NODE" ] && { [ "$cmd" = exec ] || [ "$cmd" = node-local-dir ]; }; then
                NODE=$1; shift
            elif [ "$cmd" = exec ]; then
                die "exec: put '--' before the command: $PROG exec [--dir DIR] NODE -- CMD [ARG...]"
            else
                die "unexpected argument '$1' for $cmd (see --help)"
            fi ;;
    esac
done
if [ "$cmd" != start ] && { [ -n "$NODES_SET" ] || [ -n "$PLUGSTACK_SRC" ] || [ -n "$NODE_LOCAL_SET" ] \
    || [ -n "$ACCOUNTING_SET" ]; }; then
    die "--nodes, --plugstack, --node-local and --accounting only go with 'start'"
fi
case "$cmd" in
    exec)
        [ -n "$NODE" ] || die "exec needs a node: $PROG exec [--dir DIR] NODE -- CMD [ARG...]"
        [ "${#EXEC_CMD[@]}" -gt 0 ] || die "exec needs a command after '--': $PROG exec [--dir DIR] NODE -- CMD [ARG...]" ;;
    node-local-dir)
        [ -n "$NODE" ] || die "node-local-dir needs a node: $PROG node-local-dir [--dir DIR] NODE" ;;
esac
if ! [[ "$NODES" =~ ^[0-9]+$ ]] || [ "$NODES" -lt 1 ] || [ "$NODES" -gt 32 ]; then
    die "--nodes must be a number from 1 to 32, not '$NODES'"
fi
[[ "$DIR" =~ ^[A-Za-z0-9/._+-]+$ ]] \
    || die "--dir '$DIR': use only letters, digits and / . _ + - (slurm.conf takes no quoting)"
DIR="$(realpath -m -- "$DIR")"
[ "$DIR" != / ] || die "--dir must not be /"
if [ -n "$PLUGSTACK_SRC" ]; then PLUGSTACK_SRC="$(realpath -m -- "$PLUGSTACK_SRC")"; fi
if [ -n "$NODE_LOCAL_SET" ]; then
    case "$NODE_LOCAL" in
        /*) ;;
        *) die "--node-local '$NODE_LOCAL': must be an absolute path (the same on every node, like /local/scratch)" ;;
    esac
    [[ "$NODE_LOCAL" =~ ^[A-Za-z0-9/._+-]+$ ]] \
        || die "--node-local '$NODE_LOCAL': use only letters, digits and / . _ + -"
    NODE_LOCAL="$(realpath -m -- "$NODE_LOCAL")"
    [ "$NODE_LOCAL" != / ] || die "--node-local must not be /"
    case "$DIR/" in
        "$NODE_LOCAL"/*) die "--node-local $NODE_LOCAL contains --dir $DIR: on each node it would hide the cluster's own files" ;;
    esac
    case "$NODE_LOCAL/" in
        "$DIR"/*) die "--node-local $NODE_LOCAL is inside --dir $DIR: choose a path outside it ('start' wipes DIR)" ;;
    esac
fi
set_paths
# Our client calls (sinfo, squeue, scontrol) must talk to this cluster, not another one.
export SLURM_CONF="$CONF"

case "$cmd" in
    start) do_start "$NODES" "$PLUGSTACK_SRC" "$NODE_LOCAL" ;;
    stop) do_stop ;;
    status) rc=0; do_status || rc=$?; exit "$rc" ;;
    env) do_env ;;
    exec) do_exec "$NODE" "${EXEC_CMD[@]}" ;;
    node-local-dir) do_node_local_dir "$NODE" ;;
esac

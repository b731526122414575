#!/usr/bin/env bash
# Remove, by name, what runs of pdcbb's tests, benchmarks and demo leave on this machine outside
# the repository, so that the next run starts as on a fresh machine (.ci/run calls it first).
# Packages installed by scripts/install-deps.sh stay.
set -euo pipefail

PROG="test-clean.sh"
SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLUSTER_MARKER=.pdcbb-slurm-cluster   # scripts/slurm-cluster.sh marks its directories so
INSTALL_DIRS=(/opt/pdcbb)             # README's "Building by hand" install prefix

usage() {
    cat <<EOF
Usage: $PROG [--check] [--help]

Removes, by name, what pdcbb's test suite, benchmarks and demo leave on this machine outside
the repository, in this order:
  1. every local Slurm test cluster (a directory under /tmp holding $CLUSTER_MARKER,
     at any depth up to 3): stopped with 'scripts/slurm-cluster.sh stop --dir DIR';
  2. pdc_bbd daemons, munged, slurmctld, slurmd and mariadbd whose command line names a path under
     /tmp/pdcbb: killed by pid;
  3. mounts under /tmp/pdcbb*: unmounted;
  4. the test users and their homes, groups and processes (scripts/test-users.sh remove);
  5. /tmp/pdcbb and everything named /tmp/pdcbb-* (work directories, clusters, install
     prefixes, drains of the demo and of the benchmarks);
  6. installed copies: ${INSTALL_DIRS[*]};
  7. drain-failure reports in root's home (~root/pdcbb.*.FAILED).
Installed Debian packages stay. Needs root.

  --check   remove nothing: list what is there and exit 1 if anything is
  --help    this text
EOF
}

die() { echo "$PROG: error: $*" >&2; exit 1; }

check=0
case "${1:-}" in
    "") ;;
    --check) check=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "$PROG: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || die "needs root (it stops clusters and removes users)"

found=0
# act WHAT CMD...: report WHAT; unless --check, run CMD.
act() {
    local what=$1
    shift
    found=1
    if [ "$check" = 1 ]; then
        echo "$PROG: left behind: $what"
    else
        echo "$PROG: removing $what"
        "$@" || echo "$PROG: warning: could not remove $what" >&2
    fi
}

# Pids of processes whose command line names a path under /tmp/pdcbb, among the given names.
leftover_pids() {
    local pid cmd
    command -v ps >/dev/null || return 0    # no procps yet: a fresh machine
    # by name through ps: pgrep -x matches nothing with a pattern over 15 characters
    for pid in $(ps -e -o pid=,stat=,comm= |
        awk -v names=" $* " '$2 !~ /^Z/ && index(names, " " $3 " ") {print $1}'); do
        cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" || continue
        case "$cmd" in *" /tmp/pdcbb"* | *"=/tmp/pdcbb"*) echo "$pid" ;; esac
    done
    return 0
}

# 1. clusters
while IFS= read -r marker; do
    dir="$(dirname "$marker")"
    act "local Slurm cluster $dir" "$SCRIPTS_DIR/slurm-cluster.sh" stop --dir "$dir"
done < <(find /tmp -maxdepth 4 -name "$CLUSTER_MARKER" -path '/tmp/pdcbb*' 2>/dev/null)

# 2. processes
pids="$(leftover_pids pdc_bbd munged slurmctld slurmd slurmstepd mariadbd)"
if [ -n "$pids" ]; then
    act "processes $(echo $pids) ($(ps -o comm= -p "$(echo $pids | tr ' ' ,)" | sort -u | tr '\n' ' '))" \
        kill -KILL $pids
fi

# 3. mounts (deepest first)
while IFS= read -r m; do
    act "mount $m" umount -l "$m"
done < <(awk '$2 ~ "^/tmp/pdcbb" {print $2}' /proc/self/mounts | sort -r)

# 4. users
for u in $("$SCRIPTS_DIR/test-users.sh" list); do
    if getent passwd "$u" >/dev/null || getent group "$u" >/dev/null || [ -e "/home/$u" ]; then
        if [ "$check" = 1 ]; then
            act "test user $u"
        else
            found=1
            "$SCRIPTS_DIR/test-users.sh" remove | sed "s/^test-users.sh: /$PROG: /"
            break
        fi
    fi
done

# 5-7. files
for f in /tmp/pdcbb /tmp/pdcbb-* "${INSTALL_DIRS[@]}" /root/pdcbb.*.FAILED; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    act "$f" rm -rf --one-file-system "$f"
done

if [ "$found" = 0 ]; then
    echo "$PROG: nothing left behind"
elif [ "$check" = 1 ]; then
    exit 1
fi
exit 0

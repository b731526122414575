#!/usr/bin/env bash
# The test suite's two Unix users, pdcbbtest (a job's user) and pdcbbtest2 (a second, hostile
# user on the same machine): created by every test file that needs them and by
# scripts/slurm-cluster.sh, removed by scripts/test-clean.sh. This file is the one list of them.
set -euo pipefail

PROG="test-users.sh"
TEST_USERS=(pdcbbtest pdcbbtest2)

usage() {
    cat <<EOF
Usage: $PROG COMMAND

The Unix users pdcbb's end-to-end tests run jobs as: ${TEST_USERS[*]}.

Commands:
  create    create every missing one (useradd, own group, home /home/USER mode 0700,
            shell /bin/bash); existing ones are kept, their home made 0700 again.
            Prints one line per user it created. Needs root.
  remove    end every process of theirs, then remove the users, their groups and their
            homes (userdel --remove). Prints one line per user it removed. Needs root.
  list      print the names, one per line
  --help    this text

Homes are private (0700), as on a real cluster: tests check that one user's job cannot read
another's data.
EOF
}

die() { echo "$PROG: error: $*" >&2; exit 1; }

need_root() {
    [ "$(id -u)" -eq 0 ] || die "'$1' needs root (it runs useradd/userdel)"
}

do_create() {
    need_root create
    local u home
    for u in "${TEST_USERS[@]}"; do
        if ! getent passwd "$u" >/dev/null; then
            useradd --create-home --home-dir "/home/$u" --shell /bin/bash --user-group "$u" \
                || die "useradd $u failed"
            echo "$PROG: created test user $u (uid $(id -u "$u"))"
        fi
        home="$(getent passwd "$u" | cut -d: -f6)"
        [ -d "$home" ] || { mkdir -p "$home" && chown "$u:" "$home"; }
        chmod 0700 "$home"
    done
}

do_remove() {
    need_root remove
    local u i
    for u in "${TEST_USERS[@]}"; do
        getent passwd "$u" >/dev/null || continue
        # userdel refuses a user who still runs something (a daemon a test left behind)
        for i in 1 2 3 4 5 6 7 8 9 10; do
            command -v pkill >/dev/null || break    # no procps: nothing of ours runs
            pkill -KILL -u "$u" 2>/dev/null || break
            sleep 0.2
        done
        userdel --remove "$u" 2>/dev/null || userdel "$u" || die "userdel $u failed"
        rm -rf "/home/$u"
        echo "$PROG: removed test user $u"
    done
    for u in "${TEST_USERS[@]}"; do
        if getent group "$u" >/dev/null; then groupdel "$u" || die "groupdel $u failed"; fi
    done
}

case "${1:-}" in
    create) do_create ;;
    remove) do_remove ;;
    list) printf '%s\n' "${TEST_USERS[@]}" ;;
    -h | --help) usage ;;
    "") usage >&2; exit 2 ;;
    *) echo "$PROG: unknown command '$1' (see --help)" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# bench/scale.sh - the scale test bed: local jobs of 8 to 256 daemons on this one machine (one
# daemon per "node", small stores) with many client processes, and how each step grows.
#
# Per node count N, one fresh job (pdcbb run --nodes N --drain DIR), and in it:
#   start      from `pdcbb run` to the job's command (the prologs, one node after another)
#   gather     the daemons' own figure: the longest "gathered in" of their logs (TABLE_GATHER),
#              with the record reads and requests they counted (docs/INTERNALS.md)
#   creates    C client processes (--per-node on each node, up to --clients; client k on node
#              k mod N), each on its own node: one
#              container and N objects (names spread over every daemon), one tag put; the
#              time until all are done, and the creates per second of all of them
#   conns      while those clients are still connected: the most and the mean UCX
#              connections of a daemon (pdcbb stats --json)
#   msgs       requests the daemons served in all, by then
#   search     one tag search (PDC_Client_query_kvtag) from a new process (one request to its
#              node's daemon, asked
#              of the others down the tree), and its hits (must be C); "again": a second
#              one from another new process, once the daemons' connections exist
#   query      a data query (PDCquery_get_nhits) over an object of 4096 ints per daemon,
#              striped over every daemon (PDC_REGION_STATIC), from a new process, the call
#              alone: one request per daemon, or, forwarding, one GATHER to its node's daemon
#              carried down the tree (docs/PROTOCOL.md, "Fan-out"); its hits (must be 2048 N)
#   stop+drain from the command's end to `pdcbb run`'s exit: the epilogs stop the daemons and
#              drain every node
# Prints one line per N; see docs/SCALE.md for what the figures mean against the model.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
nodes_list="8 16 32 64 128 256"
clients_max=64
per_node=1

usage() {
    cat <<EOF
usage: bench/scale.sh [--nodes "LIST"] [--clients C] [--per-node K] [BUILD_DIR]

Runs the scale test bed in fresh local jobs (pdcbb run --nodes N) with
BUILD_DIR/tests/pdc_meta_tool (default BUILD_DIR: \$PDCBB_BUILD_DIR, else $repo/build).
Options:
  --nodes "LIST"  node counts, one daemon each (default "$nodes_list")
  --clients C     client processes at most (default $clients_max)
  --per-node K    client processes per node (default $per_node; at most C in all)
  -h, --help      this text
Hundreds of processes share this machine's cores: unless set, the jobs get
PDCBB_AUTH_TIMEOUT=30 and PDCBB_CONNECT_TIMEOUT=60 (a client starved of the CPU for more than
the default 1 s would have its new connection closed before it proved the job's token).
PDCBB_FORWARD=always or never decides how clients reach other nodes' daemons (default auto:
through their node's daemon above 32 daemons; docs/PROTOCOL.md, "Forwarding").
Work files go under \$TMPDIR (default /tmp) and are removed at the end.
PDCBB_BENCH_QUICK=1 makes it a smoke run: 4 daemons, 4 clients.
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        --nodes) nodes_list=$2; shift 2 ;;
        --clients) clients_max=$2; shift 2 ;;
        --per-node) per_node=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "bench/scale.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
for v in "$clients_max" "$per_node"; do
    case "$v" in ''|*[!0-9]*|0)
        echo "bench/scale.sh: --clients and --per-node want whole numbers above 0, not '$v'" >&2
        exit 2 ;;
    esac
done
for n in $nodes_list; do
    case "$n" in ''|*[!0-9]*|0|1)
        echo "bench/scale.sh: --nodes wants whole numbers above 1, not '$n'" >&2; exit 2 ;;
    esac
done
if [ "${PDCBB_BENCH_QUICK:-0}" = 1 ]; then
    # a smoke run (tests/bats/65-docs.bats): 4 daemons, 4 clients, whatever was asked
    nodes_list=4 clients_max=4
fi
build=${1:-${PDCBB_BUILD_DIR:-$repo/build}}
pdcbb=$build/cli/pdcbb
tool=$build/tests/pdc_meta_tool
for f in "$pdcbb" "$tool"; do
    [ -x "$f" ] || { echo "bench/scale.sh: missing $f: build the project first" >&2; exit 1; }
done
command -v jq >/dev/null || { echo "bench/scale.sh: needs jq" >&2; exit 1; }
export UCX_WARN_UNUSED_ENV_VARS=n
export PDCBB_AUTH_TIMEOUT=${PDCBB_AUTH_TIMEOUT:-30} PDCBB_CONNECT_TIMEOUT=${PDCBB_CONNECT_TIMEOUT:-60}
work=$(mktemp -d "${TMPDIR:-/tmp}/pdcbb-scale.XXXXXX")
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }

# The job's command: $1 nodes, $2 clients, $3 scratch directory for the figures.
job_script='
n=$1 c=$2 out=$3 tool=$4 pdcbb=$5 jobs=$6
date +%s.%N > "$out/t_cmd"
for i in $(seq 2000); do
    [ "$(ls "$jobs"/node*/pdcbb.*/job.table 2>/dev/null | wc -l)" -ge "$n" ] && break
    sleep 0.01
done
pids=()
t0=$(date +%s.%N)
for (( k = 0; k < c; k++ )); do
    node=$(( k % n ))
    ( unset PDCBB_SERVER_DIRS
      export PDCBB_JOB_DIR=$(echo "$jobs"/node$node/pdcbb.*) PDCBB_NODE_NAME=node$node
      "$tool" "cont-create c$k" "many-objs c$k o${k}_ $n" "tag-put obj o${k}_0 scale string yes" \
          "sleep 4" > "$out/client.$k" 2>&1 ) &
    pids+=($!)
done
for i in $(seq 60000); do
    [ "$(cat "$out"/client.* 2>/dev/null | grep -c "^ok tag-put")" -ge "$c" ] && break
    [ "$(jobs -r | wc -l)" -lt "$c" ] && break # a client ended early: failed
    sleep 0.01
done
t1=$(date +%s.%N)
echo "$t0 $t1" > "$out/t_creates"
"$pdcbb" stats --json > "$out/stats.json"
for p in "${pids[@]}"; do wait $p || echo "client failed" >> "$out/errors"; done
t2=$(date +%s.%N)
"$tool" "tag-count scale yes" > "$out/search" 2>&1 || echo "search failed" >> "$out/errors"
t3=$(date +%s.%N)
"$tool" "tag-count scale yes" > "$out/search2" 2>&1 || echo "second search failed" >> "$out/errors"
t4=$(date +%s.%N)
echo "$t2 $t3 $t4" > "$out/t_search"
"$tool" "cont-create q" "obj-spread q spread $(( n * 4096 ))" > "$out/spread" 2>&1 ||
    echo "the spread object failed" >> "$out/errors"
"$tool" "obj-open spread" "query-count spread $(( n * 2048 - 1 ))" > "$out/query" 2>&1 ||
    echo "query failed" >> "$out/errors"
date +%s.%N > "$out/t_end"
'

printf '%-5s %-7s %8s %8s %8s %9s %10s %9s %9s %9s %9s %8s %8s %8s %10s\n' nodes clients \
    start_s gather_s tail_ms reads_max creates_s creates/s conns_max conns_avg msgs search_ms \
    again_ms query_ms stop+drain_s
for n in $nodes_list; do
    c=$(( n * per_node < clients_max ? n * per_node : clients_max ))
    out=$work/n$n
    rm -rf "$out" "$work/job" "$work/drain"
    mkdir -p "$out" "$work/drain"
    t_start=$(now)
    if ! "$pdcbb" run --quiet --nodes "$n" --workdir "$work/job" --keep \
        --drain "$work/drain" --pdc capacity=16M -- \
        bash -c "$job_script" job "$n" "$c" "$out" "$tool" "$pdcbb" "$work/job" > "$out/run.log" 2>&1; then
        echo "bench/scale.sh: the job of $n nodes failed:" >&2
        tail -20 "$out/run.log" >&2
        exit 1
    fi
    t_exit=$(now)
    if [ -s "$out/errors" ]; then
        echo "bench/scale.sh: $n nodes: $(sort -u "$out/errors" | tr '\n' ' ')" >&2
        cat "$out"/client.* "$out/search" | grep -v "^ok" | head -5 >&2
        exit 1
    fi
    hits=$(sed -n 's/^ok tag-count n=\([0-9]*\).*/\1/p' "$out/search")
    if [ "$hits" != "$c" ]; then
        echo "bench/scale.sh: $n nodes: the tag search found ${hits:-nothing}, not $c" >&2
        exit 1
    fi
    qhits=$(sed -n 's/^ok query-count n=\([0-9]*\) .*/\1/p' "$out/query")
    if [ "$qhits" != $(( n * 2048 )) ]; then
        echo "bench/scale.sh: $n nodes: the query found ${qhits:-nothing}, not $(( n * 2048 ))" >&2
        exit 1
    fi
    gathered=$(grep -h "gathered in" "$work"/job/node*/pdcbb.*/bbd-*.log |
        sed -E 's/.*gathered in ([0-9.]+) s; ([0-9]+) record reads.*/\1 \2/')
    [ "$(wc -l <<<"$gathered")" -eq "$n" ] || {
        echo "bench/scale.sh: $n nodes: not every daemon gathered the table" >&2; exit 1; }
    # after the last daemon published itself: until every daemon has the table
    tail_ms=$(awk '/ published in / { t = $2; if (t > p) p = t }
                   / every daemon of the job found: / { t = $2; if (t > f) f = t }
                   function s(x,  a) { split(x, a, ":"); return a[1] * 3600 + a[2] * 60 + a[3] }
                   END { printf "%.1f\n", (s(f) - s(p)) * 1000 }' \
        "$work"/job/node*/pdcbb.*/bbd-*.log)
    read -r c0 c1 < "$out/t_creates"
    read -r s0 s1 s2 < "$out/t_search"
    awk -v n="$n" -v c="$c" -v ts="$t_start" -v tc="$(cat "$out/t_cmd")" \
        -v g="$(cut -d' ' -f1 <<<"$gathered" | sort -g | tail -1)" \
        -v r="$(cut -d' ' -f2 <<<"$gathered" | sort -g | tail -1)" \
        -v c0="$c0" -v c1="$c1" -v s0="$s0" -v s1="$s1" -v s2="$s2" -v tl="$tail_ms" \
        -v te="$(cat "$out/t_end")" -v tx="$t_exit" \
        -v cm="$(jq '[.daemons[].connections] | max' "$out/stats.json")" \
        -v ca="$(jq '[.daemons[].connections] | add / length' "$out/stats.json")" \
        -v m="$(jq '[.daemons[].requests] | add' "$out/stats.json")" \
        -v q="$(sed -n 's/^ok query-count .* ms=\([0-9.]*\)$/\1/p' "$out/query")" \
        'BEGIN { printf "%-5d %-7d %8.2f %8.3f %8.1f %9d %10.2f %9.0f %9d %9.1f %9d %8.1f %8.1f %8.1f %10.2f\n",
                 n, c, tc - ts, g, tl, r, c1 - c0, c * (n + 1) / (c1 - c0), cm, ca, m,
                 (s1 - s0) * 1000, (s2 - s1) * 1000, q, tx - te }'
    rm -rf "$work/job" "$work/drain"
done

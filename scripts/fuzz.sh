#!/usr/bin/env bash
# Build the libFuzzer targets of tests/fuzz (clang, -DPDCBB_FUZZ=ON, in BUILD_DIR-fuzz: default
# <repo>/build-fuzz) and run each for a bounded time on a copy of its seed corpus
# (tests/fuzz/corpus/<target>/ plus its regression inputs tests/fuzz/regress/<target>/; the tree
# is never modified). Fails on the first finding and prints the crash input's path; put that
# input into tests/fuzz/regress/<target>/ with the fix, so ctest replays it in every build.
# docs/RELIABILITY.md, "Fuzzing".
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}-fuzz"
all_targets=(proto shm jobdir kv drain_manifest kv_dump drain_files config dispatch)
seconds=20
seeds=0

usage() {
    cat <<USAGE
usage: scripts/fuzz.sh [--time SECONDS] [--seeds] [TARGET...]
  Builds the fuzz targets (clang + libFuzzer, in $build) and runs each TARGET (default: all:
  ${all_targets[*]}) for SECONDS (default $seconds) on a temporary copy of its corpus.
  Exit status 1 on a finding, with the path of the input that crashed.
  --seeds   write the seed corpora again (tests/fuzz/corpus/) with fuzz_seeds, then stop
  Longer runs: scripts/fuzz.sh --time 3600 proto
USAGE
}

targets=()
while [ $# -gt 0 ]; do
    case "$1" in
    --time) seconds="${2:?--time needs SECONDS}"; shift 2 ;;
    --time=*) seconds="${1#--time=}"; shift ;;
    --seeds) seeds=1; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
    esac
done
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --time wants whole seconds, not '$seconds'" >&2; exit 2; }
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
    [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: no target '$t' (${all_targets[*]})" >&2; exit 2; }
done

# The largest input worth trying per target (libFuzzer's -max_len): a message with a few
# arrays, a shared-memory slot's header and message, text files, a small manifest, dump or
# list of files.
max_len() {
    case "$1" in
    proto | shm | kv) echo 4096 ;;
    jobdir) echo 2048 ;;
    config) echo 4096 ;;
    drain_manifest | kv_dump | drain_files) echo 16384 ;;
    dispatch) echo 8192 ;;
    esac
}

command -v clang >/dev/null || { echo "fuzz.sh: clang not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
echo "fuzz.sh: building the fuzz targets in $build"
mkdir -p "$build"
cmake -S "$repo" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPDCBB_FUZZ=ON -DPDCBB_WITH_MPI=OFF -DPDCBB_BUILD_SPANK=OFF >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j 2 --target fuzz_targets fuzz_seeds >/dev/null

if [ "$seeds" = 1 ]; then
    rm -rf "$repo/tests/fuzz/corpus"
    mkdir -p "$repo/tests/fuzz/corpus"
    "$build/tests/fuzz/fuzz_seeds" "$repo/tests/fuzz/corpus"
    # doc_seeds DOC TARGET: each ```yaml block of DOC as a seed of TARGET (mode byte 0: a site
    # file for config, a whole manifest for drain_manifest)
    doc_seeds() {
        awk -v dir="$repo/tests/fuzz/corpus/$2" -v base="$(basename "$1" .md)" '
            /^```yaml/ { n++; f = sprintf("%s/%s-%d", dir, base, n); printf "\0" > f; on = 1; next }
            on && /^```/ { on = 0; close(f); next }
            on { print >> f }' "$1"
    }
    doc_seeds "$repo/docs/ADMIN.md" config
    doc_seeds "$repo/docs/CONFIG.md" config
    doc_seeds "$repo/docs/DRAIN-FORMAT.md" drain_manifest
    # the example list of DRAIN-FORMAT.md "Files of the mount" (its second fenced block)
    awk '/^\*\*The list of files\*\*/ {on = 1} on && /^```$/ {n++; if (n == 4) exit; next}
         on && n == 3 {print}' "$repo/docs/DRAIN-FORMAT.md" \
        >"$repo/tests/fuzz/corpus/drain_files/DRAIN-FORMAT-1"
    echo "fuzz.sh: seeds written to tests/fuzz/corpus/"
    exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/fuzz-run.XXXXXX")"
trap 'rm -rf "$work"' EXIT
failed=()
for t in "${targets[@]}"; do
    mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
    cp "$repo/tests/fuzz/corpus/$t"/* "$work/$t/corpus/"
    if [ -d "$repo/tests/fuzz/regress/$t" ]; then
        cp "$repo/tests/fuzz/regress/$t"/* "$work/$t/corpus/" 2>/dev/null || true
    fi
    echo "== fuzz $t: $seconds s, max_len $(max_len "$t")"
    # TMPDIR: the targets' own files (fuzz_target.h) go under the work directory too
    if ! (cd "$work/$t" && TMPDIR="$work/$t" \
        ASAN_OPTIONS="detect_leaks=1:abort_on_error=0" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
        "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len="$(max_len "$t")" \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$work/$t/artifacts/" corpus >"$work/$t/log" 2>&1); then
        tail -n 60 "$work/$t/log" >&2
        keep="${TMPDIR:-/tmp}/fuzz-findings-$t.$$"
        mkdir -p "$keep"
        cp "$work/$t/artifacts"/* "$keep/" 2>/dev/null || true
        cp "$work/$t/log" "$keep/log"
        echo "fuzz.sh: $t found a problem; input(s):" >&2
        ls -1 "$keep"/* | grep -v '/log$' | sed 's/^/    /' >&2
        echo "    replay: $build/tests/fuzz/fuzz_$t INPUT" >&2
        failed+=("$t")
        continue
    fi
    # libFuzzer's summary: executions, speed, coverage
    grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added)' \
        "$work/$t/log" | tr '\n' ' '
    grep -E '^#[0-9]+.*(DONE|pulse)' "$work/$t/log" | tail -n 1 | sed 's/^/    /'
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: findings in: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz.sh: no findings (${#targets[@]} targets, $seconds s each)"

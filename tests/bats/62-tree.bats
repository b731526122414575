#!/usr/bin/env bats
# The source tree keeps the shape docs/INTERNALS.md "Map of the tree" describes: every
# `#include "..."` of a directory names a header of that directory or of one its row lets it
# include, and no source file is longer than 1,200 lines unless its header comment says why it
# reads best whole ("reads best whole").

load helpers

MAP="$REPO_DIR/docs/INTERNALS.md"

# "dir may-include-dir" pairs from the map's table (one line per allowed pair; "dir -" for a
# directory that may include nothing of pdcbb).
allowed_pairs() {
    awk '/^## Map of the tree/ {on = 1; next} on && /^## / {on = 0}
         on && /^\| `[a-z_]+\/` \|/ {
             n = split($0, col, "|"); dir = col[2]; inc = col[n - 1]
             gsub(/[ `\/]/, "", dir)
             if (inc ~ /nothing of pdcbb/) { print dir, "-"; next }
             m = split(inc, parts, ",")
             for (i = 1; i <= m; i++) { d = parts[i]; gsub(/[ `\/]/, "", d); if (d != "") print dir, d }
         }' "$MAP"
}

@test "the map lists every source directory" {
    run allowed_pairs
    assert_success
    for d in common store yaml stager jobctl bbd client include cli spank_plugin bench examples; do
        echo "$output" | grep -q "^$d " || fail "docs/INTERNALS.md's map has no row for $d/"
    done
}

@test "every include points down the map" {
    pairs="$(allowed_pairs)"
    # Which directory each project header lives in.
    declare -A home
    for h in "$REPO_DIR"/{common,store,yaml,stager,jobctl,bbd,client,include,cli,spank_plugin,bench,examples}/*.h \
             "$REPO_DIR"/include/*.h.in; do
        [ -e "$h" ] || continue
        b="$(basename "$h" .in)"
        home[$b]="$(basename "$(dirname "$h")")"
    done
    [ "${#home[@]}" -gt 30 ] || fail "found only ${#home[@]} headers"
    bad=""
    checked=0
    for dir in common store yaml stager jobctl bbd client cli spank_plugin bench examples; do
        for f in "$REPO_DIR/$dir"/*.[ch]; do
            [ -e "$f" ] || continue
            while read -r inc; do
                h="$(basename "$inc")"
                to="${home[$h]:-}"
                [ -n "$to" ] || continue # a system or generated header
                checked=$((checked + 1))
                [ "$to" = "$dir" ] && continue
                grep -qx "$dir $to" <<< "$pairs" ||
                    bad+="$dir/$(basename "$f") includes $to/$h"$'\n'
            done < <(sed -n 's/^#include "\(.*\)".*/\1/p' "$f")
        done
    done
    [ "$checked" -gt 300 ] || fail "checked only $checked includes"
    [ -z "$bad" ] || fail "includes the map does not allow:"$'\n'"$bad"
}

@test "no source file over 1,200 lines unless it says why" {
    long=""
    while read -r n f; do
        [ "$f" = total ] && continue
        [ "$n" -le 1200 ] && continue
        head -40 "$REPO_DIR/$f" | grep -q "reads best whole" || long+="$f: $n lines"$'\n'
    done < <(cd "$REPO_DIR" && git ls-files -- '*.c' '*.h' '*.h.in' | grep -v '^tests/' | xargs wc -l)
    [ -z "$long" ] || fail "files over 1,200 lines without a reason at the top:"$'\n'"$long"
}

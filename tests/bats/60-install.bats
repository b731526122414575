#!/usr/bin/env bats
# `cmake --install` gives applications what PDC's own install gives them: pdc.h, a versioned
# libpdc.so, pdc.pc and a CMake package; an application built against the installed tree with
# either runs in a local job.

load helpers
use_install_prefix

# The helpers of PDC's commons that libpdc exports for PDC programs (string_utils.h,
# query_utils.h, timer_utils.h), by exact name; get_key, get_value and
# PDC_get_elapsed_time_double are covered by the get_ and PDC prefixes.
PDC_HELPERS='substr|subrstr|substring|determine_pattern_type|indexOfStr|indexOf|startsWith'
PDC_HELPERS+='|endsWith|contains|equals|dsprintf|println|stderr_println|simple_matches'
PDC_HELPERS+='|reverse_str|split_string|gen_random_strings'
PDC_HELPERS+='|gen_query_key_value|gen_query_str|free_query_output|gen_tags_in_loop|gen_tags'
PDC_HELPERS+='|k_v_matches_p|has_tag|has_tag_p|is_value_match|is_value_match_p|is_value_in_range'
PDC_HELPERS+='|timer_us_timestamp|timer_ms_timestamp|timer_s_timestamp|timer_start|timer_pause'
PDC_HELPERS+='|timer_unpause|timer_delta_us|timer_delta_ms|timer_delta_s|timer_delta_m|timer_delta_h'

setup() {
    setup_workdir
}

teardown() {
    cleanup_workdir
}

@test "install puts headers, a versioned library, pdc.pc, the CMake package and the programs" {
    [ -f "$PREFIX/include/pdc.h" ]
    [ -f "$PREFIX/include/pdc_client_connect.h" ]
    [ -f "$PREFIX/include/pdc_timing.h" ]
    # the other names PDC programs include beside pdc.h
    for h in pdc_logger.h pdc_query.h pdc_client_server_common.h string_utils.h query_utils.h \
        timer_utils.h; do
        [ -f "$PREFIX/include/$h" ]
    done
    lib="$(ls "$PREFIX"/lib*/libpdc.so.*.*.* | head -1)"
    [ -f "$lib" ]
    [ -L "$(dirname "$lib")/libpdc.so" ]
    [ -L "$(dirname "$lib")/libpdc.so.0" ]
    [ -f "$(dirname "$lib")/pkgconfig/pdc.pc" ]
    [ -f "$(dirname "$lib")/cmake/pdc/pdcConfig.cmake" ]
    [ -x "$PREFIX/bin/pdcbb" ]
    [ -x "$PREFIX/sbin/pdc_bbd" ]
    # Only the API leaves the library: no internal symbol is exported.
    run bash -c "nm -D --defined-only '$lib' | awk '{print \$3}' | grep -v -E '^(PDC|pdc_|PDCbb_|check_overlap|memcpy_|detect_region|get_|setLogFile$|setLogLevel$|log_message$|($PDC_HELPERS)$|_init|_fini|_edata|_end|__bss)' || true"
    assert_output ""
}

@test "the library itself never calls PDC's helpers, so an application's own equals is no harm" {
    lib="$(ls "$PREFIX"/lib*/libpdc.so.*.*.* | head -1)"
    # sanity: the helpers are exported
    nm -D --defined-only "$lib" | awk '{print $3}' | grep -qx equals
    # A call or an address taken through the dynamic linker needs a relocation naming it.
    run bash -c "readelf -rW '$lib' | awk '{print \$5}' | grep -x -E '$PDC_HELPERS|get_key|get_value|PDC_get_elapsed_time_double' || true"
    assert_output ""
}

@test "every function an installed header declares is defined by the installed library" {
    lib="$(ls "$PREFIX"/lib*/libpdc.so.*.*.* | head -1)"
    # Every PDC_EXPORT declaration of every installed header, whatever it spans.
    perl -0777 -ne 'while (/^PDC_EXPORT\s[^;{(]*?(\w+)\s*\(/mg) { print "$1\n" }' \
        "$PREFIX"/include/*.h | sort -u >"$WORKDIR/declared"
    nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | sort -u >"$WORKDIR/defined"
    # sanity: the scan sees the API (PDC has well over 100 functions) and the library exports it
    [ "$(wc -l <"$WORKDIR/declared")" -ge 100 ]
    grep -qx PDCinit "$WORKDIR/declared"
    grep -qx PDCinit "$WORKDIR/defined"
    run comm -23 "$WORKDIR/declared" "$WORKDIR/defined"
    echo "declared but not defined: $output"
    assert_output ""
}

@test "an application builds with pkg-config against the installed tree and runs in a job" {
    export PKG_CONFIG_PATH="$(dirname "$(ls "$PREFIX"/lib*/pkgconfig/pdc.pc)")"
    run pkg-config --cflags --libs pdc
    assert_success
    assert_output --partial "-lpdc"
    # pdc.pc carries an rpath to the prefix's libdir: no -Wl,-rpath and no LD_LIBRARY_PATH needed.
    assert_output --partial "-Wl,-rpath,"
    # shellcheck disable=SC2046
    cc -o "$WORKDIR/app" "$REPO_DIR/examples/pdc_demo.c" $(pkg-config --cflags --libs pdc)
    run bash -c "readelf -d '$WORKDIR/app' | grep -E 'RUNPATH|RPATH'"
    assert_output --partial "$PREFIX/"
    run env -u LD_LIBRARY_PATH "$PREFIX/bin/pdcbb" run --nodes 2 --workdir "$WORKDIR/job" -- "$WORKDIR/app"
    assert_success
    assert_output --partial "demo done"
    assert_no_daemons "$WORKDIR"
}

@test "a program written like PDC's examples builds unchanged against the installed headers and runs" {
    export PKG_CONFIG_PATH="$(dirname "$(ls "$PREFIX"/lib*/pkgconfig/pdc.pc)")"
    # shellcheck disable=SC2046
    cc -Wall -Werror -o "$WORKDIR/style" "$REPO_DIR/tests/apps/pdc_style.c" $(pkg-config --cflags --libs pdc)
    run env -u LD_LIBRARY_PATH "$PREFIX/bin/pdcbb" run --nodes 2 --workdir "$WORKDIR/job" -- \
        "$WORKDIR/style" "$WORKDIR/info.log"
    echo "$output"
    assert_success
    assert_output --partial "deleted tag: value NULL size 0"
    assert_output --partial "containers: 1"
    assert_output --regexp "\[WARNING\] \[pdc_style.c:main:[0-9]+\] a warning on stdout"
    refute_output --partial "dropped"
    # counted between PDC_timing_init and PDC_timing_finalize: the reopen, not the close after
    assert_output --regexp "style OBJ_OPEN +1 calls"
    # PDC's commons helpers: gen_random_strings, println, the stopwatch, PDC_get_elapsed_time_double
    assert_output --partial "random strings: 8 of 5 to 12 letters a-z: yes"
    assert_output --partial "stopwatch agrees: yes"
    assert_output --regexp "done in [0-9]+\.[0-9]{3} s"
    run cat "$WORKDIR/info.log"
    assert_output --regexp "^\[[0-9-]+ [0-9:]+\.[0-9]{6}\] \[INFO\] \[pdc_style.c:main:[0-9]+\] to the file: info$"
    assert_no_daemons "$WORKDIR"
}

@test "an application builds with find_package(pdc)" {
    mkdir -p "$WORKDIR/src"
    cp "$REPO_DIR/examples/pdc_demo.c" "$WORKDIR/src/"
    cat > "$WORKDIR/src/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(app C)
find_package(pdc 0.1 REQUIRED)
add_executable(app pdc_demo.c)
target_link_libraries(app PRIVATE pdc::pdc)
CM
    run cmake -S "$WORKDIR/src" -B "$WORKDIR/b" -DCMAKE_PREFIX_PATH="$PREFIX"
    assert_success
    run cmake --build "$WORKDIR/b"
    assert_success
    run "$PREFIX/bin/pdcbb" run --nodes 1 --workdir "$WORKDIR/job" -- "$WORKDIR/b/app"
    assert_success
    assert_output --partial "demo done"
}

# The roff text of a manual page with its escapes undone: what a reader sees, unwrapped.
man_source_text() {
    sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\&//g' "$1"
}

@test "man pages are installed under share/man and read with man, without warnings" {
    for page in pdcbb:1 pdc_bbd:8 spank_pdc:8; do
        name="${page%%:*}" section="${page##*:}"
        [ -f "$PREFIX/share/man/man$section/$name.$section" ]
        run env MANPATH="$PREFIX/share/man" man -w "$name"
        assert_success
        assert_output "$PREFIX/share/man/man$section/$name.$section"
        run env MANPATH="$PREFIX/share/man" MANWIDTH=80 man -P cat "$name"
        assert_success
        assert_output --partial "$name - "
        assert_output --partial "pdcbb $(sed -n 's/^project(pdcbb VERSION \([0-9.]*\).*/\1/p' "$REPO_DIR/CMakeLists.txt")"
        # No groff or man warning (bad requests, lines that cannot be broken, ...).
        run bash -c "MANPATH='$PREFIX/share/man' MANWIDTH=80 man --warnings '$name' 2>&1 >/dev/null"
        assert_output ""
    done
    # Nothing stale: no pointer to documents that are not part of pdcbb.
    run grep -l -E 'will join this list|DESIGN\.md|pdcbb\(7\)' "$PREFIX"/share/man/man*/*
    assert_failure
}

@test "pdcbb(1) documents every command and every option that pdcbb --help lists" {
    page="$PREFIX/share/man/man1/pdcbb.1"
    text="$(man_source_text "$page")"
    commands="$("$PREFIX/bin/pdcbb" --help | awk '/Commands:/ {on=1; next} on && /^  [a-z]/ {print $1}')"
    [ -n "$commands" ]
    for cmd in $commands; do
        # Each command has its own subsection, which names every option of its --help.
        section="$(printf '%s\n' "$text" | awk -v c="$cmd" '
            /^\.SS / {on = index($0, "\"pdcbb " c " ") == 5}
            /^\.SH / {on = 0}
            on')"
        [ -n "$section" ] || { echo "pdcbb.1 has no section for 'pdcbb $cmd'" >&2; return 1; }
        options="$("$PREFIX/bin/pdcbb" "$cmd" --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' | grep -oE -- '--?[a-zA-Z][a-z-]*')"
        [ -n "$options" ]
        for opt in $options; do
            printf '%s\n' "$section" | grep -q -- "$opt" ||
                { echo "pdcbb.1: 'pdcbb $cmd' does not document $opt" >&2; return 1; }
        done
    done
    for opt in --help --version -V; do
        printf '%s\n' "$text" | grep -q -- "$opt" || { echo "pdcbb.1 lacks $opt" >&2; return 1; }
    done
}

@test "pdc_bbd(8) documents every option that pdc_bbd --help lists" {
    text="$(man_source_text "$PREFIX/share/man/man8/pdc_bbd.8")"
    options="$("$PREFIX/sbin/pdc_bbd" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u)"
    [ -n "$options" ]
    for opt in $options; do
        printf '%s\n' "$text" | grep -q -- "^$opt" ||
            { echo "pdc_bbd.8 has no paragraph for $opt" >&2; return 1; }
    done
}

@test "configuring without a dependency stops with the Debian package to install" {
    # An empty pkg-config search path: every pkg-config module is missing.
    run env PKG_CONFIG_LIBDIR="$WORKDIR/empty" PKG_CONFIG_PATH= \
        cmake -S "$REPO_DIR" -B "$WORKDIR/b"
    assert_failure
    assert_output --partial "pkg-config module 'ucx' not found: install the Debian package 'libucx-dev'"
}

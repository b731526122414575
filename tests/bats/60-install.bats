#!/usr/bin/env bats
# `cmake --install` gives applications what PDC's own install gives them: pdc.h, a versioned
# libpdc.so, pdc.pc and a CMake package; an application built against the installed tree with
# either runs in a local job.

load helpers

setup_file() {
    export PREFIX="$(mktemp -d "${BATS_TMPDIR:-/tmp}/pdcbb-prefix.XXXXXX")"
    cmake --install "$BUILD_DIR" --prefix "$PREFIX" > "$PREFIX.log" 2>&1
}

teardown_file() {
    rm -rf "$PREFIX" "$PREFIX.log"
}

setup() {
    require_build
    make_workdir
}

teardown() {
    cleanup_workdir
}

@test "install puts headers, a versioned library, pdc.pc, the CMake package and the programs" {
    [ -f "$PREFIX/include/pdc.h" ]
    [ -f "$PREFIX/include/pdc_client_connect.h" ]
    [ -f "$PREFIX/include/pdc_timing.h" ]
    lib="$(ls "$PREFIX"/lib*/libpdc.so.*.*.* | head -1)"
    [ -f "$lib" ]
    [ -L "$(dirname "$lib")/libpdc.so" ]
    [ -L "$(dirname "$lib")/libpdc.so.0" ]
    [ -f "$(dirname "$lib")/pkgconfig/pdc.pc" ]
    [ -f "$(dirname "$lib")/cmake/pdc/pdcConfig.cmake" ]
    [ -x "$PREFIX/bin/pdcbb" ]
    [ -x "$PREFIX/sbin/pdc_bbd" ]
    # Only the API leaves the library: no internal symbol is exported.
    run bash -c "nm -D --defined-only '$lib' | awk '{print \$3}' | grep -v -E '^(PDC|pdc_|PDCbb_|check_overlap|memcpy_|detect_region|get_|_init|_fini|_edata|_end|__bss)' || true"
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

@test "configuring without a dependency stops with the Debian package to install" {
    # An empty pkg-config search path: every pkg-config module is missing.
    run env PKG_CONFIG_LIBDIR="$WORKDIR/empty" PKG_CONFIG_PATH= \
        cmake -S "$REPO_DIR" -B "$WORKDIR/b"
    assert_failure
    assert_output --partial "pkg-config module 'ucx' not found: install the Debian package 'libucx-dev'"
}

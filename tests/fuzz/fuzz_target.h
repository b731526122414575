/*
 * fuzz_target.h - what every fuzz target of tests/fuzz/ shares.
 *
 * A target is one .c file defining LLVMFuzzerTestOneInput, which feeds one input to a real
 * decoder of the product (linked from the project's libraries) and aborts when a property the
 * decoder promises does not hold. The same file builds two ways (tests/fuzz/CMakeLists.txt):
 * with clang's libFuzzer (-DPDCBB_FUZZ=ON, scripts/fuzz.sh), and in every normal build with
 * fuzz_replay.c's main(), which runs the files of the corpus and regression directories once
 * (ctest), so an input that once crashed keeps being run.
 *
 * Called from one thread (libFuzzer's, or the replay's).
 */
#ifndef FUZZ_TARGET_H
#define FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pdcbb_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Abort (a finding) with a message when a promise of the decoder is broken. */
#define FUZZ_REQUIRE(cond)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: fuzz property broken: %s\n", __FILE__, __LINE__, #cond);       \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/*
 * A directory of this process for the files a target hands to a reader that takes a path:
 * created on first use under $TMPDIR (default /tmp) as fuzz-<pid>.XXXXXX, removed with its
 * files at exit. Never NULL (aborts if it cannot be created).
 */
const char *fuzz_dir(void);
/* Write size bytes to <fuzz_dir()>/name (replacing it); the path into path (len bytes).
 * Aborts on failure: the machine, not the input, is at fault. */
void fuzz_write_file(const char *name, const void *data, size_t size, char *path, size_t len);
/* A NUL-terminated copy of data (malloc'ed, the caller frees). */
char *fuzz_strndup(const uint8_t *data, size_t size);

#endif

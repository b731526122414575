/*
 * pdcbb_grow.h - room for one more element in a malloc'ed array that doubles as it fills.
 *
 * The daemon, the client, the stager and the job control collect results of unknown count
 * (cursor walks, directory scans, I/O runs) into such arrays; this is their one growth step.
 * Threads: pure, no global state.
 */
#ifndef PDCBB_GROW_H
#define PDCBB_GROW_H

#include <stdlib.h>

/*
 * Room for element n of the array v (capacity *cap elements of elem bytes; v may be NULL with
 * *cap 0): v itself while n < *cap, else v realloc'ed to twice *cap (first when *cap is 0) and
 * *cap updated. Returns NULL when out of memory: v and *cap are unchanged, v still the caller's.
 */
static inline void *pdcbb_grow(void *v, size_t n, size_t *cap, size_t elem, size_t first)
{
    if (n < *cap)
        return v;
    size_t ncap = *cap ? 2 * *cap : first;
    void *g = realloc(v, ncap * elem);
    if (g != NULL)
        *cap = ncap;
    return g;
}

#endif

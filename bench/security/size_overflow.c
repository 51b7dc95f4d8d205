/* Requests whose size cannot be met: calloc and reallocarray whose count
 * times size overflows (a block smaller than asked for would be the bug),
 * realloc of a block to nearly SIZE_MAX bytes, malloc of SIZE_MAX - 1 and of
 * PTRDIFF_MAX + 1 bytes (more than an object may have). Caught when the
 * allocator returns NULL (or stops the program).
 *
 *   hh-probe-size-overflow --list | NAME [SIZE] */
#include <stdint.h>
#include <stdlib.h>

#include "probe.h"

/* A count that makes count * SIZE overflow size_t. */
static size_t overflowing_count(size_t size) { return SIZE_MAX / size + 2; }

static void expect_null(void *block, const char *how) {
    if (block == NULL) probe_caught(how);
    probe_not_caught();
}

static void calloc_count(size_t size) {
    expect_null(probe_calloc(overflowing_count(size), size), "calloc returned NULL");
}

static void reallocarray_count(size_t size) {
    void *block = probe_block(size);
    expect_null(reallocarray(block, overflowing_count(size), size), "reallocarray returned NULL");
}

static void realloc_to_max(size_t size) {
    void *block = probe_block(size);
    expect_null(probe_realloc(block, SIZE_MAX - size), "realloc returned NULL");
}

static void malloc_max(size_t size) {
    (void)size;
    expect_null(probe_malloc(SIZE_MAX - 1), "malloc returned NULL");
}

static void malloc_past_ptrdiff(size_t size) {
    (void)size;
    expect_null(probe_malloc((size_t)PTRDIFF_MAX + 1), "malloc returned NULL");
}

static const probe probes[] = {
    {"calloc-count", "size overflow", true, calloc_count},
    {"reallocarray-count", "size overflow", true, reallocarray_count},
    {"realloc-to-max", "size overflow", true, realloc_to_max},
    {"malloc-max", "size overflow", false, malloc_max},
    {"malloc-past-ptrdiff", "size overflow", false, malloc_past_ptrdiff},
};

int main(int argc, char **argv) { return probe_main(argc, argv, probes, PROBE_COUNT(probes)); }

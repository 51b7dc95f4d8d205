/* Freed memory handed out again at once: a freed block returned by the next
 * malloc of its size, or of half its size, and realloc to twice the size
 * growing the block where it lies. An allocator that delays reuse makes a
 * use after free harder to aim; caught when it does not reuse at once.
 *
 *   hh-probe-reuse --list | NAME SIZE */
#include <stdio.h>
#include <stdlib.h>

#include "probe.h"

/* Frees a block of SIZE bytes and allocates NEXT bytes: caught unless the
 * new block is the freed one. */
static void next_malloc(size_t size, size_t next) {
    void *block = probe_block(size);
    probe_free(block);
    void *again = probe_block(next);
    if (again == block) probe_not_caught();
    probe_caught("the next block is not the freed one");
}

static void same_size(size_t size) { next_malloc(size, size); }
static void half_size(size_t size) { next_malloc(size, size / 2 > 0 ? size / 2 : 1); }

static void realloc_in_place(size_t size) {
    void *block = probe_block(size);
    void *grown = probe_realloc(block, 2 * size);
    if (grown == NULL) {
        fprintf(stderr, "probe: realloc to %zu bytes returned NULL\n", 2 * size);
        exit(PROBE_ERROR);
    }
    if (grown == block) probe_not_caught();
    probe_caught("realloc moved the block");
}

static const probe probes[] = {
    {"same-size", "immediate reuse", true, same_size},
    {"half-size", "immediate reuse", true, half_size},
    {"realloc-in-place", "immediate reuse", true, realloc_in_place},
};

int main(int argc, char **argv) { return probe_main(argc, argv, probes, PROBE_COUNT(probes)); }

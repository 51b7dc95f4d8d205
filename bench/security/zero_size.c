/* Blocks of zero bytes: malloc(0) returns a unique pointer (or NULL); reading
 * or writing its first byte is out of bounds, alone or followed by a free
 * (where an allocator that guards its headers would notice). A NULL from
 * malloc(0) counts as caught, as in mimalloc-bench.
 *
 *   hh-probe-zero-size --list | NAME */
#include <stdio.h>

#include "probe.h"

static char *zero_block(void) {
    char *block = probe_malloc(0);
    if (block == NULL) probe_caught("malloc(0) returned NULL");
    return block;
}

static void read_byte(size_t size) {
    (void)size;
    char *block = zero_block();
    printf("%d\n", ((volatile char *)block)[0]);
    probe_not_caught();
}

static void write_byte(size_t size) {
    (void)size;
    char *block = zero_block();
    ((volatile char *)block)[0] = 'A';
    probe_not_caught();
}

static void read_then_free(size_t size) {
    (void)size;
    char *block = zero_block();
    printf("%d\n", ((volatile char *)block)[0]);
    probe_free(block);
    probe_not_caught();
}

static void write_then_free(size_t size) {
    (void)size;
    char *block = zero_block();
    ((volatile char *)block)[0] = 'A';
    probe_free(block);
    probe_not_caught();
}

static const probe probes[] = {
    {"read", "zero-size block", false, read_byte},
    {"write", "zero-size block", false, write_byte},
    {"read-then-free", "zero-size block", false, read_then_free},
    {"write-then-free", "zero-size block", false, write_then_free},
};

int main(int argc, char **argv) { return probe_main(argc, argv, probes, PROBE_COUNT(probes)); }

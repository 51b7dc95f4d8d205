/* The allocator's fast paths, for an instruction counter: bench/fastpath.py
 * runs this under callgrind at two values of STEPS and divides the difference
 * in instructions spent inside malloc and free by the difference in calls.
 *
 *   hh-micro-fastpath same STEPS [SIZE]   malloc(SIZE), then free of that block,
 *                                         STEPS times (default SIZE 32): the
 *                                         freed block is the next one handed out;
 *                                         16 blocks of SIZE stay live throughout,
 *                                         so that no free empties the page (an
 *                                         allocator's slow path for that would
 *                                         be counted at every free otherwise)
 *   hh-micro-fastpath window STEPS        hh-micro-churn's pattern: a window of
 *                                         65536 blocks of 16-512 bytes, filled
 *                                         first; then per step one freed at a
 *                                         random slot and one allocated there
 *
 * Every malloc and free goes through fastpath_malloc and fastpath_free, which
 * do nothing but the call (never a tail jump: this file is compiled with
 * -fno-optimize-sibling-calls), so the counter reads the cost of one call edge
 * of a known name whatever the allocator calls its functions. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arguments.h"
#include "random.h"

enum { WINDOW = 1 << 16, SAME_LIVE = 16 };

__attribute__((noinline)) void *fastpath_malloc(size_t size) { return malloc(size); }

__attribute__((noinline)) void fastpath_free(void *block) { free(block); }

static void same_block(long steps, size_t size) {
    char *live[SAME_LIVE];
    for (size_t s = 0; s < SAME_LIVE; s++) live[s] = fastpath_malloc(size);
    for (long i = 0; i < steps; i++) {
        char *block = fastpath_malloc(size);
        block[0] = (char)i;
        fastpath_free(block);
    }
    for (size_t s = 0; s < SAME_LIVE; s++) fastpath_free(live[s]);
}

static void window(long steps) {
    static char *slots[WINDOW];
    uint64_t state = micro_seed(1);
    for (size_t s = 0; s < WINDOW; s++) slots[s] = fastpath_malloc(16 + s % 497);
    for (long i = 0; i < steps; i++) {
        uint64_t r = micro_random(&state);
        size_t slot = r % WINDOW;
        fastpath_free(slots[slot]);
        slots[slot] = fastpath_malloc(16 + (r >> 32) % 497);
        slots[slot][0] = (char)i;
    }
    for (size_t s = 0; s < WINDOW; s++) fastpath_free(slots[s]);
}

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    const char *pattern = argc > 1 ? argv[1] : "";
    long steps = micro_number(argc, argv, 2, "STEPS", 1000000, 0, 1L << 40);
    if (strcmp(pattern, "same") == 0) {
        same_block(steps, (size_t)micro_number(argc, argv, 3, "SIZE", 32, 1, 1L << 30));
    } else if (strcmp(pattern, "window") == 0 && argc <= 3) {
        window(steps);
    } else {
        fprintf(stderr, "usage: hh-micro-fastpath same STEPS [SIZE] | window STEPS\n");
        return 2;
    }
    puts("done");
    return 0;
}

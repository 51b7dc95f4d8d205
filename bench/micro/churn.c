/* Small-object churn: a window of live blocks of solver-like sizes (16-512
 * bytes, as clauses and watch lists, by default), one freed and one
 * allocated per step.  The working set is small: this measures allocator
 * speed, not the TLB.  Other sizes and a smaller window (MIN MAX WINDOW:
 * 1025 4096 4096 churns buffers of 1-4 KiB in a 10 MiB heap) ask other
 * paths of the allocator.
 *
 *   hh-micro-churn [STEPS [MIN [MAX [WINDOW]]]] | @FILE   defaults: 50 million,
 *                                                       16 512 65536 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arguments.h"

enum { WINDOW_MAX = 1 << 16 };

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    long steps = micro_number(argc, argv, 1, "STEPS", 50000000, 0, 1L << 40);
    size_t min = (size_t)micro_number(argc, argv, 2, "MIN", 16, 1, 1L << 30);
    size_t max = (size_t)micro_number(argc, argv, 3, "MAX", 512, 1, 1L << 30);
    size_t slots = (size_t)micro_number(argc, argv, 4, "WINDOW", WINDOW_MAX, 1, WINDOW_MAX);
    if (max < min) {
        fprintf(stderr, "%s: MAX (%zu) must not be below MIN (%zu)\n", argv[0], max, min);
        return 2;
    }
    static char *window[WINDOW_MAX];
    uint64_t x = 88172645463325252ull, sum = 0;
    for (long i = 0; i < steps; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t slot = x % slots;
        free(window[slot]);
        size_t size = min + (x >> 32) % (max - min + 1);
        window[slot] = malloc(size);
        window[slot][0] = (char)i;
        char *other = window[(slot * 7) % slots];
        sum += other != NULL && other[0] != 0;
    }
    for (size_t i = 0; i < slots; i++) free(window[i]);
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}

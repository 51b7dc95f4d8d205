/* Small-object churn: a window of live blocks of solver-like sizes (16-512
 * bytes, as clauses and watch lists, by default), one freed and one
 * allocated per step.  The working set is small: this measures allocator
 * speed, not the TLB.  Other sizes and a smaller window (MIN MAX WINDOW:
 * 1025 4096 4096 churns buffers of 1-4 KiB in a 10 MiB heap) ask other
 * paths of the allocator.
 *
 *   hh-micro-churn [STEPS [MIN MAX [WINDOW]]] | @FILE   defaults: 50 million,
 *                                                       16 512 65536 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arguments.h"

enum { WINDOW_MAX = 1 << 16 };

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    long steps = argc > 1 ? atol(argv[1]) : 50000000L;
    size_t min = argc > 3 ? strtoul(argv[2], NULL, 10) : 16;
    size_t max = argc > 3 ? strtoul(argv[3], NULL, 10) : 512;
    size_t slots = argc > 4 ? strtoul(argv[4], NULL, 10) : WINDOW_MAX;
    if (steps < 0 || min == 0 || max < min || slots == 0 || slots > WINDOW_MAX) {
        fprintf(stderr,
                "hh-micro-churn: expected STEPS >= 0, 0 < MIN <= MAX and 0 < WINDOW <= %d\n",
                WINDOW_MAX);
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

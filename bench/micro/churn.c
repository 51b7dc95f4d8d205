/* Small-object churn: a window of live blocks of solver-like sizes (16-512
 * bytes, as clauses and watch lists), one freed and one allocated per step.
 * The working set is small: this measures allocator speed, not the TLB.
 *
 *   hh-micro-churn [STEPS] | @FILE default 50 million */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arguments.h"

enum { WINDOW = 1 << 16 };

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    long steps = argc > 1 ? atol(argv[1]) : 50000000L;
    static char *window[WINDOW];
    uint64_t x = 88172645463325252ull, sum = 0;
    for (long i = 0; i < steps; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t slot = x % WINDOW;
        free(window[slot]);
        size_t size = 16 + (x >> 32) % 497;
        window[slot] = malloc(size);
        window[slot][0] = (char)i;
        char *other = window[(slot * 7) % WINDOW];
        sum += other != NULL && other[0] != 0;
    }
    for (size_t i = 0; i < WINDOW; i++) free(window[i]);
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}

/* Random sizes from 4 bytes to 32 KiB in several threads, the distribution of
 * glibc's malloc benchmark (benchtests/bench-malloc-thread): each thread owns
 * a working set of 1024 slots and, STEPS times, frees the block at a random
 * slot and allocates one in its place whose size is drawn with density
 * proportional to 1/size^2 (most blocks are small, a few reach 32 KiB). The
 * blocks are not written: this measures the allocator alone. A fixed number
 * of steps (glibc's runs for a fixed time) makes the time the figure.
 *
 *   hh-micro-sizes [THREADS [STEPS]] | @FILE   default 4 threads, 20 million steps each */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "arguments.h"
#include "random.h"
#include "threads.h"

enum { WORKING_SET = 1024, MIN_SIZE = 4, MAX_SIZE = 32768, SIZE_TABLE = 8192 };

/* Sizes drawn once, ahead of the timed loop (a draw costs a division). */
static unsigned size_table[SIZE_TABLE];

/* The inverse of the 1/size^2 distribution's cumulative function on
 * [MIN_SIZE, MAX_SIZE] at u in [0, 1). */
static unsigned inverse_square_size(double u) {
    const double lo = 1.0 / MIN_SIZE, hi = 1.0 / MAX_SIZE;
    return (unsigned)(1.0 / (lo + u * (hi - lo)));
}

typedef struct worker {
    long steps;
    uint64_t seed;
    uint64_t allocated; /* bytes asked for, printed so the work is visible */
} worker;

static void *churn_sizes(void *arg) {
    worker *w = arg;
    void *slots[WORKING_SET] = {0};
    uint64_t state = w->seed, allocated = 0;
    for (long i = 0; i < w->steps; i++) {
        uint64_t r = micro_random(&state);
        size_t slot = r % WORKING_SET;
        size_t size = size_table[(r >> 32) % SIZE_TABLE];
        free(slots[slot]);
        slots[slot] = malloc(size);
        if (slots[slot] == NULL) {
            fprintf(stderr, "hh-micro-sizes: malloc(%zu) failed\n", size);
            exit(1);
        }
        allocated += size;
    }
    for (size_t s = 0; s < WORKING_SET; s++) free(slots[s]);
    w->allocated = allocated;
    return NULL;
}

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    long threads = micro_number(argc, argv, 1, "THREADS", 4, 1, 256);
    long steps = micro_number(argc, argv, 2, "STEPS", 20000000, 1, 1L << 40);
    uint64_t state = micro_seed(88);
    for (size_t i = 0; i < SIZE_TABLE; i++)
        size_table[i] = inverse_square_size((double)(micro_random(&state) >> 11) * 0x1p-53);
    worker *workers = calloc((size_t)threads, sizeof *workers);
    for (long i = 0; i < threads; i++) workers[i] = (worker){steps, micro_seed((uint64_t)i), 0};
    micro_run_threads(argv[0], threads, churn_sizes, workers, sizeof *workers);
    uint64_t allocated = 0;
    for (long i = 0; i < threads; i++) allocated += workers[i].allocated;
    free(workers);
    printf("%llu bytes allocated\n", (unsigned long long)allocated);
    return 0;
}

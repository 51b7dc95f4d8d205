/* Vectors that grow by realloc, as minisat's do: each of THREADS threads owns
 * VECTORS vectors of 8-byte elements and, STEPS times, pushes an element onto
 * a random one, growing it by half its capacity (from 2) with realloc when
 * full; a vector past MAX elements is freed and starts again.  The allocator
 * sees realloc from NULL and realloc to a size about 1.5 times the last, as
 * a SAT solver's watch and occurrence lists make them.
 *
 *   hh-micro-vectors [THREADS [STEPS [VECTORS [MAX]]]] | @FILE
 *                    default 1 thread, 20 million steps, 2000 vectors, 400 elements */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "arguments.h"
#include "random.h"
#include "threads.h"

typedef struct vectors {
    uint64_t **data;
    uint32_t *length, *capacity;
    long count, steps, max;
    uint64_t seed;
    uint64_t checksum; /* of elements read back, so that no write can be left out */
} vectors;

static void *push_elements(void *arg) {
    vectors *v = arg;
    uint64_t state = v->seed, checksum = 0;
    for (long i = 0; i < v->steps; i++) {
        size_t k = micro_random_below(&state, (uint64_t)v->count);
        if (v->length[k] == v->max) {
            checksum += v->data[k][v->length[k] - 1];
            free(v->data[k]);
            v->data[k] = NULL;
            v->length[k] = v->capacity[k] = 0;
        }
        if (v->length[k] == v->capacity[k]) {
            uint32_t grown = v->capacity[k] < 2 ? 2 : v->capacity[k] + v->capacity[k] / 2;
            uint64_t *data = realloc(v->data[k], (size_t)grown * sizeof *data);
            if (data == NULL) {
                fprintf(stderr, "hh-micro-vectors: realloc to %u elements failed\n", grown);
                exit(1);
            }
            v->data[k] = data;
            v->capacity[k] = grown;
        }
        v->data[k][v->length[k]++] = (uint64_t)i;
    }
    for (long k = 0; k < v->count; k++) free(v->data[k]);
    v->checksum = checksum;
    return NULL;
}

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    long threads = micro_number(argc, argv, 1, "THREADS", 1, 1, 256);
    long steps = micro_number(argc, argv, 2, "STEPS", 20000000, 1, 1L << 40);
    long count = micro_number(argc, argv, 3, "VECTORS", 2000, 1, 1L << 24);
    long max = micro_number(argc, argv, 4, "MAX", 400, 1, 1L << 24);
    vectors *all = calloc((size_t)threads, sizeof *all);
    for (long i = 0; i < threads; i++) {
        all[i] = (vectors){calloc((size_t)count, sizeof(uint64_t *)),
                           calloc((size_t)count, sizeof(uint32_t)),
                           calloc((size_t)count, sizeof(uint32_t)),
                           count, steps, max, micro_seed((uint64_t)i), 0};
    }
    micro_run_threads(argv[0], threads, push_elements, all, sizeof *all);
    uint64_t checksum = 0;
    for (long i = 0; i < threads; i++) {
        checksum += all[i].checksum;
        free(all[i].data);
        free(all[i].length);
        free(all[i].capacity);
    }
    free(all);
    printf("%llu\n", (unsigned long long)checksum);
    return 0;
}

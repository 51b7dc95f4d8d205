/* Producer/consumer: producers allocate blocks and pass them through rings to
 * consumers that free them, so every free comes from another thread.
 *
 *   hh-micro-prodcons [PAIRS [ITEMS_PER_PAIR]] | @FILE   default 1 pair, 20 million */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "arguments.h"

enum { RING = 4096 };

typedef struct ring {
    _Atomic(void *) cells[RING];
    long items;
} ring;

static void *produce(void *arg) {
    ring *r = arg;
    for (long i = 0; i < r->items; i++) {
        char *p = malloc(16 + (size_t)(i * 2654435761u) % 240);
        p[0] = 1;
        _Atomic(void *) *cell = &r->cells[i % RING];
        void *expected = NULL;
        while (!atomic_compare_exchange_weak(cell, &expected, p)) expected = NULL;
    }
    return NULL;
}

static void *consume(void *arg) {
    ring *r = arg;
    for (long i = 0; i < r->items; i++) {
        _Atomic(void *) *cell = &r->cells[i % RING];
        void *p;
        while ((p = atomic_exchange(cell, NULL)) == NULL) {
        }
        free(p);
    }
    return NULL;
}

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    int pairs = argc > 1 ? atoi(argv[1]) : 1;
    long items = argc > 2 ? atol(argv[2]) : 20000000L;
    if (pairs < 1 || pairs > 64 || items < 1) {
        fprintf(stderr, "usage: hh-micro-prodcons [PAIRS (1-64) [ITEMS]]\n");
        return 2;
    }
    ring *rings = calloc((size_t)pairs, sizeof *rings);
    pthread_t *threads = calloc(2 * (size_t)pairs, sizeof *threads);
    for (int i = 0; i < pairs; i++) {
        rings[i].items = items;
        pthread_create(&threads[2 * i], NULL, produce, &rings[i]);
        pthread_create(&threads[2 * i + 1], NULL, consume, &rings[i]);
    }
    for (int i = 0; i < 2 * pairs; i++) pthread_join(threads[i], NULL);
    free(threads);
    free(rings);
    puts("done");
    return 0;
}

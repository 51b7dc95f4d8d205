/* Pointer chasing through many small nodes spread over a large heap, in an
 * order unrelated to their addresses, as propagation walks watch lists: the
 * allocator is called only while building; the walk measures the TLB.
 *
 *   hh-micro-chase [NODES [STEPS]] | @FILE   default 8 million nodes, 100 million steps */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "arguments.h"

typedef struct node {
    struct node *next;
    uint64_t payload[3];
} node;

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    size_t nodes = argc > 1 ? strtoull(argv[1], NULL, 10) : 8000000u;
    long steps = argc > 2 ? atol(argv[2]) : 100000000L;
    if (nodes < 2) {
        fprintf(stderr, "usage: hh-micro-chase [NODES (>= 2) [STEPS]]\n");
        return 2;
    }
    node **all = malloc(nodes * sizeof *all);
    for (size_t i = 0; i < nodes; i++) {
        all[i] = malloc(sizeof(node));
        all[i]->payload[0] = i;
    }
    uint64_t x = 2463534242u;
    for (size_t i = nodes - 1; i > 0; i--) { /* a random cycle through all nodes */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t j = x % (i + 1);
        node *t = all[i];
        all[i] = all[j];
        all[j] = t;
    }
    for (size_t i = 0; i < nodes; i++) all[i]->next = all[(i + 1) % nodes];
    node *n = all[0];
    uint64_t sum = 0;
    for (long s = 0; s < steps; s++) {
        sum += n->payload[0];
        n = n->next;
    }
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}

/* Private tables of small blocks: each of THREADS threads owns a table of SLOTS
 * slots and, STEPS times, frees the block at a random slot and allocates one of
 * 5-1024 bytes in its place, writing its first and last byte. No block is
 * shared, so every free is the owner's: the allocator's thread-local fast
 * paths under as many threads as asked (the allocator suite's pattern of many
 * threads churning small objects).
 *
 *   hh-micro-slots [THREADS [STEPS [SLOTS]]] | @FILE
 *                  default 4 threads, 20 million steps each, 1000 slots each */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "arguments.h"
#include "random.h"
#include "threads.h"

enum { MIN_BLOCK = 5, MAX_BLOCK = 1024 };

typedef struct table {
    char **slots;
    long slot_count;
    long steps;
    uint64_t seed;
    uint64_t checksum; /* of bytes read back, so that no write can be left out */
} table;

static void *churn_table(void *arg) {
    table *t = arg;
    uint64_t state = t->seed, checksum = 0;
    for (long i = 0; i < t->steps; i++) {
        size_t slot = micro_random_below(&state, (uint64_t)t->slot_count);
        size_t size = MIN_BLOCK + micro_random_below(&state, MAX_BLOCK - MIN_BLOCK + 1);
        free(t->slots[slot]);
        char *block = malloc(size);
        if (block == NULL) {
            fprintf(stderr, "hh-micro-slots: malloc(%zu) failed\n", size);
            exit(1);
        }
        block[0] = (char)i;
        block[size - 1] = (char)slot;
        t->slots[slot] = block;
        const char *neighbour = t->slots[(slot + 1) % (size_t)t->slot_count];
        checksum += neighbour != NULL ? (unsigned char)neighbour[0] : 0;
    }
    for (long s = 0; s < t->slot_count; s++) free(t->slots[s]);
    t->checksum = checksum;
    return NULL;
}

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    long threads = micro_number(argc, argv, 1, "THREADS", 4, 1, 256);
    long steps = micro_number(argc, argv, 2, "STEPS", 20000000, 1, 1L << 40);
    long slots = micro_number(argc, argv, 3, "SLOTS", 1000, 1, 1L << 24);
    table *tables = calloc((size_t)threads, sizeof *tables);
    for (long i = 0; i < threads; i++)
        tables[i] = (table){calloc((size_t)slots, sizeof(char *)), slots, steps,
                            micro_seed((uint64_t)i), 0};
    micro_run_threads(argv[0], threads, churn_table, tables, sizeof *tables);
    uint64_t checksum = 0;
    for (long i = 0; i < threads; i++) {
        checksum += tables[i].checksum;
        free(tables[i].slots);
    }
    free(tables);
    printf("%llu\n", (unsigned long long)checksum);
    return 0;
}

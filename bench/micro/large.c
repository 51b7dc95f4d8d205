/* Large zero-filled blocks: 20 slots hold blocks of 5-25 MiB; ROUNDS times a
 * random slot gets a new block of a random size, zero-filled by memset as
 * C++'s make_unique<char[]>(n) fills it, and then its old block is freed (so
 * 21 are live for a moment). The pattern of mimalloc-bench's malloc-large:
 * whether the allocator keeps large blocks for reuse or maps and faults them
 * in afresh every time.
 *
 *   hh-micro-large [ROUNDS] | @FILE   default 2000 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arguments.h"
#include "random.h"

#define MiB ((size_t)1 << 20)
enum { SLOTS = 20 };

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    long rounds = micro_number(argc, argv, 1, "ROUNDS", 2000, 1, 1L << 40);
    char *slots[SLOTS] = {0};
    uint64_t state = micro_seed(42), checksum = 0;
    for (long i = 0; i < rounds; i++) {
        size_t slot = micro_random_below(&state, SLOTS);
        size_t size = 5 * MiB + micro_random_below(&state, 20 * MiB + 1);
        char *block = malloc(size);
        if (block == NULL) {
            fprintf(stderr, "hh-micro-large: malloc(%zu) failed\n", size);
            return 1;
        }
        memset(block, 0, size);
        free(slots[slot]);
        slots[slot] = block;
        checksum += (unsigned char)block[size / 2];
    }
    for (size_t s = 0; s < SLOTS; s++) free(slots[s]);
    printf("%llu\n", (unsigned long long)checksum);
    return 0;
}

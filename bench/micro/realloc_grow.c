/* A block grown by realloc to 1 GiB in steps of 1.5x, writing every new page,
 * as MiniSat's region allocator and CaDiCaL's arena grow; then walked.
 *
 *   hh-micro-realloc [ROUNDS] | @FILE default 3 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arguments.h"

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    const size_t limit = (size_t)1 << 30;
    unsigned long long sum = 0;
    for (int r = 0; r < rounds; r++) {
        size_t size = 4096;
        char *p = malloc(size);
        memset(p, 1, size);
        while (size < limit) {
            size_t next = size + size / 2 > limit ? limit : size + size / 2;
            p = realloc(p, next);
            if (p == NULL) {
                fprintf(stderr, "hh-micro-realloc: realloc to %zu bytes failed\n", next);
                return 1;
            }
            memset(p + size, 1, next - size);
            size = next;
        }
        for (size_t i = 0; i < size; i += 64) sum += (unsigned char)p[i];
        free(p);
    }
    printf("%llu\n", sum);
    return 0;
}

/* A minimal test harness: CHECK prints the failing expression and its line
 * and counts it; each test binary ends with "N passed, N failed". */
#ifndef HUGEHEAP_TEST_CHECK_H
#define HUGEHEAP_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int checks_passed, checks_failed;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (cond) {                                                            \
            checks_passed++;                                                   \
        } else {                                                               \
            checks_failed++;                                                   \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                      \
    } while (0)

/* Exit code 77 tells ctest the test was skipped (SKIP_RETURN_CODE). */
#define SKIP(...)                        \
    do {                                 \
        printf("SKIP: " __VA_ARGS__);    \
        printf("\n");                    \
        exit(77);                        \
    } while (0)

/* xorshift64*: the random tests' numbers, the same sequence in every run
 * for a given seed (state: never 0). */
static inline uint64_t check_random(uint64_t *state) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 0x2545F4914F6CDD1Dull;
}

static inline int check_summary(void) {
    printf("%d passed, %d failed\n", checks_passed, checks_failed);
    return checks_failed == 0 ? 0 : 1;
}

#endif

/* Random sequences of malloc-family calls checked against a reference model:
 * every live block keeps the bytes written into it (also across realloc), no
 * two live blocks overlap, usable sizes and alignments are as promised. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hugeheap.h"

enum { SLOTS = 4096 };

typedef struct slot {
    unsigned char *ptr;
    size_t size;
    size_t alignment;
    uint8_t seed;
} slot;

static slot slots[SLOTS];
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

/* Mostly small blocks, some medium, a few large, as reasoners allocate. */
static size_t random_size(void) {
    uint64_t r = check_random(&rng_state) % 1000;
    if (r < 700) return check_random(&rng_state) % 256;
    if (r < 950) return check_random(&rng_state) % 16384;
    if (r < 995) return check_random(&rng_state) % (1 << 20);
    return check_random(&rng_state) % (6 << 20);
}

static void write_pattern(slot *s) {
    for (size_t i = 0; i < s->size; i++) s->ptr[i] = (unsigned char)(s->seed + i * 7);
}

static int pattern_intact(const slot *s, size_t upto) {
    size_t n = upto < s->size ? upto : s->size;
    /* Every byte for small blocks; a stride through big ones. */
    size_t step = n > 65536 ? 61 : 1;
    for (size_t i = 0; i < n; i += step) {
        if (s->ptr[i] != (unsigned char)(s->seed + i * 7)) return 0;
    }
    return n == 0 || s->ptr[n - 1] == (unsigned char)(s->seed + (n - 1) * 7);
}

static int by_address(const void *a, const void *b) {
    const slot *x = a, *y = b;
    return (uintptr_t)x->ptr < (uintptr_t)y->ptr ? -1 : (uintptr_t)x->ptr > (uintptr_t)y->ptr;
}

static void check_no_overlap(void) {
    static slot sorted[SLOTS];
    size_t n = 0;
    for (size_t i = 0; i < SLOTS; i++) {
        if (slots[i].ptr) sorted[n++] = slots[i];
    }
    qsort(sorted, n, sizeof sorted[0], by_address);
    int ok = 1;
    for (size_t i = 1; i < n; i++) {
        ok &= sorted[i - 1].ptr + hh_usable_size(sorted[i - 1].ptr) <= sorted[i].ptr;
    }
    CHECK(ok);
}

static void check_block(const slot *s) {
    CHECK(((uintptr_t)s->ptr & (s->alignment - 1)) == 0);
    CHECK(hh_usable_size(s->ptr) >= s->size);
    CHECK(hh_owns(s->ptr));
}

int main(int argc, char **argv) {
    long steps = argc > 1 ? atol(argv[1]) : 300000;
    int bad_contents = 0;
    for (long step = 0; step < steps; step++) {
        slot *s = &slots[check_random(&rng_state) % SLOTS];
        uint64_t op = check_random(&rng_state) % 100;
        if (s->ptr == NULL) {
            s->size = random_size();
            s->seed = (uint8_t)check_random(&rng_state);
            s->alignment = 16;
            if (op < 70) {
                s->ptr = hh_malloc(s->size);
            } else if (op < 85) {
                s->ptr = hh_calloc(1, s->size);
                for (size_t i = 0; i < s->size; i += 97) bad_contents += s->ptr[i] != 0;
            } else {
                s->alignment = (size_t)1 << (4 + check_random(&rng_state) % 14); /* 16 B .. 128 KiB */
                s->ptr = hh_memalign(s->alignment, s->size);
            }
            CHECK(s->ptr != NULL);
            write_pattern(s);
            check_block(s);
        } else if (op < 60) {
            bad_contents += !pattern_intact(s, s->size);
            hh_free(s->ptr);
            s->ptr = NULL;
        } else {
            size_t new_size = random_size();
            bad_contents += !pattern_intact(s, s->size);
            unsigned char *moved = hh_realloc(s->ptr, new_size);
            if (new_size == 0) { /* freed, as glibc does */
                CHECK(moved == NULL);
                s->ptr = NULL;
                continue;
            }
            CHECK(moved != NULL);
            s->ptr = moved;
            s->alignment = 16;
            bad_contents += !pattern_intact(s, new_size);
            s->size = new_size;
            write_pattern(s);
            check_block(s);
        }
        if (step % 50000 == 0) check_no_overlap();
    }
    check_no_overlap();
    CHECK(bad_contents == 0);
    for (size_t i = 0; i < SLOTS; i++) {
        if (slots[i].ptr) {
            bad_contents += !pattern_intact(&slots[i], slots[i].size);
            hh_free(slots[i].ptr);
        }
    }
    CHECK(bad_contents == 0);
    return check_summary();
}

/* libFuzzer target: the input is a program of malloc-family calls, run
 * against a model of what every live block must hold.  Two threads run it:
 * the main one, and a helper that frees (remote frees) and allocates blocks
 * handed to it through a ring.  Any lost byte, overlap, misalignment or
 * wrong usable size stops the run; so do the library's own assertions (the
 * test library is built with HH_DEBUG=2).
 *
 *   build-fuzz/bin/fuzz_alloc -max_total_time=60 [CORPUS_DIR]   (make fuzz) */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hugeheap.h"

enum { SLOTS = 64, RING = 16 };

typedef struct slot {
    unsigned char *ptr;
    size_t size;
    size_t alignment;
    unsigned char fill;
} slot;

typedef struct ring {
    _Atomic(unsigned char *) cells[RING];
    _Atomic(size_t) sizes[RING];
    atomic_bool done;
} ring;

static void fail(const char *what) {
    (void)what;
    __builtin_trap();
}

static void fill(slot *s) {
    memset(s->ptr, s->fill, s->size);
}

static void check(const slot *s) {
    if (((uintptr_t)s->ptr & (s->alignment - 1)) != 0) fail("misaligned");
    if (hh_usable_size(s->ptr) < s->size) fail("usable size");
    for (size_t i = 0; i < s->size; i += 1 + s->size / 64) {
        if (s->ptr[i] != s->fill) fail("contents");
    }
    if (s->size > 0 && s->ptr[s->size - 1] != s->fill) fail("last byte");
}

/* Sizes from one byte: mostly small, some medium, a few large. */
static size_t size_from(uint8_t a, uint8_t b) {
    unsigned kind = a >> 6;
    size_t low = ((size_t)a & 63) << 8 | b;
    switch (kind) {
    case 0: return low & 255;          /* 0 .. 255 */
    case 1: return low;                /* .. 16 KiB */
    case 2: return low * 16;           /* .. 256 KiB */
    default: return (low & 255) << 14; /* .. 4 MiB, large blocks */
    }
}

/* The helper: frees what it is handed (remote frees), allocates and frees a
 * block of the same size itself. */
static void *helper(void *arg) {
    ring *r = arg;
    for (;;) {
        int idle = 1;
        for (unsigned i = 0; i < RING; i++) {
            /* The size before the cell is emptied: hand_over writes the
             * next size only once it sees the cell empty. */
            unsigned char *p = atomic_load(&r->cells[i]);
            if (p == NULL) continue;
            idle = 0;
            size_t size = atomic_load(&r->sizes[i]);
            atomic_store(&r->cells[i], NULL);
            for (size_t k = 0; k < size; k += 1 + size / 16) {
                if (p[k] != 0x5A) fail("handed-over contents");
            }
            unsigned char *own = hh_malloc(size);
            if (own == NULL && size > 0) fail("helper malloc");
            memset(own, 1, size);
            hh_free(p);
            hh_free(own);
        }
        if (idle && atomic_load(&r->done)) {
            int empty = 1;
            for (unsigned i = 0; i < RING; i++) empty &= atomic_load(&r->cells[i]) == NULL;
            if (empty) return NULL;
        }
    }
}

/* Only this thread fills cells and only the helper empties them, after it
 * has read the size: so the size it reads is always its block's (a size meant
 * for the next block made it read past the previous one). */
static void hand_over(ring *r, slot *s, unsigned where) {
    memset(s->ptr, 0x5A, s->size);
    unsigned i = where % RING;
    while (atomic_load(&r->cells[i]) != NULL) {
    }
    atomic_store(&r->sizes[i], s->size);
    atomic_store(&r->cells[i], s->ptr);
    s->ptr = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) {
    static slot slots[SLOTS];
    ring r;
    memset(&r, 0, sizeof r);
    pthread_t t;
    int threaded = len > 0 && (data[0] & 1);
    if (threaded && pthread_create(&t, NULL, helper, &r) != 0) threaded = 0;
    for (size_t i = 0; i + 4 <= len; i += 4) {
        uint8_t op = data[i], which = data[i + 1];
        slot *s = &slots[which % SLOTS];
        size_t size = size_from(data[i + 2], data[i + 3]);
        if (s->ptr != NULL) check(s);
        switch (op % 8) {
        case 0: /* malloc */
        case 1: /* calloc */
            if (s->ptr != NULL) break;
            s->ptr = op % 8 == 0 ? hh_malloc(size) : hh_calloc(1, size);
            if (s->ptr == NULL) fail("malloc");
            if (op % 8 == 1) {
                for (size_t k = 0; k < size; k++) {
                    if (s->ptr[k] != 0) fail("calloc not zero");
                }
            }
            s->size = size;
            s->alignment = 16;
            s->fill = (unsigned char)(op ^ which);
            fill(s);
            break;
        case 2: { /* aligned */
            if (s->ptr != NULL) break;
            size_t alignment = (size_t)16 << (which % 14);
            s->ptr = hh_memalign(alignment, size);
            if (s->ptr == NULL) fail("memalign");
            s->size = size;
            s->alignment = alignment;
            s->fill = (unsigned char)(op ^ which);
            fill(s);
            break;
        }
        case 3: /* realloc */
        case 4: {
            if (s->ptr == NULL) break;
            if (size == 0) size = 1; /* realloc(p, 0) frees: covered by free */
            unsigned char *moved = hh_realloc(s->ptr, size);
            if (moved == NULL) fail("realloc");
            size_t kept = s->size < size ? s->size : size;
            for (size_t k = 0; k < kept; k += 1 + kept / 64) {
                if (moved[k] != s->fill) fail("realloc contents");
            }
            s->ptr = moved;
            s->size = size;
            s->alignment = 16;
            fill(s);
            break;
        }
        case 5: /* another thread frees it */
            if (s->ptr == NULL) break;
            if (threaded) {
                hand_over(&r, s, which);
                break;
            }
            /* fall through */
        default: /* free */
            if (s->ptr == NULL) break;
            hh_free(s->ptr);
            s->ptr = NULL;
            break;
        }
    }
    /* Nothing overlaps: sort-free check of every live pair's ranges. */
    for (unsigned a = 0; a < SLOTS; a++) {
        if (slots[a].ptr == NULL) continue;
        check(&slots[a]);
        for (unsigned b = a + 1; b < SLOTS; b++) {
            if (slots[b].ptr == NULL) continue;
            unsigned char *x = slots[a].ptr, *y = slots[b].ptr;
            if (x < y + slots[b].size && y < x + slots[a].size) fail("overlap");
        }
    }
    for (unsigned a = 0; a < SLOTS; a++) {
        hh_free(slots[a].ptr);
        slots[a].ptr = NULL;
    }
    if (threaded) {
        atomic_store(&r.done, true);
        pthread_join(t, NULL);
    }
    return 0;
}

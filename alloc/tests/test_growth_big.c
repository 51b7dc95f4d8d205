/* The growth heap for blocks of 1-16 KiB (HUGEHEAP_GROWTH_HEAP=big): blocks of
 * 1-16 KiB from malloc and calloc go to the coalescing heap while the heap is
 * small and one thread allocates, so memory one size left serves another;
 * smaller blocks stay in the size classes; aligned blocks are aligned; calloc
 * zeroes a block another left written; a second thread closes it. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "hugeheap.h"

/* Sizes over 1 KiB are the growth heap's (rounded to 16 bytes, where the
 * size classes would round 2,000 to 2,048); up to 1 KiB the classes'. */
static void test_which_blocks(void) {
    void *big = hh_malloc(2000);
    void *small = hh_malloc(300);
    void *grown = hh_realloc(NULL, 300);
    CHECK(big != NULL && small != NULL && grown != NULL);
    CHECK(hh_usable_size(big) == 2000);
    CHECK(hh_usable_size(small) == 320);
    CHECK(hh_usable_size(grown) == 320);
    char *moved = hh_realloc(grown, 1500); /* grown over 1 KiB: moved there */
    CHECK(moved != NULL && hh_usable_size(moved) == 1504);
    hh_free(big);
    hh_free(small);
    hh_free(moved);
}

/* 2 MiB of 2 KiB blocks, three in four freed (every page of the 2 KiB
 * class keeps a quarter live), then 1.5 MiB of 6 KiB blocks: they take the
 * runs of three the frees left, where the size classes would take 1.5 MiB
 * more. */
enum { FILL = 2 << 20, BLOCK = 2048, LARGER = 3 * BLOCK };

static void test_one_size_serves_another(void) {
    static void *blocks[FILL / BLOCK], *larger[FILL / BLOCK / 4];
    size_t count = FILL / BLOCK;
    for (size_t i = 0; i < count; i++) {
        blocks[i] = hh_malloc(BLOCK);
        CHECK(blocks[i] != NULL);
        memset(blocks[i], 1, BLOCK);
    }
    size_t held_before = hh_mallinfo2().arena;
    for (size_t i = 0; i < count; i++) {
        if (i % 4 != 0) hh_free(blocks[i]);
    }
    for (size_t i = 0; i < count / 4; i++) {
        larger[i] = hh_malloc(LARGER);
        CHECK(larger[i] != NULL);
        memset(larger[i], 2, LARGER);
    }
    size_t held_after = hh_mallinfo2().arena;
    if (held_after > held_before + (256 << 10)) {
        fprintf(stderr, "held %zu bytes before the larger blocks, %zu after\n", held_before,
                held_after);
    }
    CHECK(held_after <= held_before + (256 << 10));
    for (size_t i = 0; i < count; i += 4) hh_free(blocks[i]);
    for (size_t i = 0; i < count / 4; i++) hh_free(larger[i]);
}

/* A block of up to 4 KiB takes a free block of its own size where one is,
 * though a larger one was freed after it: a free block's list holds one
 * size, so no other fit is looked at first and no block split that did not
 * need to be.  (A list of sixteen sizes took the first block that fit: b.) */
static void test_own_size_first(void) {
    char *a = hh_malloc(3000), *after_a = hh_malloc(1100);
    char *b = hh_malloc(3040), *after_b = hh_malloc(1100);
    CHECK(a != NULL && after_a != NULL && b != NULL && after_b != NULL);
    hh_free(a);
    hh_free(b);
    char *again = hh_malloc(3000);
    char *larger = hh_malloc(3040);
    CHECK(again == a);
    CHECK(larger == b);
    hh_free(again);
    hh_free(larger);
    hh_free(after_a);
    hh_free(after_b);
}

/* calloc of a block another left written; a realloc that keeps contents. */
static void test_zeroes_and_contents(void) {
    char *dirty = hh_malloc(3000);
    CHECK(dirty != NULL);
    memset(dirty, 0x5a, 3000);
    hh_free(dirty);
    unsigned char *zeroed = hh_calloc(1, 3000);
    CHECK(zeroed != NULL);
    int zero = 1;
    for (size_t i = 0; i < 3000; i++) zero &= zeroed[i] == 0;
    CHECK(zero);
    memset(zeroed, 7, 3000);
    unsigned char *grown = hh_realloc(zeroed, 12000);
    CHECK(grown != NULL);
    int intact = 1;
    for (size_t i = 0; i < 3000; i++) intact &= grown[i] == 7;
    CHECK(intact);
    unsigned char *shrunk = hh_realloc(grown, 100);
    CHECK(shrunk != NULL && shrunk[99] == 7);
    hh_free(shrunk);
}

/* Aligned blocks of growth-heap sizes are aligned, and free as any. */
static void test_aligned(void) {
    size_t alignments[] = {32, 64, 256, 4096};
    for (size_t i = 0; i < sizeof alignments / sizeof alignments[0]; i++) {
        void *p = hh_memalign(alignments[i], 2000);
        void *q = hh_aligned_alloc(alignments[i], 8192);
        void *r = NULL;
        CHECK(hh_posix_memalign(&r, alignments[i], 5000) == 0);
        CHECK(p != NULL && q != NULL && r != NULL);
        CHECK((uintptr_t)p % alignments[i] == 0 && (uintptr_t)q % alignments[i] == 0 &&
              (uintptr_t)r % alignments[i] == 0);
        CHECK(hh_usable_size(p) >= 2000 && hh_usable_size(q) >= 8192 &&
              hh_usable_size(r) >= 5000);
        memset(p, 1, 2000);
        memset(q, 1, 8192);
        memset(r, 1, 5000);
        hh_free(p);
        hh_free(q);
        hh_free(r);
    }
}

/* A second thread's block of 1,200 bytes closes the growth heap: from then
 * on such blocks are the size classes' (1,280 bytes, or a larger class's
 * freed block while the heap is small), in every thread.  A size no earlier
 * test leaves a class page of: the fast path takes a free block of its class
 * before the growth heap is asked. */
static void *malloc_1200(void *arg) {
    (void)arg;
    return hh_malloc(1200);
}

static void test_second_thread_closes(void) {
    void *before = hh_malloc(1200);
    pthread_t thread;
    void *theirs = NULL;
    CHECK(pthread_create(&thread, NULL, malloc_1200, NULL) == 0);
    pthread_join(thread, &theirs);
    CHECK(theirs != NULL && hh_usable_size(theirs) == 1280);
    void *mine = hh_malloc(1200);
    CHECK(mine != NULL && hh_usable_size(mine) >= 1280);
    CHECK(hh_usable_size(before) == 1200); /* blocks there stay there */
    hh_free(before);
    hh_free(theirs);
    hh_free(mine);
}

int main(void) {
    test_own_size_first(); /* first: no free block of the growth heap yet */
    test_which_blocks();
    test_one_size_serves_another();
    test_zeroes_and_contents();
    test_aligned();
    test_second_thread_closes(); /* last: the growth heap stays closed */
    return check_summary();
}

/* Threads: producers allocate, consumers free (every free a remote one),
 * threads come and go (their pages are abandoned and adopted), blocks move
 * between threads through rings.  Contents are checked at every hand-over.
 * Runs under ThreadSanitizer too. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hugeheap.h"

enum { RING = 1024, PAIRS = 2, ITEMS = 100000 };

typedef struct ring {
    _Atomic(unsigned char *) cells[RING];
} ring;

static ring rings[PAIRS];
static atomic_int bad;

static size_t size_for(unsigned i) {
    unsigned r = (i * 2654435761u) >> 20;
    if (r % 50 == 0) return 100000 + r % 200000; /* a medium span now and then */
    return 8 + r % 600;
}

static void stamp(unsigned char *p, size_t n, unsigned tag) {
    memset(p, (int)(tag & 0xFF), n);
    memcpy(p, &tag, sizeof tag);
}

static int stamped(const unsigned char *p, size_t n, unsigned tag) {
    unsigned got;
    memcpy(&got, p, sizeof got);
    return got == tag && p[n - 1] == (unsigned char)(tag & 0xFF);
}

static void *producer(void *arg) {
    ring *r = arg;
    for (unsigned i = 0; i < ITEMS; i++) {
        size_t n = size_for(i);
        unsigned char *p = hh_malloc(n);
        stamp(p, n, i);
        _Atomic(unsigned char *) *cell = &r->cells[i % RING];
        unsigned char *expected = NULL;
        while (!atomic_compare_exchange_weak(cell, &expected, p)) expected = NULL;
    }
    return NULL;
}

static void *consumer(void *arg) {
    ring *r = arg;
    for (unsigned i = 0; i < ITEMS; i++) {
        _Atomic(unsigned char *) *cell = &r->cells[i % RING];
        unsigned char *p;
        while ((p = atomic_exchange(cell, NULL)) == NULL) {
        }
        if (!stamped(p, size_for(i), i)) atomic_fetch_add(&bad, 1);
        hh_free(p);
    }
    return NULL;
}

/* Short-lived threads: allocate, keep some blocks alive past their exit. */
enum { CHURN_THREADS = 200, KEPT = 64 };
static unsigned char *kept[CHURN_THREADS][KEPT];

static void *short_lived(void *arg) {
    uintptr_t id = (uintptr_t)arg;
    void *scratch[256];
    for (int i = 0; i < 256; i++) scratch[i] = hh_malloc(16 + (size_t)(i * 13) % 3000);
    for (int i = 0; i < KEPT; i++) {
        kept[id][i] = hh_malloc(24 + (size_t)i * 40);
        stamp(kept[id][i], 24 + (size_t)i * 40, (unsigned)(id * 1000 + (uintptr_t)i));
    }
    for (int i = 0; i < 256; i++) hh_free(scratch[i]);
    return NULL;
}

static void test_producer_consumer(void) {
    pthread_t threads[2 * PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        pthread_create(&threads[2 * i], NULL, producer, &rings[i]);
        pthread_create(&threads[2 * i + 1], NULL, consumer, &rings[i]);
    }
    for (int i = 0; i < 2 * PAIRS; i++) pthread_join(threads[i], NULL);
    CHECK(atomic_load(&bad) == 0);
}

static void test_thread_churn(void) {
    for (uintptr_t i = 0; i < CHURN_THREADS; i += 4) {
        pthread_t t[4];
        for (uintptr_t j = 0; j < 4; j++) pthread_create(&t[j], NULL, short_lived, (void *)(i + j));
        for (int j = 0; j < 4; j++) pthread_join(t[j], NULL);
    }
    /* Blocks of finished threads are intact, and freeing them here (their
     * pages abandoned, perhaps adopted by now) works. */
    int intact = 1;
    for (uintptr_t id = 0; id < CHURN_THREADS; id++) {
        for (int i = 0; i < KEPT; i++) {
            intact &= stamped(kept[id][i], 24 + (size_t)i * 40, (unsigned)(id * 1000 + (uintptr_t)i));
            hh_free(kept[id][i]);
        }
    }
    CHECK(intact);
}

/* Many threads freeing into the same full pages at once: the path that tells
 * an owner its full page has room again. */
enum { SHARED_BLOCKS = 50000, FREERS = 4 };
static void *shared_blocks[SHARED_BLOCKS];

static void *free_every_nth(void *arg) {
    uintptr_t k = (uintptr_t)arg;
    for (size_t i = k; i < SHARED_BLOCKS; i += FREERS) hh_free(shared_blocks[i]);
    return NULL;
}

static void test_concurrent_remote_frees(void) {
    for (int round = 0; round < 5; round++) {
        for (size_t i = 0; i < SHARED_BLOCKS; i++) shared_blocks[i] = hh_malloc(48);
        pthread_t t[FREERS];
        for (uintptr_t k = 0; k < FREERS; k++) pthread_create(&t[k], NULL, free_every_nth, (void *)k);
        /* The owner keeps allocating meanwhile, draining pages as they come back. */
        void *mine[2000];
        for (int i = 0; i < 2000; i++) mine[i] = hh_malloc(48);
        for (int k = 0; k < FREERS; k++) pthread_join(t[k], NULL);
        for (int i = 0; i < 2000; i++) hh_free(mine[i]);
    }
    /* After all that, blocks are reused rather than leaked. */
    struct hh_mallinfo2 before = hh_mallinfo2();
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < SHARED_BLOCKS; i++) shared_blocks[i] = hh_malloc(48);
        for (size_t i = 0; i < SHARED_BLOCKS; i++) hh_free(shared_blocks[i]);
    }
    struct hh_mallinfo2 after = hh_mallinfo2();
    CHECK(after.arena <= before.arena + ((size_t)8 << 20));
}

int main(void) {
    test_producer_consumer();
    test_thread_churn();
    test_concurrent_remote_frees();
    return check_summary();
}

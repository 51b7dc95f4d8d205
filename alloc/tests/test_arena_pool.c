/* hh_arena and hh_pool: semantics, and pools used from many threads at once
 * (remote frees, threads that come and go).  Runs under the sanitizers too. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "hugeheap.h"
#include "internal.h" /* _hh_arena_is_valid */

#define MiB ((size_t)1 << 20)

static void test_arena(void) {
    hh_arena *arena = hh_arena_create();
    CHECK(arena != NULL);
    hh_arena_stats st;
    hh_arena_get_stats(arena, &st);
    CHECK(st.allocated == 0 && st.chunks == 1 && st.reserved >= 2 * MiB);

    size_t alignments[] = {1, 2, 8, 16, 64, 4096, 65536, 2 * MiB};
    unsigned char *blocks[64];
    size_t sizes[64];
    int aligned = 1;
    for (int i = 0; i < 64; i++) {
        size_t a = alignments[i % 8];
        sizes[i] = (size_t)(i * 977) % 50000 + 1;
        blocks[i] = hh_arena_alloc(arena, sizes[i], a);
        aligned &= blocks[i] != NULL && ((uintptr_t)blocks[i] & (a - 1)) == 0;
        memset(blocks[i], i, sizes[i]);
    }
    CHECK(aligned);
    int intact = 1;
    for (int i = 0; i < 64; i++) {
        intact &= blocks[i][0] == (unsigned char)i && blocks[i][sizes[i] - 1] == (unsigned char)i;
    }
    CHECK(intact);

    /* Bigger than any chunk so far: gets a chunk of its own size. */
    unsigned char *big = hh_arena_alloc(arena, 100 * MiB, 16);
    CHECK(big != NULL);
    big[0] = 1;
    big[100 * MiB - 1] = 2;
    hh_arena_get_stats(arena, &st);
    CHECK(st.reserved >= 100 * MiB + 2 * MiB && st.chunks >= 2);

    void *a0 = hh_arena_alloc(arena, 0, 1), *a1 = hh_arena_alloc(arena, 0, 1);
    CHECK(a0 != NULL && a1 != NULL && a0 != a1);

    errno = 0;
    CHECK(hh_arena_alloc(arena, 10, 3) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(hh_arena_alloc(arena, 10, 4 * MiB) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(hh_arena_alloc(arena, SIZE_MAX / 2, 16) == NULL && errno == ENOMEM);

    /* Reset: the same memory again, nothing new mapped. */
    size_t reserved = st.reserved;
    void *first = blocks[0];
    hh_arena_reset(arena);
    hh_arena_get_stats(arena, &st);
    CHECK(st.allocated == 0 && st.reserved == reserved);
    CHECK(hh_arena_alloc(arena, sizes[0], 1) == first);
    CHECK(hh_arena_alloc(arena, 100 * MiB, 16) != NULL); /* fits a kept chunk */
    hh_arena_get_stats(arena, &st);
    CHECK(st.reserved == reserved);
    hh_arena_destroy(arena);
}

/* The inline fast path and the call take from the same cursor: objects
 * distinct and aligned, counted once each, across chunks, marks and resets. */
static void test_arena_inline(void) {
    hh_arena *arena = hh_arena_create();
    CHECK(arena != NULL);
    char *previous = NULL;
    size_t previous_size = 0, total = 0;
    for (int i = 0; i < 100000; i++) { /* about 4 MiB: a second chunk */
        size_t size = 8 + (size_t)(i % 7) * 8;
        char *p = (i % 3 == 0) ? hh_arena_alloc(arena, size, 16)
                               : hh_arena_alloc_inline(arena, size, 16);
        CHECK(p != NULL && ((uintptr_t)p & 15) == 0);
        /* after the object before, or in the next chunk */
        CHECK(previous == NULL || p >= previous + previous_size || p < previous);
        memset(p, 0x5a, size);
        previous = p;
        previous_size = size;
        total += size;
    }
    hh_arena_stats st;
    hh_arena_get_stats(arena, &st);
    CHECK(st.allocated == total && st.chunks == 2);
    hh_arena_mark mark = hh_arena_save(arena);
    void *a = hh_arena_alloc_inline(arena, 48, 64);
    CHECK(a != NULL && ((uintptr_t)a & 63) == 0);
    hh_arena_release(arena, mark);
    CHECK(hh_arena_alloc_inline(arena, 48, 64) == a);
    /* What the call refuses, the inline path refuses the same way. */
    errno = 0;
    CHECK(hh_arena_alloc_inline(arena, 16, 3) == NULL && errno == EINVAL);
    CHECK(hh_arena_alloc_inline(arena, 0, 16) != hh_arena_alloc_inline(arena, 0, 16));
    /* A size the current chunk cannot hold goes to a new chunk. */
    CHECK(hh_arena_alloc_inline(arena, 5 * MiB, 16) != NULL);
    hh_arena_reset(arena);
    hh_arena_get_stats(arena, &st);
    CHECK(st.allocated == 0);
    CHECK(hh_arena_alloc_inline(arena, 16, 16) != NULL);
    hh_arena_destroy(arena);
}

/* Save and release: a stack of objects inside the arena, across chunks. */
static void test_arena_mark(void) {
    hh_arena *arena = hh_arena_create();
    CHECK(arena != NULL);
    void *kept = hh_arena_alloc(arena, 100, 16);
    hh_arena_mark mark = hh_arena_save(arena);
    hh_arena_stats st;
    hh_arena_get_stats(arena, &st);
    size_t allocated = st.allocated;
    void *first = hh_arena_alloc(arena, 1000, 16);
    CHECK(first != NULL && first != kept);
    /* Beyond the first chunk: the release goes back across chunks. */
    CHECK(hh_arena_alloc(arena, 3 * MiB, 16) != NULL);
    hh_arena_get_stats(arena, &st);
    size_t reserved = st.reserved;
    CHECK(st.chunks == 2);
    hh_arena_release(arena, mark);
    hh_arena_get_stats(arena, &st);
    CHECK(st.allocated == allocated);
    CHECK(hh_arena_alloc(arena, 1000, 16) == first);
    /* A nested mark, released first, then the outer one. */
    hh_arena_mark inner = hh_arena_save(arena);
    void *second = hh_arena_alloc(arena, 64, 16);
    hh_arena_release(arena, inner);
    CHECK(hh_arena_alloc(arena, 64, 16) == second);
    hh_arena_release(arena, mark);
    /* The kept chunk serves again: nothing new mapped. */
    CHECK(hh_arena_alloc(arena, 3 * MiB, 16) != NULL);
    hh_arena_get_stats(arena, &st);
    CHECK(st.reserved == reserved && st.chunks == 2);
    hh_arena_destroy(arena);
}

/* The arena's invariants (_hh_arena_is_valid) after every step of a random
 * sequence: objects of every size and alignment, by the call and inline,
 * objects bigger than a chunk, marks saved and released, resets. */
static void test_arena_invariants(void) {
    hh_arena *arena = hh_arena_create();
    CHECK(arena != NULL && _hh_arena_is_valid(arena));
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    hh_arena_mark marks[8];
    int depth = 0, valid = 1, placed = 1, resets = 0, releases = 0;
    for (int step = 0; step < 20000; step++) {
        uint64_t r = check_random(&seed);
        if (r % 97 == 0) {
            hh_arena_reset(arena);
            depth = 0;
            resets++;
        } else if (r % 13 == 0 && depth < 8) {
            marks[depth++] = hh_arena_save(arena);
        } else if (r % 13 == 1 && depth > 0) {
            hh_arena_release(arena, marks[--depth]);
            releases++;
        } else {
            size_t size = r % 251 == 0 ? (size_t)(r >> 40) % (9 * MiB) : (size_t)(r >> 8) % 4096;
            size_t alignment = (size_t)1 << ((r >> 20) % 22); /* 1 .. 2 MiB */
            char *p = (r >> 30) & 1 ? hh_arena_alloc_inline(arena, size, alignment)
                                    : hh_arena_alloc(arena, size, alignment);
            placed &= p != NULL && ((uintptr_t)p & (alignment - 1)) == 0;
            if (p != NULL && size > 0) p[0] = p[size - 1] = (char)step;
        }
        valid &= _hh_arena_is_valid(arena);
    }
    CHECK(valid);
    CHECK(placed);
    CHECK(resets > 0 && releases > 0);
    hh_arena_stats st;
    hh_arena_get_stats(arena, &st);
    CHECK(st.chunks >= 2 && st.allocated <= st.reserved);
    hh_arena_destroy(arena);
}

/* A broken invariant stops the program: a mark of another arena released
 * into this one leaves its cursor in a chunk it does not have, and its next
 * allocation stops with the library's line (the test library checks its
 * invariants). */
static void test_arena_foreign_mark_caught(void) {
    hh_arena *arena = hh_arena_create(), *other = hh_arena_create();
    CHECK(arena != NULL && other != NULL);
    hh_arena_mark foreign = hh_arena_save(other);
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        hh_arena_release(arena, foreign);
        hh_arena_alloc(arena, 64, 16);
        _exit(0);
    }
    close(fds[1]);
    char text[512] = "";
    size_t len = 0;
    ssize_t n;
    while ((n = read(fds[0], text + len, sizeof text - 1 - len)) > 0) len += (size_t)n;
    text[len] = '\0';
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    int stopped = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
                  strstr(text, "hugeheap: internal assertion failed: _hh_arena_is_valid") != NULL;
    if (!stopped) fprintf(stderr, "foreign mark: status %d, stderr: %s\n", status, text);
    CHECK(stopped);
    hh_arena_destroy(arena);
    hh_arena_destroy(other);
}

static void test_pool_basics(void) {
    errno = 0;
    CHECK(hh_pool_create(0) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(hh_pool_create(1 << 20) == NULL && errno == EINVAL);

    hh_pool *pool = hh_pool_create(40);
    CHECK(pool != NULL);
    enum { N = 20000 };
    static unsigned char *objects[N];
    int ok = 1;
    for (int i = 0; i < N; i++) {
        objects[i] = hh_pool_alloc(pool);
        ok &= objects[i] != NULL && ((uintptr_t)objects[i] & 15) == 0;
        memset(objects[i], i & 0xFF, 40);
    }
    CHECK(ok);
    for (int i = 0; i < N; i++) ok &= objects[i][39] == (unsigned char)(i & 0xFF);
    CHECK(ok);
    hh_pool_stats st;
    hh_pool_get_stats(pool, &st);
    CHECK(st.object_size == 48 && st.in_use == N && st.pages >= N * 48 / 65536);
    size_t pages = st.pages;
    for (int i = 0; i < N; i += 2) hh_pool_free(pool, objects[i]);
    for (int i = 0; i < N; i += 2) objects[i] = hh_pool_alloc(pool); /* reused, no new page */
    hh_pool_get_stats(pool, &st);
    CHECK(st.in_use == N && st.pages == pages);
    for (int i = 0; i < N; i++) hh_pool_free(pool, objects[i]);
    hh_pool_get_stats(pool, &st);
    CHECK(st.in_use == 0);
    hh_pool_destroy(pool);

    /* A slot reused by a new pool is a new pool. */
    hh_pool *again = hh_pool_create(16);
    void *x = hh_pool_alloc(again);
    CHECK(x != NULL);
    hh_pool_free(again, x);
    hh_pool_destroy(again);
}

static void test_pool_rejects_foreign_objects(void) {
    hh_pool *a = hh_pool_create(32), *b = hh_pool_create(32);
    void *from_a = hh_pool_alloc(a);
    pid_t pid = fork();
    if (pid == 0) {
        close(STDERR_FILENO); /* the message is expected */
        hh_pool_free(b, from_a);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    hh_pool_free(a, from_a);
    hh_pool_destroy(a);
    hh_pool_destroy(b);
}

/* Producers allocate, consumers free: every free a remote one. */
enum { RING = 512, ITEMS = 200000, PAIRS = 2 };
typedef struct ring {
    hh_pool *pool;
    _Atomic(uint64_t *) cells[RING];
} ring;

static void *produce(void *arg) {
    ring *r = arg;
    for (uint64_t i = 0; i < ITEMS; i++) {
        uint64_t *o = hh_pool_alloc(r->pool);
        o[0] = i;
        o[1] = ~i;
        uint64_t *expected = NULL;
        while (!atomic_compare_exchange_weak(&r->cells[i % RING], &expected, o)) expected = NULL;
    }
    return NULL;
}

static atomic_int bad;

static void *consume(void *arg) {
    ring *r = arg;
    for (uint64_t i = 0; i < ITEMS; i++) {
        uint64_t *o;
        while ((o = atomic_exchange(&r->cells[i % RING], NULL)) == NULL) {
        }
        if (o[0] != i || o[1] != ~i) atomic_fetch_add(&bad, 1);
        hh_pool_free(r->pool, o);
    }
    return NULL;
}

static void test_pool_cross_thread(void) {
    hh_pool *pool = hh_pool_create(16);
    static ring rings[PAIRS];
    pthread_t t[2 * PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        rings[i].pool = pool;
        pthread_create(&t[2 * i], NULL, produce, &rings[i]);
        pthread_create(&t[2 * i + 1], NULL, consume, &rings[i]);
    }
    for (int i = 0; i < 2 * PAIRS; i++) pthread_join(t[i], NULL);
    CHECK(atomic_load(&bad) == 0);
    hh_pool_stats st;
    hh_pool_get_stats(pool, &st);
    CHECK(st.in_use == 0);
    /* Objects came back: far fewer pages than objects made. */
    CHECK(st.pages < (size_t)PAIRS * ITEMS * 16 / 65536 / 4);
    hh_pool_destroy(pool);
}

/* Threads that exit hand their pages to the pool: later threads reuse them. */
enum { CHURN = 40, PER_THREAD = 3000 };
static uint64_t *left_behind[CHURN][PER_THREAD / 2];

static void *short_lived(void *arg) {
    hh_pool *pool = ((void **)arg)[0];
    uintptr_t id = (uintptr_t)((void **)arg)[1];
    uint64_t *mine[PER_THREAD];
    for (int i = 0; i < PER_THREAD; i++) {
        mine[i] = hh_pool_alloc(pool);
        mine[i][0] = id * PER_THREAD + (uint64_t)i;
    }
    for (int i = 0; i < PER_THREAD; i++) {
        if (i % 2) {
            hh_pool_free(pool, mine[i]);
        } else {
            left_behind[id][i / 2] = mine[i];
        }
    }
    return NULL;
}

static void test_pool_thread_churn(void) {
    hh_pool *pool = hh_pool_create(64);
    for (uintptr_t id = 0; id < CHURN; id++) {
        void *args[2] = {pool, (void *)id};
        pthread_t t;
        pthread_create(&t, NULL, short_lived, args);
        pthread_join(t, NULL);
    }
    hh_pool_stats st;
    hh_pool_get_stats(pool, &st);
    /* Each thread used half of what it allocated; with the halves freed by
     * the owners reused by the next threads, the pool holds about half. */
    size_t all_pages = (size_t)CHURN * PER_THREAD * 64 / 65000 + 1;
    CHECK(st.pages <= all_pages * 3 / 4);
    CHECK(st.in_use == (size_t)CHURN * PER_THREAD / 2);
    int intact = 1;
    for (uintptr_t id = 0; id < CHURN; id++) {
        for (int i = 0; i < PER_THREAD / 2; i++) {
            intact &= left_behind[id][i][0] == id * PER_THREAD + (uint64_t)(2 * i);
            hh_pool_free(pool, left_behind[id][i]); /* pages of exited threads */
        }
    }
    CHECK(intact);
    hh_pool_get_stats(pool, &st);
    CHECK(st.in_use == 0);
    hh_pool_destroy(pool);
}

int main(void) {
    test_arena();
    test_arena_mark();
    test_arena_inline();
    test_arena_invariants();
    test_arena_foreign_mark_caught();
    test_pool_basics();
    test_pool_rejects_foreign_objects();
    test_pool_cross_thread();
    test_pool_thread_churn();
    return check_summary();
}

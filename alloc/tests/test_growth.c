/* Blocks that grow by realloc: the memory a grown block leaves behind serves
 * blocks of any size (the growth heap coalesces), a block grows in place
 * when the memory after it is free, contents survive every move and shrink,
 * other threads may free its blocks, and it closes once the heap is large or
 * a second thread asks. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "hugeheap.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

/* Run first, on a fresh heap: two blocks made by realloc lie side by side;
 * once the second is freed, the first grows into its place. */
static void test_grows_in_place(void) {
    char *first = hh_realloc(NULL, 64);
    char *second = hh_realloc(NULL, 64);
    CHECK(first != NULL && second != NULL);
    memset(first, 'a', 64);
    hh_free(second);
    char *grown = hh_realloc(first, 1000);
    CHECK(grown == first);
    CHECK(hh_usable_size(grown) >= 1000);
    int intact = 1;
    for (int i = 0; i < 64; i++) intact &= grown[i] == 'a';
    CHECK(intact);
    hh_free(grown);
}

/* Watch lists as minisat grows them: 200,000 arrays of 8-byte elements
 * grow by half their capacity at a time (2, 4, 8, 14, 22, ... elements),
 * interleaved, and stop at random sizes (most small).  Size classes would
 * keep each class's high-water mark (a list that stopped early pins its
 * page); here what a grown list left behind serves the next sizes. */
enum { LISTS = 200000 }; /* 16 MiB: the heap stays below where it turns huge */

static void test_grown_lists_reuse_memory(void) {
    static char *data[LISTS];
    static uint32_t capacity[LISTS], target[LISTS];
    uint64_t pushes_left = 0;
    for (size_t i = 0; i < LISTS; i++) {
        uint64_t r = check_random(&rng_state) % 100; /* elements each list ends with */
        target[i] = (uint32_t)(r < 60 ? 1 + r % 6 : r < 95 ? 7 + r % 16 : 23 + r % 40);
        pushes_left += target[i];
    }
    uint32_t *length = calloc(LISTS, sizeof *length);
    CHECK(length != NULL);
    int intact = 1;
    while (pushes_left > 0) {
        size_t i = check_random(&rng_state) % LISTS;
        if (length[i] == target[i]) continue;
        if (length[i] == capacity[i]) {
            uint32_t grown = capacity[i] < 2 ? 2 : capacity[i] + capacity[i] / 2;
            data[i] = hh_realloc(data[i], (size_t)grown * 8);
            if (data[i] == NULL) abort();
            capacity[i] = grown;
            intact &= length[i] == 0 || data[i][8 * length[i] - 1] == (char)i;
        }
        memset(data[i] + 8 * length[i], (char)i, 8);
        length[i]++;
        pushes_left--;
    }
    CHECK(intact);
    uint64_t live = 0;
    for (size_t i = 0; i < LISTS; i++) live += (uint64_t)capacity[i] * 8;
    struct hh_mallinfo2 info = hh_mallinfo2();
    /* Held: 1.43x the lists' bytes here (their rounding to 16 bytes, the
     * holes between them, the heap's own spans and slack); 1.64x with the
     * lists in size classes (HUGEHEAP_GROWTH_HEAP=off), and glibc's arena
     * 1.52x for the same program. */
    double held = (double)info.arena / (double)live;
    if (held > 1.55) {
        fprintf(stderr, "held %.2fx the lists' %llu bytes\n", held, (unsigned long long)live);
    }
    CHECK(held <= 1.55);
    for (size_t i = 0; i < LISTS; i++) hh_free(data[i]);
    free(length);
}

/* Every size up to 16 KiB and back down keeps the contents. */
static void test_contents_survive(void) {
    unsigned char *p = NULL;
    size_t size = 0;
    int intact = 1;
    for (size_t next = 1; next <= 16384; next += 1 + next / 8) {
        p = hh_realloc(p, next);
        CHECK(p != NULL && hh_usable_size(p) >= next && ((uintptr_t)p & 15) == 0);
        for (size_t i = 0; i < size; i++) intact &= p[i] == (unsigned char)(i * 13);
        for (size_t i = size; i < next; i++) p[i] = (unsigned char)(i * 13);
        size = next;
    }
    for (size_t next = size; next > 0; next /= 3) {
        p = hh_realloc(p, next);
        CHECK(p != NULL && hh_usable_size(p) >= next);
        for (size_t i = 0; i < next; i++) intact &= p[i] == (unsigned char)(i * 13);
    }
    CHECK(intact);
    /* On past the small sizes, and back. */
    p = hh_realloc(p, 100000);
    CHECK(p != NULL && p[0] == 0);
    p = hh_realloc(p, 100);
    CHECK(p != NULL && p[0] == 0);
    hh_free(p);
}

/* The growth heap serves one thread; others may free its blocks, while it
 * goes on growing its own (they take its lock). */
enum { FREERS = 2, HANDED = 20000 };

static char *volatile handed[HANDED];

static void *free_handed(void *arg) {
    size_t me = (size_t)arg;
    for (int freed = (int)me; freed < HANDED; freed += FREERS) {
        char *p;
        while ((p = __atomic_load_n(&handed[freed], __ATOMIC_ACQUIRE)) == NULL) {
        }
        hh_free(p);
    }
    return NULL;
}

static void test_other_threads_free_grown_blocks(void) {
    pthread_t threads[FREERS];
    for (size_t t = 0; t < FREERS; t++) {
        CHECK(pthread_create(&threads[t], NULL, free_handed, (void *)t) == 0);
    }
    char *mine[64] = {0};
    int intact = 1;
    for (int i = 0; i < HANDED; i++) {
        size_t k = (size_t)i % 64;
        size_t size = 16 + (size_t)(i * 37) % 3000;
        char *p = hh_realloc(hh_realloc(NULL, 8), size);
        memset(p, (char)i, size);
        __atomic_store_n(&handed[i], p, __ATOMIC_RELEASE);
        mine[k] = hh_realloc(mine[k], 16 + (size_t)(i * 53) % 2000);
        intact &= mine[k][0] == (char)k || i < 64;
        mine[k][0] = (char)k;
    }
    for (size_t t = 0; t < FREERS; t++) pthread_join(threads[t], NULL);
    CHECK(intact);
    for (size_t k = 0; k < 64; k++) hh_free(mine[k]);
    char *still = hh_realloc(NULL, 300);
    CHECK(hh_usable_size(still) == 304); /* still the growth heap's */
    hh_free(still);
}

/* A second thread that asks closes it: blocks realloc makes go to the size
 * classes from then on (a 300-byte block is 320 bytes there, 304 in the
 * growth heap), in every thread. */
static void *realloc_300(void *arg) {
    (void)arg;
    return hh_realloc(NULL, 300);
}

static void test_second_thread_closes(void) {
    pthread_t thread;
    void *theirs = NULL;
    CHECK(pthread_create(&thread, NULL, realloc_300, NULL) == 0);
    pthread_join(thread, &theirs);
    CHECK(theirs != NULL && hh_usable_size(theirs) == 320);
    char *mine = hh_realloc(NULL, 300);
    CHECK(hh_usable_size(mine) == 320);
    hh_free(theirs);
    hh_free(mine);
}

/* Once the heap has been large (HUGEHEAP_HUGE_THRESHOLD_MB, 32 MiB by
 * default), blocks realloc makes go to the size classes, and blocks of the
 * growth heap move there as they grow.  In a child, so that the parent's
 * growth heap stays open. */
static int closes_once_large(void) {
    char *before = hh_realloc(NULL, 300);
    CHECK(hh_usable_size(before) == 304);
    void *big[6];
    for (int i = 0; i < 6; i++) big[i] = hh_malloc(8 << 20);
    char *after = hh_realloc(NULL, 300);
    CHECK(hh_usable_size(after) == 320);
    memset(before, 'b', 300);
    char *moved = hh_realloc(before, 600);
    CHECK(moved != NULL && moved[299] == 'b' && hh_usable_size(moved) == 640);
    for (int i = 0; i < 6; i++) hh_free(big[i]);
    hh_free(after);
    hh_free(moved);
    return check_summary();
}

static void test_closes_once_large(void) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) _exit(closes_once_large());
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
    test_grows_in_place();
    test_grown_lists_reuse_memory();
    test_contents_survive();
    test_closes_once_large();
    test_other_threads_free_grown_blocks();
    test_second_thread_closes(); /* last: the growth heap stays closed */
    return check_summary();
}

/* A program for the preload tests: it allocates through plain malloc (so it
 * measures whichever allocator is preloaded or linked) and reports what the
 * kernel says of its memory.
 *
 *   alloc_probe touch MIB   allocate and touch MIB MiB in blocks of mixed
 *                           sizes; print "anon_kb=N huge_kb=N"
 *   alloc_probe threads     allocate and free from several threads
 *   alloc_probe grow MIB    grow one array by doubling to MIB MiB, as a C++
 *                           vector grows (a new copy, the old one freed);
 *                           print "peak_kb=N" (VmHWM)
 *   alloc_probe early MIB   allocate and touch one block of MIB MiB, then a
 *                           second; print "anon_kb=N huge_kb=N" (run with the
 *                           huge threshold between one block and two, the
 *                           first is mapped small and the second promotes)
 *   alloc_probe sparse MIB  allocate MIB MiB in blocks of 400,000 bytes and
 *                           write a tenth of each, as ABC's pdr does; print
 *                           "anon_kb=N huge_kb=N"
 *   alloc_probe arrays MIB  allocate and fill MIB MiB in blocks of 6 MiB (in
 *                           the page heap: below the large-block size);
 *                           print "anon_kb=N huge_kb=N"
 *   alloc_probe replace N   keep 8 blocks of 4-20 MiB (random sizes, in the
 *                           page heap), each filled, and replace the oldest
 *                           N times, as mimalloc-bench's malloc-large does
 *   alloc_probe budget MIB MS
 *                           allocate and fill MIB MiB in blocks of 16-4,000
 *                           bytes, then compute for MS ms of CPU time,
 *                           filling a 256 KiB block every 20 ms; print the
 *                           huge pages after the filling and at the end, and
 *                           the CPU time (the budget for huge pages grows
 *                           with it)
 *   alloc_probe realloc FROM TO [STEP_KIB]
 *                           grow one block by realloc from FROM MiB to TO MiB
 *                           in steps of 4 MiB (as MiniSat's clause arena
 *                           grows; or STEP_KIB KiB), then shrink it to a
 *                           quarter of FROM,
 *                           checking every byte kept at each step; keep it
 *                           to the end (the library's exit statistics see it)
 *   alloc_probe block KIB    allocate and fill one block of KIB KiB; print
 *                           the process's pages of the hugetlb pool and its
 *                           anonymous memory: "hugetlb_kb=N anon_kb=N"
 *   alloc_probe handover MIB
 *                           allocate a small heap (about 4 MiB of mixed
 *                           sizes, aligned and zeroed blocks, some from a
 *                           second thread), then MIB MiB more in blocks of
 *                           256 KiB, then grow every block of the small heap
 *                           by realloc, checking contents; free all, and
 *                           allocate in a forked child.  Print how many of
 *                           each group the preloaded library owns (hh_owns):
 *                           "small=N small_ours=N big=N big_ours=N moved_ours=N"
 *                           (where glibc serves a small heap, the small
 *                           blocks are glibc's and the rest the library's)
 *   alloc_probe scatter-blocks MIB THREADS
 *                           allocate and fill MIB MiB in blocks of 20 KiB
 *                           (THREADS 2: with a second thread that never
 *                           allocates), free seven in eight, allocate a
 *                           block every 60 ms for 1.2 s, check every byte
 *                           of the blocks kept; print the pages of the
 *                           hugetlb pool held before the frees and after:
 *                           "hugetlb_kb=N hugetlb_after_kb=N"
 *   alloc_probe arena MIB   fill MIB MiB from one hh_arena of the preloaded
 *                           library, 64 KiB at a time; print "anon_kb=N
 *                           huge_kb=N"
 *   alloc_probe pool MIB    the same from one hh_pool of 256-byte objects
 *   alloc_probe holes MIB [PAUSE_MS [KIB]]
 *                           allocate and fill MIB MiB in blocks of 256 KiB,
 *                           free three in four, then allocate (and free) a
 *                           block of KIB KiB (default 256: it fits a hole;
 *                           bigger, it is placed above them) every PAUSE_MS
 *                           (default 60) for about 1.2 s; print the
 *                           anonymous memory and huge pages before the frees
 *                           and after, and the huge pages the kernel split
 *                           meanwhile (/proc/vmstat)
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc_value.h"

static void smaps_totals(long *anon_kb, long *huge_kb) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    *anon_kb = *huge_kb = -1;
    if (f == NULL) return;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "Anonymous: %ld kB", anon_kb);
        sscanf(line, "AnonHugePages: %ld kB", huge_kb);
    }
    fclose(f);
}

/* The next of a fixed sequence of 31-bit random numbers (a 64-bit LCG's
 * high bits): the probes' sizes are the same in every run. */
static uint64_t next_random(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 33;
}

/* Block sizes as a reasoner's heap has them: many small objects (clauses,
 * watch lists, hash nodes), some medium vectors, a few big arrays. */
static size_t next_size(uint64_t *state, size_t left) {
    uint64_t r = next_random(state);
    size_t size;
    if (r % 1000 < 800) {
        size = 16 + r % 1000;
    } else if (r % 1000 < 997) {
        size = 1024 + r % 65536;
    } else {
        size = ((size_t)1 << 20) + r % ((size_t)16 << 20);
    }
    return size < left ? size : left;
}

static int touch(size_t mib) {
    size_t total = mib << 20, done = 0, count = 0;
    uint64_t state = 42;
    while (done < total) {
        size_t size = next_size(&state, total - done);
        char *p = malloc(size);
        if (p == NULL) {
            fprintf(stderr, "alloc_probe: malloc(%zu) failed\n", size);
            return 1;
        }
        memset(p, 1, size);
        done += size;
        count++;
    }
    long anon_kb, huge_kb;
    smaps_totals(&anon_kb, &huge_kb);
    printf("blocks=%zu anon_kb=%ld huge_kb=%ld\n", count, anon_kb, huge_kb);
    return 0;
}

static long cpu_ms(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000L +
           (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000L;
}

static int budget(size_t mib, long ms) {
    uint64_t state = 7;
    for (size_t done = 0; done < mib << 20;) {
        size_t size = 16 + next_random(&state) % 4000;
        char *p = malloc(size);
        if (p == NULL) return 1;
        memset(p, 1, size);
        done += size;
    }
    long anon_kb, filled_huge_kb, huge_kb;
    smaps_totals(&anon_kb, &filled_huge_kb);
    long start = cpu_ms(), next = start;
    volatile uint64_t sink = 0;
    while (cpu_ms() - start < ms) {
        for (int i = 0; i < 100000; i++) sink += next_random(&state);
        if (cpu_ms() >= next) {
            char *p = malloc((size_t)256 << 10); /* new pages: the policy looks again */
            if (p == NULL) return 1;
            memset(p, 1, (size_t)256 << 10);
            next += 20;
        }
    }
    smaps_totals(&anon_kb, &huge_kb);
    printf("filled_huge_kb=%ld huge_kb=%ld anon_kb=%ld cpu_ms=%ld\n", filled_huge_kb, huge_kb,
           anon_kb, cpu_ms());
    return 0;
}

static long thp_splits(void) { return proc_value("/proc/vmstat", "thp_split_page %ld"); }

/* One block allocated, written and freed: the page heap's operations, on
 * which the release policy runs (kept by the compiler, which would drop a
 * malloc freed unused). */
static void allocate_one(size_t size) {
    char *p = malloc(size);
    if (p == NULL) return;
    p[0] = 1;
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
}

static int holes(size_t mib, long pause_ms, size_t then_kib) {
    enum { BLOCK = 256 << 10, MAX_BLOCKS = 4096 };
    static char *blocks[MAX_BLOCKS];
    size_t count = (mib << 20) / BLOCK;
    if (count > MAX_BLOCKS) count = MAX_BLOCKS;
    for (size_t i = 0; i < count; i++) {
        blocks[i] = malloc(BLOCK);
        if (blocks[i] == NULL) return 1;
        memset(blocks[i], 1, BLOCK);
    }
    /* Time for the dense policy to look at the units (on the next allocations). */
    struct timespec pause = {0, 60 * 1000 * 1000};
    for (int i = 0; i < 4; i++) {
        nanosleep(&pause, NULL);
        allocate_one(BLOCK);
    }
    long anon_kb, huge_kb, splits = thp_splits();
    smaps_totals(&anon_kb, &huge_kb);
    for (size_t i = 0; i < count; i++) {
        if (i % 4 != 0) free(blocks[i]);
    }
    struct timespec between = {pause_ms / 1000, pause_ms % 1000 * 1000 * 1000};
    for (long waited = 0; waited < 1200; waited += pause_ms) {
        nanosleep(&between, NULL);
        allocate_one(then_kib << 10);
    }
    long anon_after_kb, huge_after_kb;
    smaps_totals(&anon_after_kb, &huge_after_kb);
    printf("anon_kb=%ld huge_kb=%ld anon_after_kb=%ld huge_after_kb=%ld splits=%ld\n", anon_kb,
           huge_kb, anon_after_kb, huge_after_kb, thp_splits() - splits);
    for (size_t i = 0; i < count; i += 4) free(blocks[i]);
    return 0;
}

static long peak_kb(void) { return proc_value("/proc/self/status", "VmHWM: %ld kB"); }

static void *wait_for_close(void *fd) {
    char c;
    while (read(*(int *)fd, &c, 1) > 0) continue;
    return NULL;
}

static long hugetlb_kb(void) { return proc_value("/proc/self/status", "HugetlbPages: %ld kB"); }

static int scatter_blocks(size_t mib, int threads) {
    enum { BLOCK = 20 << 10, MAX_BLOCKS = 16384 };
    static unsigned char *blocks[MAX_BLOCKS];
    int pipe_fds[2] = {-1, -1};
    pthread_t waiter;
    if (threads > 1) { /* a second thread that never allocates */
        if (pipe(pipe_fds) != 0 || pthread_create(&waiter, NULL, wait_for_close, &pipe_fds[0]) != 0) {
            return 1;
        }
    }
    size_t count = (mib << 20) / BLOCK;
    if (count > MAX_BLOCKS) count = MAX_BLOCKS;
    for (size_t i = 0; i < count; i++) {
        blocks[i] = malloc(BLOCK);
        if (blocks[i] == NULL) return 1;
        memset(blocks[i], (int)(i * 7 + 1) & 0xff, BLOCK);
    }
    long before_kb = hugetlb_kb();
    for (size_t i = 0; i < count; i++) {
        if (i % 8 != 0) free(blocks[i]);
    }
    struct timespec pause = {0, 60 * 1000 * 1000};
    for (int waited = 0; waited < 1200; waited += 60) {
        nanosleep(&pause, NULL);
        allocate_one(BLOCK);
    }
    long after_kb = hugetlb_kb();
    for (size_t i = 0; i < count; i += 8) {
        for (size_t k = 0; k < BLOCK; k++) {
            if (blocks[i][k] != ((i * 7 + 1) & 0xff)) {
                fprintf(stderr, "alloc_probe: block %zu byte %zu changed\n", i, k);
                return 1;
            }
        }
        free(blocks[i]);
    }
    printf("hugetlb_kb=%ld hugetlb_after_kb=%ld\n", before_kb, after_kb);
    if (threads > 1) {
        close(pipe_fds[1]);
        pthread_join(waiter, NULL);
    }
    return 0;
}

static int one_block(size_t kib) {
    char *block = malloc(kib << 10);
    if (block == NULL) {
        fprintf(stderr, "alloc_probe: malloc(%zu KiB) failed\n", kib);
        return 1;
    }
    memset(block, 1, kib << 10);
    __asm__ volatile("" : : "r"(block) : "memory"); /* the stores stay: freed unread */
    printf("hugetlb_kb=%ld anon_kb=%ld\n", hugetlb_kb(),
           proc_value("/proc/self/status", "RssAnon: %ld kB"));
    free(block);
    return 0;
}

static int grow(size_t mib) {
    size_t size = (size_t)192 << 10;
    char *array = malloc(size);
    if (array == NULL) return 1;
    memset(array, 1, size);
    while (size * 2 <= mib << 20) {
        char *bigger = malloc(size * 2);
        if (bigger == NULL) {
            fprintf(stderr, "alloc_probe: malloc(%zu) failed\n", size * 2);
            return 1;
        }
        memcpy(bigger, array, size);
        memset(bigger + size, 1, size);
        free(array);
        array = bigger;
        size *= 2;
    }
    printf("size_kb=%zu peak_kb=%ld\n", size >> 10, peak_kb());
    free(array);
    return 0;
}

/* The byte at i of a block grown by realloc: a pattern no shift of the
 * block's contents keeps. */
static unsigned char pattern_at(size_t i) { return (unsigned char)(i * 7 + (i >> 12)); }

static int grown_block_holds(const unsigned char *block, size_t size) {
    for (size_t i = 0; i < size; i++) {
        if (block[i] != pattern_at(i)) {
            fprintf(stderr, "alloc_probe: byte %zu of the grown block changed\n", i);
            return 0;
        }
    }
    return 1;
}

static int grow_by_realloc(size_t from_mib, size_t to_mib, size_t step_kib) {
    size_t size = from_mib << 20;
    unsigned char *block = malloc(size);
    if (block == NULL || step_kib == 0) return 1;
    for (size_t i = 0; i < size; i++) block[i] = pattern_at(i);
    while (size + (step_kib << 10) <= to_mib << 20) {
        size_t bigger = size + (step_kib << 10);
        unsigned char *grown = realloc(block, bigger);
        if (grown == NULL) {
            fprintf(stderr, "alloc_probe: realloc(%zu) failed\n", bigger);
            return 1;
        }
        block = grown;
        if (!grown_block_holds(block, size)) return 1;
        for (size_t i = size; i < bigger; i++) block[i] = pattern_at(i);
        size = bigger;
    }
    size_t quarter = (from_mib << 20) / 4;
    block = realloc(block, quarter);
    if (block == NULL || !grown_block_holds(block, quarter)) return 1;
    printf("size_kb=%zu\n", quarter >> 10);
    return 0; /* the block is kept */
}

static int early(size_t mib) {
    char *blocks[2];
    for (int i = 0; i < 2; i++) {
        blocks[i] = malloc(mib << 20);
        if (blocks[i] == NULL) {
            fprintf(stderr, "alloc_probe: malloc(%zu MiB) failed\n", mib);
            return 1;
        }
        memset(blocks[i], 1, mib << 20);
        __asm__ volatile("" : : "r"(blocks[i]) : "memory"); /* the stores stay: freed unread */
    }
    long anon_kb, huge_kb;
    smaps_totals(&anon_kb, &huge_kb);
    printf("anon_kb=%ld huge_kb=%ld\n", anon_kb, huge_kb);
    free(blocks[0]);
    free(blocks[1]);
    return 0;
}

/* MIB MiB in blocks of `block` bytes, the first `written` bytes of each
 * written; prints the process's anonymous memory and the part in huge pages. */
static int fill_blocks(size_t mib, size_t block, size_t written) {
    enum { MAX_BLOCKS = 1 << 14 };
    static char *blocks[MAX_BLOCKS];
    size_t count = (mib << 20) / block;
    if (count > MAX_BLOCKS) count = MAX_BLOCKS;
    for (size_t i = 0; i < count; i++) {
        blocks[i] = malloc(block);
        if (blocks[i] == NULL) {
            fprintf(stderr, "alloc_probe: malloc(%zu) failed\n", block);
            return 1;
        }
        memset(blocks[i], 1, written);
    }
    long anon_kb, huge_kb;
    smaps_totals(&anon_kb, &huge_kb);
    printf("anon_kb=%ld huge_kb=%ld\n", anon_kb, huge_kb);
    for (size_t i = 0; i < count; i++) free(blocks[i]);
    return 0;
}

/* The API's functions, from the preloaded library (the probe links none). */
static void *api_function(const char *name) {
    void *f = dlsym(RTLD_DEFAULT, name);
    if (f == NULL) fprintf(stderr, "alloc_probe: %s not found (is the library preloaded?)\n", name);
    return f;
}

static void *(*arena_alloc)(void *, size_t, size_t);
static void *(*pool_alloc)(void *);

static void *arena_piece(void *arena, size_t size) { return arena_alloc(arena, size, 16); }
static void *pool_piece(void *pool, size_t size) { (void)size; return pool_alloc(pool); }

/* MIB MiB from an arena (64 KiB at a time) or a pool (256-byte objects),
 * each piece written whole; prints the process's anonymous memory and the
 * part in huge pages. */
static int fill_api_heap(bool arena, size_t mib) {
    size_t piece = arena ? (size_t)64 << 10 : 256;
    void *heap = NULL;
    if (arena) {
        void *(*create)(void) = (void *(*)(void))api_function("hh_arena_create");
        arena_alloc = (void *(*)(void *, size_t, size_t))api_function("hh_arena_alloc");
        if (create != NULL && arena_alloc != NULL) heap = create();
    } else {
        void *(*create)(size_t) = (void *(*)(size_t))api_function("hh_pool_create");
        pool_alloc = (void *(*)(void *))api_function("hh_pool_alloc");
        if (create != NULL && pool_alloc != NULL) heap = create(piece);
    }
    if (heap == NULL) {
        fprintf(stderr, "alloc_probe: no %s\n", arena ? "arena" : "pool");
        return 1;
    }
    void *(*take)(void *, size_t) = arena ? arena_piece : pool_piece;
    for (size_t i = 0; i < (mib << 20) / piece; i++) {
        char *p = take(heap, piece);
        if (p == NULL) {
            fprintf(stderr, "alloc_probe: allocation %zu of the %s failed\n", i,
                    arena ? "arena" : "pool");
            return 1;
        }
        memset(p, 1, piece);
        __asm__ volatile("" : : "r"(p) : "memory"); /* the stores stay: never read */
    }
    long anon_kb, huge_kb;
    smaps_totals(&anon_kb, &huge_kb);
    printf("anon_kb=%ld huge_kb=%ld\n", anon_kb, huge_kb);
    return 0;
}

static int replace(size_t times) {
    enum { LIVE = 8 };
    char *live[LIVE] = {0};
    uint64_t state = 42;
    for (size_t i = 0; i < times + LIVE; i++) {
        free(live[i % LIVE]);
        size_t size = ((size_t)4 << 20) + next_random(&state) % ((size_t)16 << 20);
        live[i % LIVE] = malloc(size);
        if (live[i % LIVE] == NULL) {
            fprintf(stderr, "alloc_probe: malloc(%zu) failed\n", size);
            return 1;
        }
        memset(live[i % LIVE], 1, size);
    }
    for (int k = 0; k < LIVE; k++) free(live[k]);
    return 0;
}

/* MIB MiB of small blocks, then all freed but one block in every eighth
 * 64 KiB page, then a 64 MiB block written: the peak comes after the
 * thinning, with the regions' units an eighth in use. */
static int scatter(size_t mib) {
    enum { BLOCK = 1000, PER_PAGE = 64, KEEP_EVERY = 8 * PER_PAGE };
    size_t count = (mib << 20) / 1024;
    char **blocks = malloc(count * sizeof *blocks);
    if (blocks == NULL) return 1;
    for (size_t i = 0; i < count; i++) {
        blocks[i] = malloc(BLOCK);
        if (blocks[i] == NULL) return 1;
        memset(blocks[i], 1, BLOCK);
    }
    for (size_t i = 0; i < count; i++) {
        if (i % KEEP_EVERY != 0) free(blocks[i]);
    }
    char *big = malloc((size_t)64 << 20);
    if (big == NULL) return 1;
    memset(big, 1, (size_t)64 << 20);
    __asm__ volatile("" : : "r"(big) : "memory");
    free(big);
    puts("done");
    return 0;
}

static void *worker(void *arg) {
    uintptr_t id = (uintptr_t)arg;
    void *slots[256] = {0};
    for (unsigned i = 0; i < 200000; i++) {
        unsigned k = (i * 40503u + (unsigned)id) % 256;
        free(slots[k]);
        slots[k] = malloc(8 + (i * 2654435761u) % 4000);
    }
    for (int k = 0; k < 256; k++) free(slots[k]);
    return NULL;
}

static int threads(void) {
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    void *big = malloc(64 << 20);
    memset(big, 1, 64 << 20);
    big = realloc(big, 200 << 20);
    free(big);
    puts("done");
    return 0;
}

/* ---------------------------------------------------------------- handover */

#define SMALL_BLOCKS 6000

typedef struct small_heap {
    unsigned char *block[SMALL_BLOCKS];
    size_t size[SMALL_BLOCKS];
} small_heap;

static unsigned char fill_of(size_t i) { return (unsigned char)(i * 131 + 7); }

/* Blocks i = from, from + step, ... of mixed sizes (16 B to 20 KiB), every
 * 97th calloc'd, every 89th aligned to 64 and every 401st to 4096. */
static void *make_small(void *arg) {
    small_heap *heap = arg;
    for (size_t i = 1; i < SMALL_BLOCKS; i += 2) {
        size_t size = 16 + (i * 2654435761u) % (i % 10 == 0 ? 20000 : 600);
        unsigned char *p;
        if (i % 97 == 0) {
            p = calloc(1, size);
            for (size_t k = 0; p != NULL && k < size; k++) {
                if (p[k] != 0) return "calloc's block not zeroed";
            }
        } else if (i % 401 == 0) {
            if (posix_memalign((void **)&p, 4096, size) != 0) p = NULL;
        } else if (i % 89 == 0) {
            p = aligned_alloc(64, (size + 63) & ~(size_t)63);
        } else {
            p = malloc(size);
        }
        if (p == NULL) return "out of memory";
        if ((i % 401 == 0 && (uintptr_t)p % 4096 != 0) || (i % 89 == 0 && (uintptr_t)p % 64 != 0)) {
            return "a block not aligned as asked";
        }
        if (malloc_usable_size(p) < size) return "malloc_usable_size below the size asked";
        memset(p, fill_of(i), size);
        heap->block[i] = p;
        heap->size[i] = size;
    }
    return NULL;
}

typedef struct small_half {
    small_heap *heap;
    size_t from;
} small_half;

static void *make_small_half(void *arg) {
    small_half *half = arg;
    small_heap *heap = half->heap;
    /* make_small's odd indices; this thread takes the even ones. */
    for (size_t i = half->from; i < SMALL_BLOCKS; i += 2) {
        size_t size = 16 + (i * 2654435761u) % 300;
        heap->block[i] = malloc(size);
        if (heap->block[i] == NULL) return "out of memory";
        memset(heap->block[i], fill_of(i), size);
        heap->size[i] = size;
    }
    return NULL;
}

static bool holds(const unsigned char *p, size_t size, unsigned char value) {
    for (size_t k = 0; k < size; k++) {
        if (p[k] != value) return false;
    }
    return true;
}

static int handover(size_t big_mib) {
    bool (*owns)(const void *) = (bool (*)(const void *))dlsym(RTLD_DEFAULT, "hh_owns");
    if (owns == NULL) {
        fprintf(stderr, "handover: hh_owns not found (is the library preloaded?)\n");
        return 1;
    }
    static small_heap heap;
    pthread_t other;
    small_half half = {&heap, 0};
    pthread_create(&other, NULL, make_small_half, &half);
    const char *problem = make_small(&heap);
    void *other_problem;
    pthread_join(other, &other_problem);
    if (problem == NULL) problem = other_problem;
    if (problem != NULL) {
        fprintf(stderr, "handover: small heap: %s\n", problem);
        return 1;
    }
    unsigned small_ours = 0;
    for (size_t i = 0; i < SMALL_BLOCKS; i++) small_ours += owns(heap.block[i]);
    /* A small block resized while the heap is small. */
    heap.block[0] = realloc(heap.block[0], heap.size[0] + 100);
    if (heap.block[0] == NULL || !holds(heap.block[0], heap.size[0], fill_of(0))) {
        fprintf(stderr, "handover: realloc lost a small block's contents\n");
        return 1;
    }
    memset(heap.block[0] + heap.size[0], fill_of(0), 100);
    heap.size[0] += 100;

    size_t big_count = big_mib * 4;
    unsigned char **big = malloc(big_count * sizeof *big);
    if (big == NULL) return 1;
    unsigned big_ours = 0;
    for (size_t i = 0; i < big_count; i++) {
        big[i] = malloc(256 << 10);
        if (big[i] == NULL) return 1;
        memset(big[i], 3, 256 << 10);
        big_ours += owns(big[i]);
    }
    /* Every small block grown (moved into the library once it serves). */
    unsigned moved_ours = 0;
    for (size_t i = 0; i < SMALL_BLOCKS; i++) {
        unsigned char *grown = realloc(heap.block[i], heap.size[i] * 3 + 64);
        if (grown == NULL || !holds(grown, heap.size[i], fill_of(i))) {
            fprintf(stderr, "handover: realloc lost block %zu's contents\n", i);
            return 1;
        }
        moved_ours += owns(grown);
        heap.block[i] = grown;
    }
    for (size_t i = 0; i < SMALL_BLOCKS; i++) free(heap.block[i]);
    for (size_t i = 0; i < big_count; i++) free(big[i]);
    free(big);
    pid_t child = fork();
    if (child == 0) {
        void *p = malloc(1000), *q = malloc(1 << 20);
        free(p);
        free(q);
        _exit(p != NULL && q != NULL ? 0 : 1);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "handover: the forked child failed\n");
        return 1;
    }
    printf("small=%d small_ours=%u big=%zu big_ours=%u moved_ours=%u\n", SMALL_BLOCKS, small_ours,
           big_count, big_ours, moved_ours);
    return 0;
}

/* Blocks of 3500 bytes, every other one freed, then as many of 3000 in the
 * main thread of a small heap: with lending, a larger class's freed blocks
 * serve them (the stats' lent_allocs counts them). */
static int lend(unsigned count) {
    void **larger = calloc(count, sizeof *larger);
    void **smaller = calloc(count, sizeof *smaller);
    if (larger == NULL || smaller == NULL) return 1;
    for (unsigned i = 0; i < count; i++) {
        larger[i] = malloc(3500);
        if (larger[i] == NULL) return 1;
        memset(larger[i], 1, 3500);
    }
    for (unsigned i = 0; i < count; i += 2) free(larger[i]);
    for (unsigned i = 0; i < count / 2; i++) {
        smaller[i] = malloc(3000);
        if (smaller[i] == NULL) return 1;
        memset(smaller[i], 2, 3000);
    }
    for (unsigned i = 0; i < count / 2; i++) free(smaller[i]);
    for (unsigned i = 1; i < count; i += 2) free(larger[i]);
    free(larger);
    free(smaller);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "lend") == 0) return lend((unsigned)strtoul(argv[2], NULL, 10));
    if (argc >= 3 && strcmp(argv[1], "touch") == 0) return touch(strtoul(argv[2], NULL, 10));
    if (argc >= 2 && strcmp(argv[1], "threads") == 0) return threads();
    if (argc >= 3 && strcmp(argv[1], "scatter") == 0) return scatter(strtoul(argv[2], NULL, 10));
    if (argc >= 3 && strcmp(argv[1], "block") == 0) return one_block(strtoul(argv[2], NULL, 10));
    if (argc >= 3 && strcmp(argv[1], "grow") == 0) return grow(strtoul(argv[2], NULL, 10));
    if (argc >= 4 && strcmp(argv[1], "realloc") == 0) {
        return grow_by_realloc(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10),
                               argc >= 5 ? strtoul(argv[4], NULL, 10) : 4096);
    }
    if (argc >= 3 && strcmp(argv[1], "early") == 0) return early(strtoul(argv[2], NULL, 10));
    if (argc >= 3 && strcmp(argv[1], "sparse") == 0) {
        return fill_blocks(strtoul(argv[2], NULL, 10), 400000, 40000);
    }
    if (argc >= 3 && strcmp(argv[1], "arrays") == 0) {
        return fill_blocks(strtoul(argv[2], NULL, 10), (size_t)6 << 20, (size_t)6 << 20);
    }
    if (argc >= 3 && strcmp(argv[1], "holes") == 0) {
        long pause_ms = argc >= 4 ? strtol(argv[3], NULL, 10) : 60;
        size_t then_kib = argc >= 5 ? strtoul(argv[4], NULL, 10) : 256;
        return holes(strtoul(argv[2], NULL, 10), pause_ms > 0 ? pause_ms : 60,
                     then_kib > 0 ? then_kib : 256);
    }
    if (argc >= 3 && (strcmp(argv[1], "arena") == 0 || strcmp(argv[1], "pool") == 0)) {
        return fill_api_heap(strcmp(argv[1], "arena") == 0, strtoul(argv[2], NULL, 10));
    }
    if (argc >= 4 && strcmp(argv[1], "scatter-blocks") == 0) {
        return scatter_blocks(strtoul(argv[2], NULL, 10), atoi(argv[3]));
    }
    if (argc >= 3 && strcmp(argv[1], "replace") == 0) return replace(strtoul(argv[2], NULL, 10));
    if (argc >= 3 && strcmp(argv[1], "handover") == 0) return handover(strtoul(argv[2], NULL, 10));
    if (argc >= 4 && strcmp(argv[1], "budget") == 0) {
        return budget(strtoul(argv[2], NULL, 10), strtol(argv[3], NULL, 10));
    }
    fprintf(stderr, "usage: alloc_probe touch MIB | threads | grow MIB | early MIB | sparse MIB | "
                    "arrays MIB | arena MIB | pool MIB | scatter-blocks MIB THREADS | replace N | "
                    "budget MIB MS | handover MIB | lend N\n");
    return 2;
}

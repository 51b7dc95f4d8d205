/* The malloc family's observable semantics, checked against what glibc does.
 *
 * Built twice: calling the hh_ names (also under AddressSanitizer/UBSan,
 * where the sanitizer owns malloc), and calling the standard names in a
 * program linked with libhugeheap.a, which proves the overrides reach us. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "proc_value.h"
#include "hugeheap.h"

#ifdef TEST_STANDARD_NAMES
void free_sized(void *ptr, size_t size);
void free_aligned_sized(void *ptr, size_t alignment, size_t size);
#define T_MALLOC malloc
#define T_FREE free
#define T_CALLOC calloc
#define T_REALLOC realloc
#define T_REALLOCARRAY reallocarray
#define T_MEMALIGN memalign
#define T_POSIX_MEMALIGN posix_memalign
#define T_ALIGNED_ALLOC aligned_alloc
#define T_VALLOC valloc
#define T_PVALLOC pvalloc
#define T_USABLE malloc_usable_size
#define T_FREE_SIZED free_sized
#define T_FREE_ALIGNED_SIZED free_aligned_sized
#define T_TRIM malloc_trim
#else
#define T_MALLOC hh_malloc
#define T_FREE hh_free
#define T_CALLOC hh_calloc
#define T_REALLOC hh_realloc
#define T_REALLOCARRAY hh_reallocarray
#define T_MEMALIGN hh_memalign
#define T_POSIX_MEMALIGN hh_posix_memalign
#define T_ALIGNED_ALLOC hh_aligned_alloc
#define T_VALLOC hh_valloc
#define T_PVALLOC hh_pvalloc
#define T_USABLE hh_usable_size
#define T_FREE_SIZED hh_free_sized
#define T_FREE_ALIGNED_SIZED hh_free_aligned_sized
#define T_TRIM hh_trim
#endif

#define MiB ((size_t)1 << 20)

static int aligned(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

/* Sizes at and around every class boundary and the large-block threshold. */
static const size_t interesting_sizes[] = {
    0,      1,       8,       15,      16,       17,       24,         100,     127,
    128,    129,     1000,    4095,    4096,     4097,     8191,       8192,    8193,
    65535,  65536,   65537,   131071,  131072,   131073,   196608,     1 << 20, (31 << 16) - 1,
    31 << 16, (31 << 16) + 1, 2 * MiB - 64, 2 * MiB, 3 * MiB + 5, 17 * MiB,
};
#define N_SIZES (sizeof interesting_sizes / sizeof interesting_sizes[0])

static void test_malloc_basics(void) {
    for (size_t i = 0; i < N_SIZES; i++) {
        size_t size = interesting_sizes[i];
        unsigned char *p = T_MALLOC(size);
        CHECK(p != NULL);
        CHECK(aligned(p, 16));
        CHECK(hh_owns(p));
        CHECK(T_USABLE(p) >= size);
        memset(p, 0xAB, T_USABLE(p)); /* the whole usable size is ours to write */
        T_FREE(p);
    }
    /* malloc(0) gives distinct, freeable pointers. */
    void *a = T_MALLOC(0), *b = T_MALLOC(0);
    CHECK(a != NULL && b != NULL && a != b);
    T_FREE(a);
    T_FREE(b);
    T_FREE(NULL);
    CHECK(T_USABLE(NULL) == 0);
}

static void test_failures_set_enomem(void) {
    size_t impossible[] = {SIZE_MAX, SIZE_MAX - 4096, (size_t)PTRDIFF_MAX + 1, (size_t)1 << 62};
    for (size_t i = 0; i < sizeof impossible / sizeof impossible[0]; i++) {
        errno = 0;
        CHECK(T_MALLOC(impossible[i]) == NULL);
        CHECK(errno == ENOMEM);
        errno = 0;
        CHECK(T_CALLOC(1, impossible[i]) == NULL);
        CHECK(errno == ENOMEM);
        void *p = T_MALLOC(10);
        errno = 0;
        CHECK(T_REALLOC(p, impossible[i]) == NULL);
        CHECK(errno == ENOMEM);
        T_FREE(p); /* a failed realloc leaves the block alone */
    }
    /* Overflowing products never give a short block. */
    errno = 0;
    CHECK(T_CALLOC(SIZE_MAX / 2, 3) == NULL);
    CHECK(errno == ENOMEM);
    errno = 0;
    CHECK(T_CALLOC((size_t)1 << 33, (size_t)1 << 33) == NULL);
    CHECK(errno == ENOMEM);
    void *p = T_MALLOC(32);
    errno = 0;
    CHECK(T_REALLOCARRAY(p, SIZE_MAX / 8, 16) == NULL);
    CHECK(errno == ENOMEM);
    T_FREE(p);
}

static void test_errno_kept_on_success(void) {
    errno = 1234;
    void *p = T_MALLOC(100);
    void *q = T_MALLOC(40 * MiB);
    T_FREE(p);
    T_FREE(q);
    CHECK(errno == 1234);
}

static void test_calloc_zeroes(void) {
    for (size_t i = 0; i < N_SIZES; i++) {
        size_t size = interesting_sizes[i];
        /* Dirty blocks of this size first, so calloc must really clear. */
        for (int k = 0; k < 4; k++) {
            unsigned char *d = T_MALLOC(size);
            memset(d, 0xFF, size);
            T_FREE(d);
        }
        unsigned char *p = T_CALLOC(1, size);
        CHECK(p != NULL);
        int all_zero = 1;
        for (size_t j = 0; j < size; j++) all_zero &= p[j] == 0;
        CHECK(all_zero);
        T_FREE(p);
    }
    /* Many small callocs from fresh pages: the link word must be cleared too. */
    void *blocks[5000];
    int all_zero = 1;
    for (int i = 0; i < 5000; i++) {
        uint64_t *b = T_CALLOC(3, 16);
        all_zero &= b[0] == 0 && b[1] == 0 && b[5] == 0;
        blocks[i] = b;
    }
    CHECK(all_zero);
    for (int i = 0; i < 5000; i++) T_FREE(blocks[i]);
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 31);
}

static int same(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        if (p[i] != (unsigned char)(seed + i * 31)) return 0;
    }
    return 1;
}

static void test_realloc(void) {
    /* NULL behaves as malloc; size 0 frees and returns NULL (glibc). */
    void *p = T_REALLOC(NULL, 50);
    CHECK(p != NULL && hh_owns(p));
    CHECK(T_REALLOC(p, 0) == NULL);

    /* Contents survive every move between classes, spans and large blocks. */
    for (size_t i = 1; i < N_SIZES; i++) {
        for (size_t j = 1; j < N_SIZES; j += 3) {
            size_t from = interesting_sizes[i], to = interesting_sizes[j];
            unsigned char *a = T_MALLOC(from);
            fill(a, from, (unsigned)i);
            unsigned char *b = T_REALLOC(a, to);
            CHECK(b != NULL);
            CHECK(T_USABLE(b) >= to);
            CHECK(same(b, from < to ? from : to, (unsigned)i));
            T_FREE(b);
        }
    }
    size_t n = 10;
    int *arr = T_REALLOCARRAY(NULL, n, sizeof(int));
    for (size_t i = 0; i < n; i++) arr[i] = (int)i;
    arr = T_REALLOCARRAY(arr, 1000000, sizeof(int));
    CHECK(arr != NULL && arr[9] == 9);
    T_FREE(arr);
}

/* A block that grows to 1 GiB by realloc keeps its contents; once it is
 * large (from 32 MiB on) it starts on a 2 MiB boundary (its header is in a
 * 4 KiB page before it): it moves by remapping, never to a misaligned place. */
static void test_realloc_growth_to_1gib(void) {
    size_t size = 4096;
    unsigned char *p = T_MALLOC(size);
    fill(p, 4000, 7);
    p[size - 1] = (unsigned char)(size & 0xFF);
    int ok_contents = 1, ok_alignment = 1;
    while (size < 1024 * MiB) {
        size_t next = size + size / 2;
        if (next > 1024 * MiB) next = 1024 * MiB;
        p = T_REALLOC(p, next);
        if (p == NULL) break;
        ok_contents &= same(p, 4000, 7) && p[size - 1] == (unsigned char)(size & 0xFF);
        p[next - 1] = (unsigned char)(next & 0xFF);
        if (next > 32 * MiB) ok_alignment &= aligned(p, 2 * MiB);
        size = next;
    }
    CHECK(p != NULL);
    CHECK(ok_contents);
    CHECK(ok_alignment);
    /* Shrinking keeps the front. */
    p = T_REALLOC(p, 5 * MiB);
    CHECK(p != NULL && same(p, 4000, 7));
    T_FREE(p);
}

static void test_aligned(void) {
    size_t alignments[] = {16, 32, 64, 128, 256, 4096, 8192, 65536, 1 * MiB, 2 * MiB, 4 * MiB};
    size_t sizes[] = {1, 24, 100, 4096, 5000, 70000, 300000, 3 * MiB};
    for (size_t i = 0; i < sizeof alignments / sizeof alignments[0]; i++) {
        for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
            size_t a = alignments[i], s = sizes[j];
            void *p = NULL;
            CHECK(T_POSIX_MEMALIGN(&p, a, s) == 0);
            CHECK(p != NULL && aligned(p, a) && T_USABLE(p) >= s);
            memset(p, 1, s);
            void *q = T_MEMALIGN(a, s);
            CHECK(q != NULL && aligned(q, a) && T_USABLE(q) >= s);
            void *r = T_ALIGNED_ALLOC(a, s);
            CHECK(r != NULL && aligned(r, a) && T_USABLE(r) >= s);
            /* An aligned block grows by realloc with its contents. */
            memset(r, 0x5A, s);
            unsigned char *g = T_REALLOC(r, s * 3);
            CHECK(g != NULL && g[0] == 0x5A && g[s - 1] == 0x5A);
            T_FREE(p);
            T_FREE_ALIGNED_SIZED(q, a, s);
            T_FREE(g);
        }
    }
    /* Interior pointers from aligned allocation, freed in any order, leave
     * the page usable for ordinary blocks. */
    void *many[200];
    for (int i = 0; i < 200; i++) many[i] = T_MEMALIGN(64, 48);
    for (int i = 0; i < 200; i += 2) T_FREE(many[i]);
    for (int i = 1; i < 200; i += 2) T_FREE(many[i]);

    void *p = (void *)1;
    CHECK(T_POSIX_MEMALIGN(&p, 24, 100) == EINVAL); /* not a power of two */
    CHECK(T_POSIX_MEMALIGN(&p, 4, 100) == EINVAL);  /* below sizeof(void *) */
    CHECK(p == (void *)1);                           /* untouched on error */
    errno = 0;
    CHECK(T_POSIX_MEMALIGN(&p, 64, SIZE_MAX - 10) == ENOMEM);
    CHECK(errno == 0); /* posix_memalign reports by return value only */
    /* memalign rounds a non-power-of-two alignment up, as glibc does. */
    void *m = T_MEMALIGN(48, 100);
    CHECK(m != NULL && aligned(m, 64));
    T_FREE(m);
    errno = 0;
    CHECK(T_MEMALIGN(SIZE_MAX / 2 + 2, 10) == NULL);
    CHECK(errno == EINVAL);

    long page = sysconf(_SC_PAGESIZE);
    void *v = T_VALLOC(10);
    CHECK(v != NULL && aligned(v, (size_t)page));
    void *pv = T_PVALLOC(10);
    CHECK(pv != NULL && aligned(pv, (size_t)page) && T_USABLE(pv) >= (size_t)page);
    void *pv0 = T_PVALLOC(0);
    CHECK(pv0 != NULL && T_USABLE(pv0) >= (size_t)page);
    T_FREE(v);
    T_FREE(pv);
    T_FREE_SIZED(pv0, 0);
}

static void test_no_overlap_and_reuse(void) {
    enum { N = 20000 };
    static unsigned char *blocks[N];
    static size_t sizes[N];
    unsigned seed = 12345;
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        sizes[i] = (seed >> 8) % 3000 + 1;
        blocks[i] = T_MALLOC(sizes[i]);
        memset(blocks[i], (unsigned char)i, sizes[i]);
    }
    int intact = 1;
    for (int i = 0; i < N; i++) {
        for (size_t j = 0; j < sizes[i]; j += 97) intact &= blocks[i][j] == (unsigned char)i;
    }
    CHECK(intact);
    for (int i = 0; i < N; i++) T_FREE(blocks[i]);
}

static void test_trim_and_owns(void) {
    void *big[32];
    for (int i = 0; i < 32; i++) {
        big[i] = T_MALLOC(100000);
        memset(big[i], 1, 100000);
    }
    for (int i = 0; i < 32; i++) T_FREE(big[i]);
    T_TRIM(0); /* must not disturb live blocks */
    char *live = T_MALLOC(77);
    strcpy(live, "still here");
    T_TRIM(0);
    CHECK(strcmp(live, "still here") == 0);
    CHECK(hh_owns(live));
    T_FREE(live);
    CHECK(!hh_owns(NULL));
    int on_stack;
    CHECK(!hh_owns(&on_stack));
    struct hh_mallinfo2 info = hh_mallinfo2();
    CHECK(info.arena > 0);
}

/* Blocks of one size freed and allocated again and again (the case the
 * large-block cache serves): calloc still zeroes, contents stay apart. */
static void test_large_churn(void) {
    int zero = 1, kept = 1;
    unsigned char *keep = T_MALLOC(3 * MiB);
    memset(keep, 0x77, 3 * MiB);
    for (int round = 0; round < 20; round++) {
        unsigned char *p = round % 2 ? T_CALLOC(1, 3 * MiB + 4096 * (size_t)round)
                                     : T_MALLOC(3 * MiB + 4096 * (size_t)round);
        CHECK(p != NULL);
        if (round % 2) {
            for (size_t i = 0; i < 3 * MiB; i += 4093) zero &= p[i] == 0;
        }
        memset(p, 0xEE, 3 * MiB);
        T_FREE(p);
        kept &= keep[round * 1000] == 0x77;
    }
    CHECK(zero);
    CHECK(kept);
    T_FREE(keep);
}

/* A large block of 3 MiB the way a solver's growing array becomes one: a
 * medium block grown past 2 MiB by realloc. */
static void *grown_block(void) {
    void *p = T_REALLOC(T_MALLOC(MiB), 3 * MiB);
    CHECK(p != NULL);
    memset(p, 1, 4096);
    return p;
}

/* KiB of the hugetlb pool this process holds (-1 where the kernel does not say). */
static long pool_kib(void) { return proc_value("/proc/self/status", "HugetlbPages: %ld kB"); }

/* Bytes mapped once a churned large block of 3 MiB is freed, against while
 * it was live: all of it if the cache keeps it, none if it is unmapped.
 * *in_pool: the block held pages of the hugetlb pool (HUGEHEAP_THP=hugetlb
 * with a pool reserved). */
static size_t mapped_kept_by_a_free(bool *in_pool) {
    for (int round = 0; round < 4; round++) T_FREE(grown_block()); /* seen churned */
    long pool_before = pool_kib();
    void *p = grown_block();
    *in_pool = pool_kib() > pool_before;
    size_t live = hh_mallinfo2().arena;
    T_FREE(p);
    size_t freed = hh_mallinfo2().arena;
    return freed + 3 * MiB > live ? freed + 3 * MiB - live : 0;
}

/* The large-block cache holds a sixteenth of the memory in use at most: on
 * a small heap a churned block goes back when freed, as under glibc; beside
 * 64 MiB in use it waits in the cache, unless it holds pages of the hugetlb
 * pool: those go back to the pool at once (taken again at the pool's small
 * price, and free for other processes meanwhile). */
static void test_large_cache_bounded_by_the_heap(void) {
    bool in_pool;
    CHECK(mapped_kept_by_a_free(&in_pool) < MiB);
    void *held = T_MALLOC(64 * MiB);
    size_t kept = mapped_kept_by_a_free(&in_pool);
    CHECK(in_pool ? kept < MiB : kept >= 3 * MiB);
    T_FREE(held);
}

/* While the heap is small, a thread takes every other size class above 128
 * bytes (140 bytes get a block of 160, not 144); once the heap has grown past
 * the huge threshold (HUGEHEAP_HUGE_THRESHOLD_MB, 32 MiB by default), its
 * next blocks take every class, and the blocks made before stay good.  Run
 * while the heap is small, before anything leaves freed blocks of 160-280
 * bytes (one would serve the 140 bytes: lending). */
static void test_classes_coarse_while_small(void) {
    char *early = T_MALLOC(140);
    CHECK(early != NULL && T_USABLE(early) == 160);
    memset(early, 'e', 140);
    void *big[5];
    for (int i = 0; i < 5; i++) {
        big[i] = T_MALLOC((size_t)8 << 20);
        CHECK(big[i] != NULL);
    }
    enum { LATER = 600 };
    static void *later[LATER];
    for (int i = 0; i < LATER; i++) {
        later[i] = T_MALLOC(140);
        CHECK(later[i] != NULL);
    }
    CHECK(T_USABLE(later[LATER - 1]) == 144);
    CHECK(early[0] == 'e' && early[139] == 'e');
    for (int i = 0; i < LATER; i++) T_FREE(later[i]);
    for (int i = 0; i < 5; i++) T_FREE(big[i]);
    T_FREE(early);
}

/* While the heap is small, a block freed in a larger class serves a smaller
 * size before new memory is written, as glibc fills its holes with other
 * sizes: blocks of 3000 bytes (the class of 3072) take the freed blocks of
 * 3500 (the class of 3584) while they last; none with HUGEHEAP_LENDING=off.
 * Every other block stays live, so that no page empties and goes.  Run
 * while the heap is small. */
static void test_small_heap_reuses_larger_freed_blocks(void) {
    enum { N = 64 };
    static void *larger[N], *smaller[N / 2];
    for (int i = 0; i < N; i++) {
        larger[i] = T_MALLOC(3500);
        CHECK(larger[i] != NULL && T_USABLE(larger[i]) == 3584);
        memset(larger[i], 'l', 3500);
    }
    for (int i = 0; i < N; i += 2) T_FREE(larger[i]);
    int reused = 0;
    for (int i = 0; i < N / 2; i++) {
        smaller[i] = T_MALLOC(3000);
        CHECK(smaller[i] != NULL);
        memset(smaller[i], 's', 3000);
        reused += T_USABLE(smaller[i]) == 3584;
    }
    const char *lending = getenv("HUGEHEAP_LENDING");
    CHECK(reused == (lending != NULL && strcmp(lending, "off") == 0 ? 0 : N / 2));
    int intact = 1;
    for (int i = 1; i < N; i += 2) intact &= ((char *)larger[i])[3499] == 'l';
    CHECK(intact);
    for (int i = 0; i < N / 2; i++) T_FREE(smaller[i]);
    for (int i = 1; i < N; i += 2) T_FREE(larger[i]);
}

int main(void) {
    test_small_heap_reuses_larger_freed_blocks();
    test_classes_coarse_while_small();
    test_malloc_basics();
    test_large_churn();
    test_large_cache_bounded_by_the_heap();
    test_failures_set_enomem();
    test_errno_kept_on_success();
    test_calloc_zeroes();
    test_realloc();
    test_realloc_growth_to_1gib();
    test_aligned();
    test_no_overlap_and_reuse();
    test_trim_and_owns();
    return check_summary();
}

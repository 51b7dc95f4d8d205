/* Internal structures of libhugeheap.
 *
 * Memory layout in one picture:
 *
 *   segment (2 MiB, 2 MiB-aligned, advised MADV_HUGEPAGE before first touch)
 *   +--------+-------------------------------------------------------------+
 *   | header | slice 0 ... slice 31 (64 KiB each; slice 0 starts after the  |
 *   | 4 KiB  | header)  -- a page is a run of slices holding one size class |
 *   +--------+-------------------------------------------------------------+
 *
 * A block's page is found by arithmetic: the segment is the address rounded
 * down to 2 MiB, the slice is (address - segment) / 64 KiB, and the segment
 * header maps each slice to the first slice of its page.  Blocks larger than
 * the biggest size class get a mapping of their own ("large"), 2 MiB-aligned,
 * with a 64-byte header just before the user's pointer.  A byte map with one
 * entry per 2 MiB of address space says which granules are ours, so that
 * free() of a foreign pointer is caught instead of corrupting memory.
 */
#ifndef HUGEHEAP_INTERNAL_H
#define HUGEHEAP_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HH_LIKELY(x) __builtin_expect(!!(x), 1)
#define HH_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HH_INTERNAL __attribute__((visibility("hidden")))
#define HH_NOINLINE __attribute__((noinline))

/* Invariants written down and checked (mimalloc's mi_assert_internal and
 * mi_assert_expensive): HH_ASSERT at HH_DEBUG >= 1, HH_ASSERT_EXPENSIVE (list
 * and page walks) at HH_DEBUG >= 2.  Debug and sanitizer builds and the test
 * library define HH_DEBUG; release builds compile both to nothing. */
#if defined(HH_DEBUG) && HH_DEBUG >= 1
#define HH_ASSERT(cond) ((cond) ? (void)0 : _hh_assert_failed(#cond, __FILE__, __LINE__))
#else
#define HH_ASSERT(cond) ((void)0)
#endif
#if defined(HH_DEBUG) && HH_DEBUG >= 2
#define HH_ASSERT_EXPENSIVE(cond) HH_ASSERT(cond)
#else
#define HH_ASSERT_EXPENSIVE(cond) ((void)0)
#endif

/* Test points: in the test library (HH_TESTING) a test can run code of its
 * own at a named step of the library, to stop a thread exactly inside a race
 * window.  Elsewhere they compile to nothing. */
#if defined(HH_TESTING)
typedef void (*_hh_test_hook_fn)(const char *point, const void *arg);
__attribute__((visibility("hidden"))) extern _Atomic(_hh_test_hook_fn) _hh_test_hook;
#define HH_TEST_POINT(point, arg)                                                        \
    do {                                                                                 \
        _hh_test_hook_fn hook_ = atomic_load_explicit(&_hh_test_hook, memory_order_acquire); \
        if (hook_ != NULL) hook_(point, arg);                                            \
    } while (0)
#else
#define HH_TEST_POINT(point, arg) ((void)0)
#endif

#define HH_SEGMENT_SHIFT 21
#define HH_SEGMENT_SIZE ((size_t)1 << HH_SEGMENT_SHIFT)
#define HH_SEGMENT_MASK (HH_SEGMENT_SIZE - 1)
#define HH_SLICE_SHIFT 16
#define HH_SLICE_SIZE ((size_t)1 << HH_SLICE_SHIFT)
#define HH_SLICES (HH_SEGMENT_SIZE / HH_SLICE_SIZE)
#define HH_SEGMENT_HEADER 4096
#define HH_OS_PAGE 4096

/* Size classes: 16-byte steps up to 128 bytes, then 8 classes per doubling
 * (at most 12.5% internal waste) up to 128 KiB, then whole-slice spans
 * holding one block each up to 31 slices.  Anything larger is "large". */
#define HH_SMALL_STEP_MAX 128
#define HH_BINNED_MAX ((size_t)128 * 1024)
#define HH_BINNED_CLASSES 88 /* classes 1..88 */
#define HH_SPAN_MIN_SLICES 3
#define HH_SPAN_MAX_SLICES (HH_SLICES - 1)
#define HH_CLASSES (HH_BINNED_CLASSES + 1 + (HH_SPAN_MAX_SLICES - HH_SPAN_MIN_SLICES + 1))
#define HH_MEDIUM_MAX ((size_t)HH_SPAN_MAX_SLICES * HH_SLICE_SIZE)
#define HH_LARGE_HEADER 64
#define HH_MAX_ALLOC ((size_t)PTRDIFF_MAX - 2 * HH_SEGMENT_SIZE)

/* What a 2 MiB granule of address space is to us (the byte map). */
enum {
    HH_GRANULE_FOREIGN = 0,
    HH_GRANULE_SEGMENT = 1, /* a segment of small and medium pages */
    HH_GRANULE_LARGE = 2,   /* holds the user pointer of a large block */
    HH_GRANULE_POOL = 3,    /* a region of hh_pool pages */
};

/* States kept in the low bits of a page's thread_free word. */
enum {
    HH_PAGE_NORMAL = 0,  /* in its heap's queue, or being handled by its owner */
    HH_PAGE_FULL = 1,    /* out of the queue: a remote free must tell the owner */
    HH_PAGE_PENDING = 2, /* a remote free told the owner, who has not looked yet */
};
#define HH_PAGE_STATE_MASK ((uintptr_t)3)

enum hh_thp_mode { HH_THP_ON = 0, HH_THP_OFF = 1, HH_THP_HUGETLB = 2 };

/* A free block of a page.  `next` is stored encoded (_hh_encode: XOR with a
 * secret key, as mimalloc's secure mode and glibc's safe-linking do), so a
 * stray or malicious write of a plain pointer does not become a pointer we
 * hand out; `mark` is _hh_free_mark while the block is free and 0 once it is
 * handed out, so a second free of the same block finds it set.  (Pools keep
 * plain links in `next` and do not use `mark`.) */
typedef struct hh_block {
    struct hh_block *next;
    uintptr_t mark;
} hh_block;

struct hh_heap;
struct hh_segment;

/* Invariants (checked by _hh_page_is_valid in debug builds):
 *   reserved <= capacity, and while the page is in use
 *   used + |free| + |local_free| == reserved (blocks on thread_free count as used
 *   until the owner collects them);
 *   span == capacity * block_size while in use, 0 once retired. */
typedef struct hh_page {
    /* The fast paths' fields first (one cache line). */
    hh_block *free;       /* blocks to hand out */
    hh_block *local_free; /* blocks the owner freed since the last refill */
    char *area;           /* first block */
    uint32_t used;        /* blocks handed out and not yet collected back */
    uint32_t block_size;
    /* capacity * block_size while the page is in use, 0 after: free() takes p
     * for a block of the page only if p - area < span (read by any thread). */
    _Atomic(uint32_t) span;
    uint32_t capacity; /* blocks that fit in the page */
    uint64_t size_magic; /* ceil(2^43 / block_size): offset / block_size = offset * magic >> 43 */
    uint32_t reserved; /* blocks carved so far; the rest are untouched */
    uint8_t class_index;
    uint8_t slice_index;
    uint8_t slice_count;
    _Atomic(bool) in_use;      /* read by other threads to catch invalid frees */
    bool in_queue;             /* in heap->queue[class_index] */
    _Atomic(bool) has_aligned; /* may hold interior pointers from aligned allocation */
    bool fresh;        /* the page's memory was zero when it was set up */
    bool free_is_zero; /* every block on `free` is zero but for its link */
    struct hh_page *next, *prev; /* queue links */
    /* Shared with other threads. */
    _Atomic(uintptr_t) thread_free;  /* remote frees | HH_PAGE_* state */
    _Atomic(struct hh_heap *) heap;  /* owner; NULL while abandoned */
    struct hh_page *pending_next;    /* link in the owner's pending stack */
} hh_page;

typedef struct hh_segment {
    uintptr_t cookie; /* _hh_segment_cookie(segment): catches stray pointers */
    struct hh_heap *heap; /* owner (changes only under the global lock) */
    struct hh_segment *next, *prev; /* in whichever list holds the segment */
    uint32_t free_slices;  /* bit i set: slice i belongs to no page */
    uint32_t dirty_slices; /* bit i set: slice i was written since it was zero */
    uint32_t purge_slices; /* free and dirty, to be given back soon (small pages only) */
    uint32_t used_pages;
    uint8_t list; /* which list holds it (HH_LIST_*) */
    uint8_t hugetlb;
    uint64_t freed_at_ms; /* when it became empty, for the release delay */
    struct hh_page *slice_page[HH_SLICES]; /* slice -> descriptor of its page (or its own) */
    hh_page pages[HH_SLICES];      /* page descriptors, by first slice */
} hh_segment;

enum { HH_LIST_NONE, HH_LIST_SPACE, HH_LIST_FULL, HH_LIST_POOL, HH_LIST_ABANDONED };

typedef struct hh_large {
    uintptr_t cookie;  /* _hh_large_cookie(user pointer) */
    char *map_base;    /* start of the mapping */
    size_t map_size;   /* bytes mapped from map_base */
    size_t usable;     /* bytes from the user pointer to the end of the mapping */
    size_t alignment;  /* alignment the user asked for (>= 16) */
    uint8_t hugetlb;
    uint8_t small_pages; /* mapped while the heap was small: 4 KiB pages */
} hh_large;
_Static_assert(sizeof(hh_large) <= HH_LARGE_HEADER, "large header must fit before the block");
_Static_assert(sizeof(hh_segment) <= HH_SEGMENT_HEADER, "segment header must fit before slice 0");

typedef struct hh_heap_stats {
    uint64_t allocs, frees, remote_frees, reallocs, mremap_moves, mremap_in_place;
} hh_heap_stats;

typedef struct hh_heap {
    hh_page *queue[HH_CLASSES];      /* pages with room, per class (or the empty page) */
    hh_page *queue_tail[HH_CLASSES]; /* last page of each non-empty queue */
    hh_segment *space;          /* owned segments with free slices */
    hh_segment *full;           /* owned segments without free slices */
    hh_segment *cached;         /* one empty segment kept for reuse */
    _Atomic(hh_page *) pending; /* pages that remote frees made non-full */
    uint64_t purge_due_ms;      /* when its segments' purge_slices go back; UINT64_MAX: none */
    struct hh_heap *next_all;   /* every heap ever made (global lock) */
    struct hh_heap *next_free;  /* recycled heaps (global lock) */
    bool alive;
    hh_heap_stats stats;
} hh_heap;

/* ---- configuration and global state (config.c, heap.c) ---- */
typedef struct hh_config {
    enum hh_thp_mode thp;
    bool stats_print;
    char stats_json_path[512]; /* empty: no JSON */
    uint64_t release_delay_ms;
    uint64_t huge_threshold; /* bytes mapped from which memory is advised huge */
    size_t memory_limit;     /* RAM + swap: no block can be larger */
} hh_config;

HH_INTERNAL extern hh_config _hh_cfg;
HH_INTERNAL extern bool _hh_stats_on;
HH_INTERNAL extern hh_page _hh_empty_page;
HH_INTERNAL extern uint64_t _hh_cookie_key;
HH_INTERNAL extern uintptr_t _hh_list_key;  /* free-list links are XORed with it */
HH_INTERNAL extern uintptr_t _hh_free_mark; /* hh_block.mark of a free block */
HH_INTERNAL extern __thread hh_heap *_hh_thread_heap __attribute__((tls_model("initial-exec")));

HH_INTERNAL void _hh_config_read(hh_config *cfg);
HH_INTERNAL void _hh_warn(const char *msg);
HH_INTERNAL __attribute__((noreturn)) void _hh_fatal(const char *msg, const void *ptr);
HH_INTERNAL __attribute__((noreturn)) void _hh_assert_failed(const char *cond, const char *file,
                                                            int line);

/* ---- the global lock (lock.c) ---- */
HH_INTERNAL void _hh_lock(void);
HH_INTERNAL void _hh_unlock(void);
HH_INTERNAL void _hh_lock_before_fork(void);
HH_INTERNAL void _hh_lock_after_fork_parent(void);
HH_INTERNAL void _hh_lock_after_fork_child(void);

/* ---- the operating system (os.c) ---- */
/* size bytes, start + offset aligned; advised huge or not (where it is not
 * hugetlb).  Counted in the mapped statistics. */
HH_INTERNAL void *_hh_os_map_aligned(size_t size, size_t alignment, size_t offset, bool *hugetlb,
                                     bool huge);
HH_INTERNAL void _hh_os_unmap(void *addr, size_t size);
HH_INTERNAL void _hh_os_advise(void *addr, size_t size, bool huge);
HH_INTERNAL void _hh_os_collapse(void *addr, size_t size);
/* Whether memory mapped now, `adding` bytes more, is to be advised huge:
 * THP is on and the heap's committed bytes (pages and large blocks in use,
 * not address space reserved or free slices kept) reached the threshold. */
HH_INTERNAL bool _hh_os_huge_now(size_t adding);
HH_INTERNAL void _hh_os_count_committed(intptr_t delta);
/* True once, for the caller that is to promote the early segments. */
HH_INTERNAL bool _hh_os_take_promotion(void);
HH_INTERNAL void _hh_os_decommit(void *addr, size_t size);
HH_INTERNAL void *_hh_os_map_metadata(size_t size);
HH_INTERNAL uint64_t _hh_clock_ms(void);
HH_INTERNAL void _hh_os_count_mapped(intptr_t delta);

/* ---- the granule map (granule.c) ---- */
/* Makes sure the map has room for [addr, addr + size); false (errno ENOMEM)
 * if the range is beyond the map or a leaf cannot be mapped. */
HH_INTERNAL bool _hh_granule_reserve(const void *addr, size_t size);
/* The range must have been reserved. */
HH_INTERNAL void _hh_granule_set(const void *addr, uint8_t kind);

/* ---- segments (segment.c) ---- */
HH_INTERNAL hh_segment *_hh_segment_acquire(hh_heap *heap);
HH_INTERNAL void _hh_segment_release(hh_heap *heap, hh_segment *segment);
HH_INTERNAL void _hh_segment_to_pool(hh_segment *segment);
HH_INTERNAL void _hh_segment_list_push(hh_segment **list, hh_segment *segment, uint8_t which);
HH_INTERNAL void _hh_segment_list_remove(hh_segment **list, hh_segment *segment);
HH_INTERNAL size_t _hh_segment_purge(bool everything);
HH_INTERNAL hh_segment *_hh_segment_take_abandoned(void);
HH_INTERNAL void _hh_segment_give_abandoned(hh_segment *segment);
/* Once the heap has become large: advises the segments mapped before huge
 * and collapses this thread's into huge pages.  Cheap when there is nothing
 * to do; call with no lock held. */
HH_INTERNAL void _hh_segment_promote_early(void);
/* Gives back the pooled segments whose release delay has passed. */
HH_INTERNAL void _hh_segment_release_due(void);

/* Every segment a heap owns: its space list, then its full list. */
#define HH_FOR_EACH_OWNED_SEGMENT(heap, s)                                          \
    for (unsigned list_ = 0; list_ < 2; list_++)                                    \
        for (hh_segment *s = list_ == 0 ? (heap)->space : (heap)->full; s != NULL; \
             s = s->next)

/* ---- pages and heaps (heap.c) ---- */
HH_INTERNAL void _hh_init(void);
/* Metadata that lives as long as the process (the global lock held). */
HH_INTERNAL void *_hh_meta_alloc_locked(size_t size);
HH_INTERNAL hh_heap *_hh_heap_for_thread(void);
/* size <= HH_MEDIUM_MAX; heap NULL for a thread's first allocation (which
 * may come before the library's constructor: the class is computed here,
 * after initialisation). */
HH_INTERNAL void *_hh_alloc_slow(hh_heap *heap, size_t size, bool zero);
HH_INTERNAL void _hh_page_after_local_free(hh_heap *heap, hh_page *page);
HH_INTERNAL void _hh_free_remote(hh_page *page, hh_block *block);
HH_INTERNAL void _hh_heap_purge_local(hh_heap *heap);
HH_INTERNAL void _hh_heap_stats_sum(hh_heap_stats *sum, uint64_t *threads);

/* ---- large blocks (large.c) ---- */
HH_INTERNAL void *_hh_large_alloc(size_t size, size_t alignment, bool zero);
HH_INTERNAL void _hh_large_free(hh_large *large, void *ptr);
HH_INTERNAL void *_hh_large_realloc(hh_large *large, void *ptr, size_t size);
HH_INTERNAL size_t _hh_large_purge(bool everything);
/* Unmaps cached blocks whose release delay has passed. */
HH_INTERNAL void _hh_large_release_due(void);

/* ---- pools (pool.c) ---- */
HH_INTERNAL void _hh_pools_before_fork(void);
HH_INTERNAL void _hh_pools_after_fork(void);

/* ---- statistics (stats.c) ---- */
typedef struct hh_global_stats {
    _Atomic(int64_t) mapped, mapped_peak;
    _Atomic(int64_t) committed; /* bytes of pages and large blocks in use: the policy's measure */
    _Atomic(int64_t) in_use, in_use_peak;
    _Atomic(uint64_t) large_allocs, large_frees, segments_made, segments_released;
    _Atomic(uint64_t) hugetlb_fallbacks, segments_promoted;
} hh_global_stats;
HH_INTERNAL extern hh_global_stats _hh_gstats;
HH_INTERNAL void _hh_stats_in_use(int64_t delta);
HH_INTERNAL void _hh_counter_add(_Atomic(int64_t) *now, _Atomic(int64_t) *peak, int64_t delta);
HH_INTERNAL void _hh_stats_report_at_exit(void);
HH_INTERNAL void _hh_stats_print(int fd);

/* ---- size classes ---- */
HH_INTERNAL extern uint32_t _hh_class_size[HH_CLASSES];
HH_INTERNAL extern uint8_t _hh_class_slices[HH_CLASSES];
/* The class of every size up to 1 KiB, by (size + 15) / 16: one load. */
#define HH_CLASS_TABLE_MAX 1024
HH_INTERNAL extern uint8_t _hh_class_table[HH_CLASS_TABLE_MAX / 16 + 1];
HH_INTERNAL void _hh_classes_init(void);

/* The arithmetic behind the table, for every size up to HH_MEDIUM_MAX. */
static inline unsigned _hh_size_class_computed(size_t size) {
    if (size <= HH_SMALL_STEP_MAX) return size == 0 ? 1 : (unsigned)((size + 15) >> 4);
    if (size <= HH_BINNED_MAX) {
        size_t w = size - 1;
        unsigned bit = 63u - (unsigned)__builtin_clzll(w); /* 7..16 */
        unsigned sub = (unsigned)(w >> (bit - 3)) & 7u;
        return 8u + ((bit - 7u) << 3) + sub + 1u;
    }
    size_t slices = (size + HH_SLICE_SIZE - 1) >> HH_SLICE_SHIFT;
    return (unsigned)(HH_BINNED_CLASSES + 1 + (slices - HH_SPAN_MIN_SLICES));
}

static inline unsigned _hh_size_class(size_t size) {
    if (HH_LIKELY(size <= HH_CLASS_TABLE_MAX)) return _hh_class_table[(size + 15) >> 4];
    return _hh_size_class_computed(size);
}

/* ---- address arithmetic ---- */
static inline hh_segment *_hh_segment_of(const void *p) {
    return (hh_segment *)((uintptr_t)p & ~(uintptr_t)HH_SEGMENT_MASK);
}

static inline uintptr_t _hh_segment_cookie(const hh_segment *s) {
    return (uintptr_t)s ^ _hh_cookie_key;
}

static inline uintptr_t _hh_large_cookie(const void *user) {
    return ((uintptr_t)user ^ _hh_cookie_key) * 0x9E3779B97F4A7C15ull;
}

/* The granule map: one byte per 2 MiB of the 48-bit address space, in two
 * levels: a root of 4096 leaf pointers in .bss (one per 64 GiB), leaves of
 * 32 KiB mapped when the first granule in their range becomes ours.  A lookup
 * is two dependent loads, as with one flat map behind a pointer, and nothing
 * is mapped at start-up (a failed leaf mapping is an ENOMEM of the allocation
 * that needed it).  Addresses at or above 2^48 are never ours: the kernel
 * hands them out only to programs that ask (x86-64 5-level paging, AArch64
 * 52-bit), and the mappings we make are checked against the limit. */
#define HH_ADDRESS_BITS 48
#define HH_GRANULE_LIMIT ((uintptr_t)1 << HH_ADDRESS_BITS)
#define HH_GRANULE_LEAF_SHIFT 36
#define HH_GRANULE_ROOTS ((size_t)1 << (HH_ADDRESS_BITS - HH_GRANULE_LEAF_SHIFT))
#define HH_GRANULE_LEAF_SIZE ((size_t)1 << (HH_GRANULE_LEAF_SHIFT - HH_SEGMENT_SHIFT))
HH_INTERNAL extern _Atomic(uint8_t *) _hh_granule_root[HH_GRANULE_ROOTS];

static inline uint8_t _hh_granule_kind(const void *p) {
    uintptr_t a = (uintptr_t)p;
    if (HH_UNLIKELY(a >= HH_GRANULE_LIMIT)) return HH_GRANULE_FOREIGN;
    uint8_t *leaf = atomic_load_explicit(&_hh_granule_root[a >> HH_GRANULE_LEAF_SHIFT],
                                         memory_order_acquire);
    if (HH_UNLIKELY(leaf == NULL)) return HH_GRANULE_FOREIGN;
    return atomic_load_explicit((_Atomic(uint8_t) *)&leaf[(a >> HH_SEGMENT_SHIFT) &
                                                         (HH_GRANULE_LEAF_SIZE - 1)],
                                memory_order_relaxed);
}

static inline hh_page *_hh_page_of(hh_segment *segment, const void *p) {
    size_t slice = ((uintptr_t)p - (uintptr_t)segment) >> HH_SLICE_SHIFT;
    return segment->slice_page[slice];
}

#define HH_SIZE_MAGIC_SHIFT 43

/* offset / block_size for offsets within a page (< 2^21): exact, because the
 * magic's rounding error times the offset stays below 2^43. */
static inline size_t _hh_page_block_index(const hh_page *page, size_t offset) {
    return (size_t)((offset * page->size_magic) >> HH_SIZE_MAGIC_SHIFT);
}

static inline hh_block *_hh_encode(const hh_block *p) {
    return (hh_block *)((uintptr_t)p ^ _hh_list_key);
}
#define _hh_decode _hh_encode

static inline hh_large *_hh_large_of(const void *p) {
    return (hh_large *)((const char *)p - HH_LARGE_HEADER);
}

static inline size_t _hh_align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

HH_INTERNAL void _hh_stats_count_alloc(hh_heap *heap, size_t bytes);
HH_INTERNAL void _hh_free_local_counted(hh_heap *heap, hh_page *page, hh_block *block);
/* A free found the block's free mark set: stops with "double free" if the
 * block is on one of the page's free lists (owner: true) or its thread-free
 * list (owner: false); returns if the mark was only the program's data. */
HH_INTERNAL void _hh_free_check_double(hh_page *page, hh_block *block, bool owner);
/* _hh_free_local for a block whose mark is set: the check, then the free
 * (one call in tail position keeps the fast path free of a stack frame). */
HH_INTERNAL void _hh_free_local_marked(hh_heap *heap, hh_page *page, hh_block *block);
HH_INTERNAL __attribute__((noreturn)) void _hh_free_list_corrupted(const void *where);

/* A free by the page's owner: no atomic operation, no lock. */
static inline void _hh_free_local_unmarked(hh_heap *heap, hh_page *page, hh_block *block) {
    block->mark = _hh_free_mark;
    block->next = _hh_encode(page->local_free);
    page->local_free = block;
    if (HH_UNLIKELY(--page->used == 0 || !page->in_queue)) _hh_page_after_local_free(heap, page);
}

static inline void _hh_free_local(hh_heap *heap, hh_page *page, hh_block *block) {
    if (HH_UNLIKELY(block->mark == _hh_free_mark)) {
        _hh_free_local_marked(heap, page, block);
        return;
    }
    _hh_free_local_unmarked(heap, page, block);
}

/* calloc's clearing and the statistics of a block just taken: one call in
 * tail position, so that malloc's fast path needs no stack frame. */
HH_INTERNAL void *_hh_page_pop_finish(hh_heap *heap, hh_page *page, hh_block *block, bool zero);

/* Takes the first block of a page whose free list is not empty.  The next
 * block must lie in the same segment (or be the end of the list): anything
 * else is a corrupted list, and stops the program before it is handed out. */
static inline void *_hh_page_pop(hh_heap *heap, hh_page *page, bool zero) {
    hh_block *block = page->free;
    hh_block *next = _hh_decode(block->next);
    if (HH_UNLIKELY((((uintptr_t)next ^ (uintptr_t)block) >> HH_SEGMENT_SHIFT) != 0) &&
        next != NULL) {
        _hh_free_list_corrupted(block);
    }
    page->free = next;
    page->used++;
    block->mark = 0;
    if (HH_UNLIKELY(zero || _hh_stats_on)) return _hh_page_pop_finish(heap, page, block, zero);
    return block;
}

#endif

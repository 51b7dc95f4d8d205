/* The data structures of libhugeheap, each field with what it means.
 *
 * Memory layout in one picture:
 *
 *   the reserved range (one PROT_NONE reservation at start-up; regions are
 *   committed from it in address order, so "is it ours" is one subtraction
 *   and one comparison)
 *   +-------------------+-------------------+-------------------+----
 *   | region (64 MiB)   | region            | region            | ...
 *   +-------------------+-------------------+-------------------+----
 *
 *   region: 16384 OS pages of 4 KiB, handed out by the page heap (pages.c)
 *   +--------+------------+----------------+------------+---------------+
 *   | header | small page | medium block   | small page | free pages... |
 *   | ~200K  | 64 KiB     | n x 4 KiB      | 64 KiB     |               |
 *   +--------+------------+----------------+------------+---------------+
 *
 * A small page is 64 KiB on a 64 KiB boundary and holds blocks of one size
 * class (up to 16 KiB); its descriptor is the region header's pages[] entry
 * of its 64 KiB slot, so free() finds it by arithmetic alone.  A medium block
 * (16 KiB .. 32 MiB) is a run of whole OS pages placed by address-ordered
 * first fit; the header's span[] entry of its first page records its length.
 * Blocks of 32 MiB and more, and blocks that grew past 2 MiB by realloc, are
 * large: a mapping each, 2 MiB-aligned, growing by mremap (large.c).
 *
 * A region's 2 MiB units become huge pages as they fill (policy.c); the page heap
 * keeps used pages low in each region, so that memory stays dense in whole
 * 2 MiB units and the free ones at the top can go back to the kernel whole.
 */
#ifndef HUGEHEAP_TYPES_H
#define HUGEHEAP_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------- geometry */

#define HH_OS_PAGE_SHIFT 12
#define HH_OS_PAGE ((size_t)1 << HH_OS_PAGE_SHIFT)
#define HH_UNIT_SHIFT 21 /* a huge page: the unit memory is given back in */
#define HH_UNIT ((size_t)1 << HH_UNIT_SHIFT)
#define HH_UNIT_MASK (HH_UNIT - 1)
#define HH_UNIT_PAGES (HH_UNIT >> HH_OS_PAGE_SHIFT)
#define HH_SPAGE_SHIFT 16 /* small pages */
#define HH_SPAGE ((size_t)1 << HH_SPAGE_SHIFT)
#define HH_SPAGE_PAGES (HH_SPAGE >> HH_OS_PAGE_SHIFT)
#define HH_REGION_SHIFT 26
#define HH_REGION ((size_t)1 << HH_REGION_SHIFT)
#define HH_REGION_MASK (HH_REGION - 1)
#define HH_REGION_PAGES (HH_REGION >> HH_OS_PAGE_SHIFT)
#define HH_REGION_SLOTS (HH_REGION >> HH_SPAGE_SHIFT)
#define HH_REGION_UNITS (HH_REGION >> HH_UNIT_SHIFT)
#define HH_REGION_WORDS (HH_REGION_PAGES / 64)

/* Size classes: 16-byte steps up to 128 bytes, then 8 classes per doubling
 * (at most 12.5% rounding) up to 8 KiB, then four classes that divide a
 * 64 KiB page into 7, 6, 5 and 4 blocks.  Sizes above 16 KiB are medium.
 * While the heap is small, a thread's heap takes only every other class
 * between 128 bytes and 8 KiB (4 per doubling, at most 25% rounding; its
 * `coarse`): each class keeps the room its blocks had at their most (a page
 * with a live block stays), and in a process of a few MiB those high-water
 * marks are a large part of its memory.  Once the heap has grown past the
 * huge threshold, rounding costs more than the high-water marks: z3 held
 * 2.6% more at 160 MiB with 4 classes per doubling throughout
 * (docs/notebook/2026-11-28-four-size-classes-per-doubling-while-the-heap-is-small.md). */
#define HH_SMALL_STEP_MAX 128
#define HH_BINNED_MAX 8192
#define HH_SMALL_MAX 16384
#define HH_CLASSES 61 /* 0 is unused: classes 1 .. 60 */
/* The last four classes, above HH_BINNED_MAX: the largest multiple of 16
 * that cuts a small page into `blocks` (7, 6, 5 or 4) blocks, and its class. */
#define HH_SPLIT_SIZE(blocks) ((HH_SPAGE / (blocks)) & ~(size_t)15)
#define HH_SPLIT_CLASS(blocks) (HH_CLASSES + 3u - (blocks))
#define HH_DIRECT_MAX 1024 /* malloc finds the page of sizes up to this directly */
#define HH_DIRECT_SLOTS (HH_DIRECT_MAX / 16 + 1)

#define HH_GROWTH_SPAN ((size_t)256 << 10) /* the growth heap's spans (growth.c) */
#define HH_GROWTH_MALLOC_MIN 1024 /* where it is not off, it takes blocks above this size */
#define HH_GROWTH_CACHE_SIZES 64 /* a thread keeps freed blocks of up to 64 x 16 bytes */
#define HH_GROWTH_CACHE_DEPTH 8  /* ... and at most 8 of each size */

#define HH_LARGE_MIN ((size_t)32 << 20) /* malloc of this much and more: a mapping of its own */
#define HH_LARGE_HEADER 64
#define HH_MAX_ALLOC ((size_t)PTRDIFF_MAX - 2 * HH_REGION)

/* ----------------------------------------------------------- small pages */

/* A free block.  `next` is stored encoded (XOR with a secret key, as
 * mimalloc's secure mode and glibc's safe-linking do), so a stray or hostile
 * write of a plain pointer does not become a pointer we hand out; `mark` is
 * the secret free mark while the block is free (from its carving on) and 0
 * once it is handed out, so a second free of the same block, or a free of
 * one never handed out, finds it set. */
typedef struct hh_block {
    struct hh_block *next;
    uintptr_t mark;
} hh_block;

/* A page of fixed-size blocks as its checks see it (block_page.h): the heap's
 * small pages and hh_pool's pages each describe theirs so. */
typedef struct hh_block_area {
    const char *area; /* the first block */
    size_t end;        /* bytes carved from area on: blocks past it were never handed out */
    size_t block_size;
} hh_block_area;

struct hh_heap;

/* Flags in the low bits of a page's owner word: a local free compares the
 * word with its thread's identity, so that one comparison says "mine, and
 * nothing to do but push". */
enum {
    HH_PAGE_OUT_OF_QUEUE = 1, /* exhausted: a free must put it back in its queue */
    HH_PAGE_ALIGNED = 2,      /* hands out aligned blocks: frees may point inside */
};
#define HH_PAGE_FLAGS ((uintptr_t)3)
/* The owner identity of a thread fork() did not copy (heap.c's
 * _hh_heap_fork_child): aligned like a thread pointer, and none is 4. */
#define HH_THREAD_VANISHED ((uintptr_t)4)

/* States kept in the low bits of a page's thread_free word. */
enum {
    HH_PAGE_NORMAL = 0,  /* in its heap's queue, or being handled by its owner */
    HH_PAGE_FULL = 1,    /* out of the queue: a remote free must tell the owner */
    HH_PAGE_PENDING = 2, /* a remote free told the owner, who has not looked yet */
};
#define HH_PAGE_STATE_MASK ((uintptr_t)3)

/* The descriptor of a 64 KiB small page (the region header's pages[] entry
 * of the page's slot; slots that hold no small page have span 0 and no
 * heap, so every free into them takes the slow path and is checked there).
 *
 * Invariants (_hh_page_is_valid): reserved <= capacity; while the page is in
 * use, used + |free| + |local_free| == reserved (blocks on thread_free count
 * as used until the owner collects them), span == capacity * block_size, and
 * heap is the owner (NULL while abandoned); once retired, span == 0 and
 * heap == NULL. */
typedef struct hh_page {
    /* The fast paths' fields first. */
    hh_block *free;       /* blocks to hand out */
    hh_block *local_free; /* blocks the owner freed since the last refill */
    uint32_t used;        /* blocks handed out and not yet collected back */
    uint32_t block_size;
    /* UINT32_MAX / block_size + 1: an offset below 64 KiB is a multiple of
     * block_size exactly when (uint32_t)(offset * div_magic) < div_magic.
     * div_magic and span are written by the owner with atomic stores and read
     * by it plainly (the free fast path) or by others atomically. */
    uint32_t div_magic;
    uint32_t span;             /* capacity * block_size in use, 0 otherwise */
    /* The owner thread's identity (_hh_thread_id) | HH_PAGE_* flags; 0 while
     * abandoned or retired. */
    _Atomic(uintptr_t) owner;
    uint8_t class_index;
    bool in_kept_list; /* on its heap's list of kept empty pages */
    uint16_t capacity; /* blocks that fit */
    uint16_t reserved; /* blocks carved so far; the rest are untouched */
    bool fresh;        /* the page's memory was zero when it was set up */
    bool free_is_zero; /* every block on `free` is zero but for its link */
    /* Shared with other threads. */
    _Atomic(uintptr_t) thread_free; /* remote frees | HH_PAGE_* state */
    _Atomic(bool) has_aligned;      /* HH_PAGE_ALIGNED, for remote frees */
    uint8_t written_pages;          /* OS pages of it ever written (carved) */
    uint8_t growth;                 /* the slot is in a span of the growth heap (growth.c) */
    uint8_t pad_;
    /* reserved * block_size: a free must point below it (written by the
     * owner with atomic stores; read by it plainly, by others atomically). */
    uint32_t carved_end;
    struct hh_page *next, *prev;       /* in the class queue, or the abandoned list */
    struct hh_page *owned_next, *owned_prev; /* every page its heap owns */
    struct hh_page *pending_next;      /* in the owner's pending stack */
    char *area;                        /* first block: the page's 64 KiB boundary */
    _Atomic(struct hh_heap *) heap;    /* the owner heap; NULL while abandoned or retired */
    uint64_t pad2_;
} hh_page;

/* ---------------------------------------------------------------- regions */

/* A medium block's entry in span[] (at its first page): its length in OS
 * pages, shifted, with the kind and a flag in the low bits.  Every other
 * page: 0. */
#define HH_SPAN_MEDIUM 1u
#define HH_SPAN_KIND_MASK 7u
#define HH_SPAN_GIVES_BACK 8u /* freed, its memory goes back at once (release.c) */
#define HH_SPAN_SHIFT 4

typedef struct hh_region {
    uintptr_t cookie;        /* _hh_region_cookie(region): catches stray pointers */
    struct hh_region *next;  /* every region, in address order (global lock) */
    uint32_t header_pages;   /* OS pages the header occupies at the start */
    uint32_t free_pages;     /* pages not handed out */
    uint32_t dirty_free;     /* free pages that hold memory (written, not given back) */
    uint32_t first_free;     /* no free page below this one */
    uint32_t hugetlb_units;  /* bit u: unit u is backed by explicit huge pages */
    uint32_t touched_units;  /* bit u: unit u has held memory since it was last given back */
    bool cannot_grow;        /* outside the range: the address space after its mapped part
                                is taken */
    uint8_t pad_[3];
    uint32_t mapped_pages;   /* pages mapped from its start (outside the range: maybe not all) */
    uint32_t open_pages;     /* pages writable from its start (in the range: the rest is
                                PROT_NONE until the page heap reaches it; below it,
                                only shut blocks are, release.c) */
    uint32_t huge_units;     /* bit u: unit u was found mostly written and made a huge page */
    uint32_t sparse_units;   /* bit u: unit u was found not mostly written a second time */
    uint8_t pad2_[4];
    uint64_t unit_used_ms[HH_REGION_UNITS]; /* when pages of each unit were last handed out */
    uint32_t unit_checked_at[HH_REGION_UNITS]; /* units touched in the heap when unit u was
                                                  last looked at for a huge page (0: never) */
    uint64_t used[HH_REGION_WORDS];  /* bit i: page i is handed out (or the header) */
    uint64_t dirty[HH_REGION_WORDS]; /* bit i: page i was written since mapped or given back */
    uint32_t span[HH_REGION_PAGES];  /* medium blocks, by first page */
    hh_page pages[HH_REGION_SLOTS];  /* small pages, by 64 KiB slot */
} hh_region;

/* ----------------------------------------------------------------- large */

typedef struct hh_large {
    uintptr_t cookie;   /* _hh_large_cookie(user pointer) */
    char *map_base;     /* start of the mapping */
    size_t map_size;    /* bytes mapped from map_base */
    size_t usable;      /* bytes from the user pointer to the end of the mapping */
    size_t alignment;   /* alignment the user asked for (>= 16) */
    size_t requested;   /* bytes the program asked for (statistics) */
    uint8_t hugetlb;
    _Atomic(uint8_t) small_pages; /* mapped while the heap was small: 4 KiB pages (policy.c's
                                   * list of such blocks holds it until the promotion) */
} hh_large;

/* ------------------------------------------------------------ thread heaps */

/* Written by the heap's thread only, read by the statistics (relaxed). */
typedef struct hh_heap_stats {
    _Atomic(uint64_t) allocs; /* blocks handed out from small pages (counted at refill) */
    _Atomic(uint64_t) remote_frees, reallocs, mremap_moves, mremap_in_place;
    _Atomic(uint64_t) growth_allocs, growth_frees; /* blocks of the growth heap (growth.c) */
    _Atomic(uint64_t) lent; /* small blocks a larger class's page served (heap.c's lending) */
} hh_heap_stats;

#define HH_EMPTY_CACHE 4 /* retired pages a heap keeps for its next pages */

typedef struct hh_heap {
    /* direct[(size + 15) / 16]: the page malloc takes a block of that size
     * from (the first of its class's queue), for sizes up to HH_DIRECT_MAX. */
    hh_page *direct[HH_DIRECT_SLOTS];
    hh_page *queue[HH_CLASSES];      /* pages with room, per class (or the empty page) */
    hh_page *queue_tail[HH_CLASSES]; /* last page of each non-empty queue */
    hh_page *owned;                  /* every page the heap owns */
    /* Pages that were left in their queue when they emptied, oldest first
     * (they may be in use again since: each is looked at when taken). */
    hh_page *kept[HH_CLASSES];
    unsigned kept_count;
    hh_page *empty[HH_EMPTY_CACHE];  /* retired pages for the next page of any class */
    unsigned empty_count;
    _Atomic(hh_page *) pending;      /* pages that remote frees made non-full */
    /* Growth heap blocks this thread freed, kept for its next ones of the
     * same size without the growth heap's lock (growth.c), by granules - 1. */
    hh_block *growth_cache[HH_GROWTH_CACHE_SIZES];
    uint8_t growth_cached[HH_GROWTH_CACHE_SIZES];
    /* While the heap is small, for each class the page of a larger class
     * it last took a freed block from, looked at first next time (heap.c's
     * alloc_freed); NULL for none. */
    hh_page *lender[HH_CLASSES];
    /* The process's first thread (heap_life.c), which lends while it
     * allocates slowly, and whether it does (heap.c's lending). */
    bool first_thread;
    bool lends;
    uint64_t window_allocs;  /* stats.allocs when the window began */
    uint64_t window_cpu_ns;  /* the thread's CPU time then */
    /* 1 while it takes every other class above 128 bytes (HH_CLASSES):
     * direct[] and the class of a size follow it. */
    uint8_t coarse;
    uintptr_t thread_id;             /* its thread's _hh_thread_id */
    struct hh_heap *next_all;        /* every heap ever made (global lock) */
    struct hh_heap *next_free;       /* recycled heaps (global lock) */
    _Atomic(bool) alive;             /* a live thread's (not the empty heap) */
    hh_heap_stats stats;
} hh_heap;

/* ---------------------------------------------------------- configuration */

enum hh_thp_mode { HH_THP_ON = 0, HH_THP_OFF = 1, HH_THP_HUGETLB = 2 };

/* When the budget for huge pages (policy.c) applies: where the library
 * measures them dear (the default), never, or whatever they cost. */
enum hh_huge_budget { HH_BUDGET_AUTO = 0, HH_BUDGET_OFF = 1, HH_BUDGET_ALWAYS = 2 };

/* Which blocks the growth heap takes while it is open (growth.c): none,
 * those over HH_GROWTH_MALLOC_MIN, or also the smaller ones realloc makes
 * or grows. */
enum hh_growth_heap { HH_GROWTH_OFF = 0, HH_GROWTH_BIG = 1, HH_GROWTH_ALL = 2 };

/* Who serves a small heap (glibc_heap.c): the size classes, or glibc's own
 * allocator until the heap passes 8 MiB or the program allocates fast. */
enum hh_small_heaps { HH_SMALL_CLASSES = 0, HH_SMALL_GLIBC = 1 };

typedef struct hh_config {
    enum hh_thp_mode thp;
    bool stats_print;
    char stats_json_path[512]; /* empty: no JSON */
    uint64_t release_delay_ms; /* how long a unit nothing was taken from keeps its free memory */
    uint64_t huge_threshold;   /* bytes in use from which memory is advised huge */
    enum hh_growth_heap growth_heap; /* which blocks the growth heap takes (growth.c) */
    enum hh_small_heaps small_heaps; /* who serves a heap under the threshold (glibc_heap.c) */
    bool lending;              /* a small heap's classes may take larger ones' freed blocks
                                  (heap.c), where the thread allocates slowly */
    bool huge_units_dense;     /* a huge heap's units become huge pages once mostly written
                                  (policy.c), not at their first touch */
    enum hh_huge_budget huge_budget;
    uint64_t huge_budget_share; /* at most 1/share of the CPU time goes to huge pages' cost */
    size_t memory_limit;       /* RAM + swap: no block can be larger */
    uint64_t pool_max;         /* bytes of explicit huge pages the process may hold */
    bool pool_move;            /* a sparse unit's pool page may become 4 KiB pages (release.c) */
    char system_thp[16];       /* the kernel's THP setting at start-up; "" where unknown */
} hh_config;

/* ------------------------------------------------------------- statistics */

/* Process-wide counters (relaxed atomics; the peaks are high-water marks). */
typedef struct hh_global_stats {
    _Atomic(int64_t) mapped, mapped_peak; /* bytes of regions' pages held and large mappings */
    _Atomic(uint64_t) large_allocs, large_frees, medium_allocs, medium_frees;
    _Atomic(uint64_t) regions_made, hugetlb_fallbacks, units_promoted;
    _Atomic(uint64_t) units_into_pool; /* of units_promoted, moved into pool pages (policy.c) */
    _Atomic(uint64_t) hugetlb_bytes;  /* explicit huge pages held now (os.c) */
    _Atomic(uint64_t) hugetlb_capped; /* of the fallbacks, those HUGEHEAP_POOL_MAX_MB made */
    _Atomic(uint64_t) units_populated; /* made huge pages by the library before their first touch */
    _Atomic(uint64_t) huge_cost_ns;  /* what huge pages took beyond 4 KiB pages' cost (policy.c) */
    _Atomic(uint64_t) huge_deferred; /* times the budget for huge pages said wait (policy.c) */
    _Atomic(uint64_t) units_released, units_refaulted; /* 2 MiB units given back / needed again */
    _Atomic(uint64_t) units_split;   /* huge pages split to give back their free pages (release.c) */
    _Atomic(uint64_t) pool_units_moved; /* pool pages replaced by 4 KiB pages, for the same */
    _Atomic(uint64_t) slack_bytes_released; /* given back as free memory beyond the slack bound */
    _Atomic(uint64_t) bytes_released;
    _Atomic(uint64_t) blocks_shut; /* freed big blocks made PROT_NONE (release.c) */
} hh_global_stats;

/* ------------------------------------------------------------------ misc */

/* What a 2 MiB granule of address space outside the reserved range is to us
 * (the granule map; inside the range every address is a region's). */
enum {
    HH_GRANULE_FOREIGN = 0,
    HH_GRANULE_REGION = 1, /* a region mapped outside the reserved range */
    HH_GRANULE_LARGE = 2,  /* holds the user pointer of a large block */
    HH_GRANULE_POOL = 3,   /* a region of hh_pool pages */
};

/* A lock of its own (the pools') with the same fork rules as the global
 * lock (lock.c): the thread that holds every lock across fork may take it
 * again from a prepare handler. */
typedef struct hh_sublock {
    atomic_int word;              /* 0 free, 1 taken */
    _Atomic(const void *) owner;  /* the holder's thread identity */
    unsigned depth;               /* times the holder took it again */
} hh_sublock;

/* The page heap's books, for the statistics. */
typedef struct hh_region_usage {
    uint64_t regions, header_bytes;
    uint64_t used_bytes;         /* pages handed out */
    uint64_t dirty_free_bytes;   /* free pages holding memory */
    uint64_t purgeable_bytes;    /* of those, what the release policy may give back */
    uint64_t touched_unit_bytes; /* 2 MiB units holding memory */
    /* Those units by the share of their pages handed out: [3] 3/4 or more,
     * [2] 1/2 to 3/4, [1] 1/4 to 1/2, [0] less.  Units mostly free while
     * others are in use are memory the page heap holds and cannot give back
     * whole. */
    uint64_t units_by_use[4];
} hh_region_usage;

/* The page heap's books (pages.c's _hh_pageheap, under the global lock but
 * for unwritten_pages, which small pages change as they are carved). */
typedef struct hh_pageheap {
    hh_region *regions;                  /* every region, in address order */
    uint64_t demand_pages;               /* handed out */
    _Atomic(int64_t) unwritten_pages;    /* handed out, not written yet (small pages) */
    uint64_t dirty_free_pages;           /* free and holding memory: the regions' dirty_free */
    uint64_t touched_units;              /* units holding memory (huge heap: resident whole) */
    uint64_t released_units_outstanding; /* given back, not yet needed again */
} hh_pageheap;

/* A run of pages held out of the page heap while its memory goes back to
 * the kernel, or while it is shut (release.c). */
typedef struct hh_purge_run {
    hh_region *region;
    size_t idx, n; /* pages [idx, idx + n) of the region */
} hh_purge_run;

/* A freed large block's mapping kept for reuse (large.c's cache). */
typedef struct hh_cached_mapping {
    char *base;           /* the mapping, header page first */
    size_t size;          /* bytes mapped */
    uint64_t freed_at_ms; /* when the block was freed */
} hh_cached_mapping;

/* A unit the dense policy looks at outside the lock (policy.c). */
typedef struct hh_dense_look {
    hh_region *region;
    size_t unit;                       /* its index in the region */
    uint64_t used[HH_UNIT_PAGES / 64]; /* the unit's pages handed out when picked */
    bool again;                        /* looked at before */
    uint32_t checked_at;               /* when it was looked at before (0: never) */
    bool waits;                        /* not looked at: the budget ran out first */
    bool made_huge;                    /* advised huge and collapsed now */
    bool in_pool_page;                 /* made huge by a move into a pool page */
    size_t unwritten;                  /* pages handed out and not resident */
} hh_dense_look;

/* Large blocks in use and cached, for the statistics. */
typedef struct hh_large_usage {
    uint64_t blocks, requested_bytes, mapped_bytes, cached_bytes;
} hh_large_usage;

/* What a pointer or a size is (kind.h and pointer_kind.h decide). */
typedef enum hh_kind {
    HH_KIND_FOREIGN = 0,  /* not ours (NULL among them) */
    HH_KIND_SMALL,        /* in a small page of a region */
    HH_KIND_MEDIUM,       /* in a region, not in a small page: a medium block's
                             start, or a pointer that is no block (medium.c tells) */
    HH_KIND_GROWTH,       /* in a span of the growth heap (growth.c tells which block) */
    HH_KIND_LARGE,        /* the start of a live large block (its cookie checked) */
    HH_KIND_LARGE_FREED,  /* a large block's granule whose header holds no live
                             block there: freed, or not the block's start */
    HH_KIND_POOL,         /* an hh_pool region's */
} hh_kind;

/* A pointer's kind and the structures that hold it (NULL where they do not
 * apply): region and page for SMALL and MEDIUM, the header for LARGE. */
typedef struct hh_pointer_kind {
    hh_kind kind;
    hh_region *region;
    hh_page *page;
    hh_large *large;
} hh_pointer_kind;

/* A test's code run at a named step of the library (HH_TEST_POINT). */
typedef void (*_hh_test_hook_fn)(const char *point, const void *arg);

#endif

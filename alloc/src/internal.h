/* Internal interface of libhugeheap: the process-wide state and the
 * prototypes, grouped by the file that defines them.  The structures are in
 * types.h; the inline fast paths of malloc and free in fastpath.h.
 *
 * Names: `hh_` is the public API (hugeheap.h), `_hh_` crosses files inside
 * the library, unprefixed statics stay in their file. */
#ifndef HUGEHEAP_INTERNAL_H
#define HUGEHEAP_INTERNAL_H

#include "types.h"

#define HH_LIKELY(x) __builtin_expect(!!(x), 1)
#define HH_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HH_INTERNAL __attribute__((visibility("hidden")))
/* The public entry points (hh_* and the malloc family): seen by the program. */
#define HH_API __attribute__((visibility("default")))
#define HH_NOINLINE __attribute__((noinline))
#define HH_COLD __attribute__((noinline, cold))

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
__attribute__((visibility("hidden"))) extern _Atomic(_hh_test_hook_fn) _hh_test_hook;
#define HH_TEST_POINT(point, arg)                                                        \
    do {                                                                                 \
        _hh_test_hook_fn hook_ = atomic_load_explicit(&_hh_test_hook, memory_order_acquire); \
        if (hook_ != NULL) hook_(point, arg);                                            \
    } while (0)
#else
#define HH_TEST_POINT(point, arg) ((void)0)
#endif

/* ----------------------------------------------- process state (state.c) */

HH_INTERNAL extern hh_config _hh_cfg;
HH_INTERNAL extern bool _hh_stats_on;
HH_INTERNAL extern uint64_t _hh_cookie_key;
HH_INTERNAL extern uintptr_t _hh_list_key;  /* free-list links are XORed with it */
HH_INTERNAL extern uintptr_t _hh_free_mark; /* hh_block.mark of a free block */
/* The reserved range, set once at start-up: p is in it exactly when
 * p - base < size.  It starts with the descriptors of its small pages (one
 * per 64 KiB of the range), then holds the regions. */
HH_INTERNAL extern uintptr_t _hh_range_base, _hh_range_size;
HH_INTERNAL extern hh_page _hh_empty_page;  /* free list always empty */
HH_INTERNAL extern hh_heap _hh_empty_heap;  /* every queue the empty page */
/* The thread's heap; the empty heap until its first allocation. */
HH_INTERNAL extern __thread hh_heap *_hh_heap __attribute__((tls_model("initial-exec")));

/* ---------------------------------------------------------- init.c */
HH_INTERNAL void _hh_init(void);
/* The second step of start-up (fork handlers, the thread key): once, by the
 * first thread that gets here; others wait for it. */
HH_INTERNAL void _hh_late_init(void);

/* ---------------------------------------------------------- meta.c */
/* Metadata that lives as long as the process (the global lock held). */
HH_INTERNAL void *_hh_meta_alloc_locked(size_t size);

/* ----------------------------------------------------- heap_life.c */
/* The heap of the calling thread, made on its first allocation; NULL if no
 * memory for it. */
HH_INTERNAL hh_heap *_hh_heap_for_thread(void);
/* The thread leaves its heap as at its exit (its blocks stay valid; its
 * next malloc finds the empty heap). */
HH_INTERNAL void _hh_heap_leave(void);
/* Creates the thread key whose destructor abandons a thread's heap (start-up). */
HH_INTERNAL void _hh_heap_watch_exits_start(void);
/* The calling thread's live heap is abandoned at its exit (once the key is). */
HH_INTERNAL void _hh_heap_watch_exit(void);
HH_INTERNAL void _hh_heap_stats_sum(hh_heap_stats *sum, uint64_t *threads);
/* Every live heap but `kept` takes the identity HH_THREAD_VANISHED (a forked
 * child's; global lock). */
HH_INTERNAL void _hh_heaps_disown_vanished(const hh_heap *kept);

/* ---------------------------------------------------------- config.c */
HH_INTERNAL void _hh_config_read(hh_config *cfg);

/* ----------------------------------------------------------- stops.c */
/* A line on stderr (no allocation; the program goes on). */
HH_INTERNAL void _hh_warn(const char *msg);
/* One line naming ptr, then abort(). */
HH_INTERNAL __attribute__((noreturn)) void _hh_fatal(const char *msg, const void *ptr);
HH_INTERNAL __attribute__((noreturn)) void _hh_assert_failed(const char *cond, const char *file,
                                                            int line);
/* A sized free named a size larger than the block: not its size. */
HH_INTERNAL __attribute__((noreturn)) void _hh_free_size_mismatch(const void *ptr);
HH_INTERNAL __attribute__((noreturn)) void _hh_free_list_corrupted(const void *where);
/* The same, for malloc's fast path: a tail call (no stack frame for it);
 * never returns. */
HH_INTERNAL void *_hh_free_list_corrupted_at(const void *where);
/* What a free of a pointer that is no live block, or points inside one,
 * says (every kind of block says it alike). */
#define HH_NOT_LIVE "free(): invalid pointer (not a live block; double free?)"
#define HH_INSIDE_BLOCK "free(): invalid pointer (inside a block, not its start)"

/* ------------------------------------------------------------ lock.c */
/* The one global lock: regions and the page heap, abandoned pages, large
 * blocks, the heap list.  Fast paths never take it. */
HH_INTERNAL void _hh_lock(void);
HH_INTERNAL void _hh_unlock(void);
HH_INTERNAL void _hh_lock_before_fork(void);
HH_INTERNAL void _hh_lock_after_fork_parent(void);
HH_INTERNAL void _hh_lock_after_fork_child(void);
/* A lock of its own (the pools') with the same fork rules: the thread that
 * holds every lock across fork may take it again from a prepare handler. */
HH_INTERNAL void _hh_sublock_take(hh_sublock *lock);
HH_INTERNAL void _hh_sublock_give(hh_sublock *lock);
HH_INTERNAL void _hh_sublock_take_for_fork(hh_sublock *lock);
HH_INTERNAL void _hh_sublock_after_fork(hh_sublock *lock, bool child);

/* -------------------------------------------------------------- os.c */
/* size bytes whose start + offset is aligned, advised huge or not (where not
 * hugetlb, which falls back to THP and clears *hugetlb). */
HH_INTERNAL void *_hh_os_map_aligned(size_t size, size_t alignment, size_t offset, bool *hugetlb,
                                     bool huge);
HH_INTERNAL void _hh_os_unmap(void *addr, size_t size);
/* Unmaps a range of which pool_bytes are explicit huge pages (they count
 * against HUGEHEAP_POOL_MAX_MB while mapped). */
HH_INTERNAL void _hh_os_unmap_mapped(void *addr, size_t size, size_t pool_bytes);
/* Memory at exactly addr (where nothing is mapped), or NULL. */
HH_INTERNAL void *_hh_os_map_at(void *addr, size_t size);
/* Address space without memory (PROT_NONE), aligned; NULL if refused. */
HH_INTERNAL void *_hh_os_reserve(size_t size, size_t alignment);
/* Makes part of a reservation writable, keeping its advice (mprotect). */
HH_INTERNAL bool _hh_os_open(void *addr, size_t size);
/* Gives the memory back and makes the range PROT_NONE (keeping its advice). */
HH_INTERNAL bool _hh_os_close(void *addr, size_t size);
/* Maps fresh memory over addr (readable, writable, zero), replacing what
 * was there. */
HH_INTERNAL bool _hh_os_commit(void *addr, size_t size);
/* Explicit huge pages of the pool, mapped anywhere (2 MiB-aligned), size a
 * multiple of 2 MiB; NULL if the pool or HUGEHEAP_POOL_MAX_MB refuses. */
HH_INTERNAL void *_hh_os_map_hugetlb(size_t size);
/* Replaces [addr, addr + size) of a mapping (2 MiB-aligned, whole 2 MiB
 * pages) with explicit huge pages; false, the range as it was, if the pool
 * or the cap refuses. */
HH_INTERNAL bool _hh_os_commit_hugetlb(void *addr, size_t size);
/* Plain memory over a unit of _hh_os_commit_hugetlb's: its page goes
 * back to the kernel's pool.  False (the page kept) if the kernel refused. */
HH_INTERNAL bool _hh_os_uncommit_hugetlb_unit(void *addr);
/* 4 KiB pages in place of a unit's pool page, the pages in_use marks (bit i:
 * page i of the unit) copied; the process must have one thread (release.c). */
HH_INTERNAL bool _hh_os_move_hugetlb_unit_to_small_pages(void *unit, const uint64_t *in_use);
HH_INTERNAL bool _hh_os_move_unit_into_hugetlb(void *unit, const uint64_t *written);
HH_INTERNAL void _hh_os_advise(void *addr, size_t size, bool huge);
HH_INTERNAL void _hh_os_collapse(void *addr, size_t size);
HH_INTERNAL void _hh_os_populate(void *addr, size_t size);
/* Which pages of [addr, addr + size) hold memory: bit 0 of vec[i] for page
 * i (mincore); false where the kernel could not say. */
HH_INTERNAL bool _hh_os_resident(void *addr, size_t size, unsigned char *vec);
HH_INTERNAL void _hh_os_decommit(void *addr, size_t size);
/* Splits the huge page that maps the 4 KiB page at addr (written, in use),
 * so that the kernel frees the parts of it given back now. */
HH_INTERNAL void _hh_os_split_huge(void *page);
HH_INTERNAL void *_hh_os_map_metadata(size_t size);
/* Moves the mapping [addr, addr + size) to target (replacing what was
 * there), new_size bytes long; false if the kernel would not. */
HH_INTERNAL bool _hh_os_move(void *addr, size_t size, void *target, size_t new_size);
/* Grows the mapping at addr to new_size bytes where it is; false (errno
 * kept) if the addresses after it are taken. */
HH_INTERNAL bool _hh_os_grow(void *addr, size_t size, size_t new_size);
/* One read of at most cap bytes of a small kernel file (/proc, /sys): the
 * bytes read, 0 if it cannot be opened or read.  Nothing here allocates. */
HH_INTERNAL size_t _hh_os_read_small_file(const char *path, char *buf, size_t cap);
/* A file read through a fixed buffer, each piece handed to take; false if it
 * cannot be opened. */
HH_INTERNAL bool _hh_os_read_file(const char *path,
                                  void (*take)(void *arg, const char *chunk, size_t n), void *arg);
HH_INTERNAL uint64_t _hh_clock_ms(void);
/* Nanoseconds: the process's CPU time (all threads), the calling thread's CPU
 * time. */
HH_INTERNAL uint64_t _hh_clock_cpu_ns(void);
HH_INTERNAL uint64_t _hh_clock_thread_cpu_ns(void);
/* A program that allocates a block per microsecond of CPU time or faster
 * "allocates fast": the size classes' speed pays there (at two to three
 * times glibc's rate), and a saving of memory that costs the slow path on
 * every block does not (glibc_heap.c, heap.c's lending). */
#define HH_FAST_NS_PER_BLOCK 1000

/* ------------------------------------------------------- granule.c */
/* Makes sure the map has room for [addr, addr + size); false (errno ENOMEM)
 * if the range is beyond the map or a leaf cannot be mapped. */
HH_INTERNAL bool _hh_granule_reserve(const void *addr, size_t size);
/* The range must have been reserved. */
HH_INTERNAL void _hh_granule_set(const void *addr, uint8_t kind);

/* --------------------------------------------------------- range.c */
/* At start-up: the range free() recognises by one comparison. */
HH_INTERNAL void _hh_region_reserve_range(void);
/* A new region (in the range, or mapped elsewhere), in the list; NULL if
 * there is no memory for it.  Global lock held, as for all *_locked. */
HH_INTERNAL hh_region *_hh_region_new_locked(void);
/* A region outside the range that was mapped in part maps more of itself,
 * doubling, if the address space after it is free; whether `need` more
 * pages are mapped now. */
HH_INTERNAL bool _hh_region_grow_locked(hh_region *r, size_t need);
/* Pages [0, end) of r are writable, or false (the kernel refused). */
HH_INTERNAL bool _hh_region_open_to_locked(hh_region *r, size_t end);
/* The region that holds p, or NULL if p is in none (pointer_kind.h asks). */
HH_INTERNAL hh_region *_hh_region_find(const void *p);
/* Every region, in address order (the global lock held while walking). */
HH_INTERNAL hh_region *_hh_region_first(void);
/* The range's page descriptors advised huge (at the promotion) or not. */
HH_INTERNAL void _hh_range_advise_descriptors(bool huge);

/* --------------------------------------------------------- pages.c */
/* The page heap's books (global lock). */
HH_INTERNAL extern hh_pageheap _hh_pageheap;
/* The page heap: whole OS pages from the regions, address-ordered first fit.
 * `align` is in pages (a power of two).  *zero (may be NULL) tells whether
 * every page was zero (never written, or given back since).  NULL with
 * errno ENOMEM if there is no memory. */
HH_INTERNAL void *_hh_pages_alloc(size_t pages, size_t align, bool *zero);
/* As _hh_pages_alloc, and the pages that were written are cleared. */
HH_INTERNAL void *_hh_pages_alloc_zeroed(size_t pages, size_t align);
/* `written`: how many pages from addr on may hold data (the rest were
 * never written since they were handed out). */
HH_INTERNAL void _hh_pages_free(void *addr, size_t pages, size_t written);
/* A medium block freed (`gives_back`, `moved`: release.c's
 * _hh_release_block_locked). */
HH_INTERNAL void _hh_pages_free_block(void *addr, size_t pages, bool gives_back, bool moved);
/* Grows a run in place if the pages after it are free; false otherwise. */
HH_INTERNAL bool _hh_pages_grow(void *addr, size_t pages, size_t new_pages);
/* Frees the tail of a run (written). */
HH_INTERNAL void _hh_pages_shrink(void *addr, size_t pages, size_t new_pages);
/* Records the medium block at addr (span[] entry), with whether it gives
 * its memory back when freed; 0 pages clears it. */
HH_INTERNAL void _hh_pages_set_span(void *addr, size_t pages, bool gives_back);
/* Marks the free pages [idx, idx + n) of r used (handed out, or held while
 * they are given back outside the lock); the count of those that held
 * memory. */
HH_INTERNAL size_t _hh_pages_hold_locked(hh_region *r, size_t idx, size_t n);
/* The used pages [idx, idx + n) of r are free again; `written` of them from
 * idx on may hold data. */
HH_INTERNAL void _hh_pages_free_locked(hh_region *r, size_t idx, size_t n, size_t written);
/* Every region's counts agree with its bitmaps, and the heap's with theirs
 * (HH_ASSERT_EXPENSIVE: walks every bitmap; debug builds only). */
HH_INTERNAL bool _hh_pages_valid_locked(void);

/* -------------------------------------------------------- release.c */
/* Gives back the free memory the release policy says the program will not
 * need (everything: hh_trim); bytes given back.  _locked: with the lock held
 * on entry, and on return (it is let go while the kernel takes the memory). */
HH_INTERNAL size_t _hh_release_pages(bool everything);
HH_INTERNAL size_t _hh_release_locked(bool everything);
/* A medium block freed (`moved`: the old copy of a block realloc moved):
 * shut, or freed and its free units given back, if policy.c's
 * _hh_policy_freed_block_goes_back says so; freed as usual otherwise. */
HH_INTERNAL void _hh_release_block_locked(hh_region *r, size_t idx, size_t n, bool gives_back,
                                          bool moved);
/* Every shut block goes back into the page heap (at the promotion). */
HH_INTERNAL void _hh_release_unshut_all_locked(void);

/* ----------------------------------------------------- glibc_heap.c */
/* Where HUGEHEAP_SMALL_HEAPS=glibc: glibc's functions found (from the
 * constructor only); true if glibc is to serve the heap while it is small. */
HH_INTERNAL bool _hh_glibc_heap_start(void);
/* glibc serves new blocks still (read on slow paths only). */
HH_INTERNAL extern atomic_bool _hh_glibc_serving;
/* Whether glibc is to serve `size` bytes more: it serves, the demand with
 * them stays under 8 MiB (or the huge threshold) and the program does not
 * allocate fast; false from the first request that fails that on (the
 * switch is one way). */
HH_INTERNAL bool _hh_glibc_takes(size_t size);
/* _hh_glibc_takes, without a call where glibc does not serve (the common
 * case): what every allocating path asks first. */
static inline bool _hh_glibc_serves(size_t size) {
    return atomic_load_explicit(&_hh_glibc_serving, memory_order_relaxed) &&
           _hh_glibc_takes(size);
}
/* glibc's block (alignment > 16: memalign's; zero: zeroed), counted. */
HH_INTERNAL void *_hh_glibc_alloc(size_t size, size_t alignment, bool zero);
/* Whether a pointer that is none of ours may be one of glibc's blocks:
 * glibc has served (ptr not NULL).  Its free, realloc and usable size: */
HH_INTERNAL bool _hh_glibc_may_hold(const void *ptr);
HH_INTERNAL void _hh_glibc_free(void *ptr);
HH_INTERNAL void *_hh_glibc_realloc(void *ptr, size_t size);
HH_INTERNAL size_t _hh_glibc_usable(void *ptr);
/* glibc gives back the free memory it holds (malloc_trim). */
HH_INTERNAL void _hh_glibc_trim(void);
/* Bytes of glibc's blocks live (part of _hh_policy_demand), blocks served. */
HH_INTERNAL size_t _hh_glibc_live_bytes(void);
HH_INTERNAL uint64_t _hh_glibc_blocks_served(void);

/* --------------------------------------------------------- policy.c */
/* A unit is dense, and made a huge page, once this many of its pages are
 * handed out and hold memory: a huge page then adds at most a sixteenth of
 * unwritten memory, where making every touched unit huge adds what a
 * program allocates and never writes (ABC's pdr: a third of its heap).
 * A region's units (policy.c) and the arenas' and pools' (api_memory.c). */
#define HH_DENSE_PAGES (HH_UNIT_PAGES - HH_UNIT_PAGES / 16)
/* Whether memory mapped or handed out now, `adding` bytes more, is to be
 * advised huge: THP is on and the demand (pages, blocks, arenas and pools
 * in use) reached the threshold.  The switch is one way. */
HH_INTERNAL bool _hh_policy_huge_now(size_t adding);
HH_INTERNAL void _hh_policy_count_demand(intptr_t delta);
/* Bytes of pages, blocks, arenas and pools in use, glibc's blocks
 * (glibc_heap.c) included. */
HH_INTERNAL size_t _hh_policy_demand(void);
/* The demand is under the huge threshold (whatever the THP mode): where the
 * growth heap is open and threads take the coarse size classes. */
HH_INTERNAL bool _hh_policy_heap_small(void);
/* _hh_policy_huge_now(0), THP not off: the heap has been promoted. */
HH_INTERNAL bool _hh_policy_heap_is_huge(void);
/* Whether memory of regions is advised huge before its first touch. */
HH_INTERNAL bool _hh_policy_regions_huge_at_fault(void);
/* Whether every unit holding memory is a huge page, resident whole (a huge
 * heap but for the dense policy, whose units in 4 KiB pages hold their
 * written pages only). */
HH_INTERNAL bool _hh_policy_every_unit_huge(void);
/* Whether unit u of r can be a huge page, so its free memory goes back only
 * with the whole unit (but for the free memory beyond the release policy's
 * bound, for which release.c splits huge pages at most half in use). */
HH_INTERNAL bool _hh_policy_unit_whole_only(const hh_region *r, size_t u);
/* Pages become writable this many at a time: whole units where a unit may
 * be a huge page. */
HH_INTERNAL size_t _hh_policy_open_step(void);
/* Whether unit u of r has been quiet (nothing handed out from it) for the
 * release delay, or everything is to go. */
HH_INTERNAL bool _hh_policy_unit_quiet(const hh_region *r, size_t u, uint64_t now,
                                       bool everything);
/* The churn detector's first input: whether the 2 MiB units the page heap
 * gives back are seen to be faulted in again; it then gives back no units
 * (a big free's, the slack's). */
HH_INTERNAL bool _hh_policy_giving_back_churns(void);
/* The churn detector's second input, with the lock held: a large block of
 * `size` bytes mapped anew (the cache had none); if the program freed one
 * of about that size within the release delay, the size churns. */
HH_INTERNAL void _hh_policy_large_mapped_locked(size_t size);
/* Whether a freed large block of `size` bytes (one the cache may hold)
 * waits in large.c's cache: its size churns.  Otherwise its free is
 * remembered, for the allocations that come after.  With the lock held. */
HH_INTERNAL bool _hh_policy_large_free_cached_locked(size_t size);
/* Whether a cached large block freed at `freed_at_ms` is due to be unmapped
 * at `now`: the release delay has passed, or everything is to go. */
HH_INTERNAL bool _hh_policy_cached_block_due(uint64_t freed_at_ms, uint64_t now, bool everything);
/* large.c's cache now holds these `count` blocks (with the lock held): when
 * the oldest is due. */
HH_INTERNAL void _hh_policy_cache_changed_locked(const hh_cached_mapping *cache, size_t count);
/* Whether a cached large block is due now (cheap when the cache is empty). */
HH_INTERNAL bool _hh_policy_cache_due(void);
/* Whether a medium block of `pages` allocated now is to give its memory back
 * when freed while the heap is small: as big as glibc's mmap threshold
 * (risen as glibc's does). */
HH_INTERNAL bool _hh_policy_block_gives_back(size_t pages);
/* Whether a medium block of `pages` freed now gives its memory back: a small
 * heap's that `gives_back` (chosen at its allocation), a huge heap's bigger
 * than every one given back before.  The bar rises to it, but for a small
 * heap's realloc's old copy (`moved`). */
HH_INTERNAL bool _hh_policy_freed_block_goes_back(size_t pages, bool gives_back, bool moved);
/* Whether such a block is shut (release.c): a small heap's, but where it
 * lies in explicit huge pages (in_pool_pages: a unit of it is one);
 * otherwise it is freed and the units it leaves free go back. */
HH_INTERNAL bool _hh_policy_freed_block_shut(bool in_pool_pages);
/* Whether the free memory beyond the slack bound goes back now (not while
 * giving back churns): how many free pages that hold memory the heap keeps
 * (*bound_pages), and how long a unit must have been quiet to give back its
 * own (*quiet_ms).  With the lock held. */
HH_INTERNAL bool _hh_policy_slack_goes_back_locked(uint64_t *bound_pages, uint64_t *quiet_ms);
/* Whether unit u of r, a huge page, is to be split to give back its free
 * pages beyond the slack bound. */
HH_INTERNAL bool _hh_policy_unit_worth_splitting(const hh_region *r, size_t u);
/* Unit u of r is in 4 KiB pages from now on: its huge page is split. */
HH_INTERNAL void _hh_policy_unit_split_locked(hh_region *r, size_t u);
/* hugetlb mode: whether sparse units' pool pages may become 4 KiB pages now
 * (one thread), whether unit u of r is one to move, and that it was moved. */
HH_INTERNAL bool _hh_policy_pool_units_movable(void);
HH_INTERNAL bool _hh_policy_pool_unit_worth_moving(const hh_region *r, size_t u);
HH_INTERNAL void _hh_policy_pool_unit_moved_locked(hh_region *r, size_t u);
/* Under the dense policy, the units a run of 2 MiB or more covers whole that
 * hold no memory yet are advised huge, to be made huge pages (populated, while
 * the budget affords it) before it is handed out. */
HH_INTERNAL void _hh_policy_advise_whole_units_locked(hh_region *r, size_t idx, size_t n);
/* Unit u of r holds memory from now on (it did not): hugetlb replaces it,
 * the dense policy looks at the units below it. */
HH_INTERNAL void _hh_policy_unit_touched_locked(hh_region *r, size_t u);
/* A large block mapped in 4 KiB pages while the heap is small, or that the
 * budget for huge pages did not afford, to be made huge later; unlisted
 * when freed or resized. */
HH_INTERNAL void _hh_policy_list_small_block(hh_large *h);
HH_INTERNAL void _hh_policy_unlist_small_block(hh_large *h);
/* Whether a large block's `adding` new bytes are advised huge before their
 * first touch (and `collapsing` bytes it holds in 4 KiB pages collapsed):
 * the heap is huge and the budget for huge pages affords them.  Otherwise
 * the block is in 4 KiB pages and listed, to be collapsed later. */
HH_INTERNAL bool _hh_policy_block_huge(size_t adding, size_t collapsing);
/* Whether a new large block (or an arena's chunk, a pool's region) of
 * `span` bytes is mapped advised huge: the heap is huge, counting it, and
 * something is left of the budget for huge pages. */
HH_INTERNAL bool _hh_policy_new_block_huge(size_t span);
/* A new large block (or an arena's chunk, a pool's region) mapped advised
 * huge: its first 2 MiB are faulted in now, timed, as a sample of what the
 * rest will cost at the program's first touch (a mapping of one unit is
 * that sample whole); the rest stays advised huge if the budget affords it
 * at that cost, which is charged.  False if it was advised small instead
 * (a large block is then to wait on the list for a collapse). */
HH_INTERNAL bool _hh_policy_block_first_unit(char *user, size_t usable);
/* MADV_COLLAPSE, timed: what it takes is what huge pages cost here. */
HH_INTERNAL void _hh_policy_collapse(void *addr, size_t size);
/* What a 2 MiB unit the library made a huge page of (collapsed or
 * populated) took, on average; 0 before the first. */
HH_INTERNAL uint64_t _hh_policy_unit_cost_ns(void);
/* The most one make took beyond 4 KiB pages' cost: the budget, asked at what
 * the last ones cost, may be overdrawn by that much. */
HH_INTERNAL uint64_t _hh_policy_dearest_cost_ns(void);
/* After the heap grew: the promotion, once the heap has become large (regions
 * advised huge and their written units collapsed, large blocks too), and the
 * dense policy's look at units.  Cheap when there is nothing to do; call with
 * no lock held. */
HH_INTERNAL void _hh_policy_promote(void);

/* ---------------------------------------------------------- usage.c */
/* The memory held changed: tell the statistics. */
HH_INTERNAL void _hh_usage_changed_locked(void);
/* Pages handed out (positive) or back (negative): the demand. */
HH_INTERNAL void _hh_usage_demand_locked(int64_t pages);
/* Pages handed out and not written yet (small pages fill as they are
 * carved): held memory is counted without them while the heap is small. */
HH_INTERNAL void _hh_usage_count_unwritten(intptr_t pages);
/* Statistics of the page heap (global lock held by the caller). */
HH_INTERNAL void _hh_usage_regions_locked(hh_region_usage *usage);

/* ---------------------------------------------------------- heap.c */
/* size <= HH_SMALL_MAX: a block from the growth heap while it takes blocks
 * of this size and may_grow (false for aligned blocks, which count on the
 * pages' alignment), else from the thread's pages (slow path). */
HH_INTERNAL void *_hh_alloc_slow(hh_heap *heap, size_t size, bool zero, bool may_grow);
/* free() of a small block that the fast path did not take. */
HH_INTERNAL void _hh_free_small_slow(hh_page *page, void *ptr, size_t size);
/* A free that found the block's free mark set: stops with "double free" if
 * the block is on one of the page's free lists; returns if the mark was
 * only the program's data. */
HH_INTERNAL void _hh_free_check_double(hh_page *page, hh_block *block, bool owner);
HH_INTERNAL void _hh_free_local_slow(hh_heap *heap, hh_page *page, hh_block *block);
/* The owner's free emptied the page or found it out of its queue. */
HH_INTERNAL void _hh_page_after_local_free(hh_heap *heap, hh_page *page);
HH_INTERNAL void _hh_heap_purge_local(hh_heap *heap);
HH_INTERNAL bool _hh_page_is_valid(const hh_page *page);
/* The block of the page that ptr is (or, on pages with aligned blocks,
 * points into), or a stop with one line naming the pointer. */
HH_INTERNAL hh_block *_hh_page_checked_block(hh_page *page, void *ptr, const char *what);
/* In a forked child: the heaps and pages of the threads fork() did not copy
 * belong to no thread from now on (heap.c says why). */
HH_INTERNAL void _hh_heap_fork_child(void);
/* A thread's exit: its pages go to the page heap or to other threads; false
 * if heap is not the calling thread's live heap. */
HH_INTERNAL bool _hh_heap_abandon(hh_heap *heap);
/* A heap whose thread is gone without abandoning it (one that allocated after
 * its last thread-exit handler ran): its pages go on as if it had. */
HH_INTERNAL void _hh_heap_abandon_orphan(hh_heap *heap);

/* --------------------------------------------------------- medium.c */
HH_INTERNAL void *_hh_medium_alloc(size_t size, size_t alignment, bool zero);
HH_INTERNAL void _hh_medium_free(hh_region *region, void *ptr);
HH_INTERNAL size_t _hh_medium_usable(hh_region *region, const void *ptr);
/* Resized in place, or moved (to a large block past 2 MiB); NULL when the
 * caller is to allocate, copy and free. */
HH_INTERNAL void *_hh_medium_realloc(hh_region *region, void *ptr, size_t size);
/* Pages of the medium block at ptr, or 0 if ptr starts none. */
HH_INTERNAL size_t _hh_medium_pages(hh_region *region, const void *ptr);

/* --------------------------------------------------------- growth.c */
/* Whether the growth heap takes a block (of 1-16 KiB, or one realloc makes
 * or grows where HUGEHEAP_GROWTH_HEAP=on): while it is not off
 * (HUGEHEAP_GROWTH_HEAP), until the demand first reaches the size at
 * which the heap turns huge (HUGEHEAP_HUGE_THRESHOLD_MB, whether or not
 * huge pages are on), and while one thread alone has asked.  Blocks already
 * there stay until they grow or are freed (by any thread). */
HH_INTERNAL bool _hh_growth_open(void);
/* Whether the growth heap may still take blocks: not off
 * (HUGEHEAP_GROWTH_HEAP) and not closed; one load for malloc's slow path
 * and realloc. */
HH_INTERNAL extern _Atomic(bool) _hh_growth_taking;
/* size <= HH_SMALL_MAX: a block of the growth heap; NULL (errno ENOMEM) if
 * there is no memory. */
HH_INTERNAL void *_hh_growth_alloc(size_t size, bool zero);
/* size as in _hh_free_fast (0: not a sized free). */
HH_INTERNAL void _hh_growth_free(void *ptr, size_t size);
/* A live block's usable bytes, or a stop with `what` and the pointer. */
HH_INTERNAL size_t _hh_growth_usable(const void *ptr, const char *what);
HH_INTERNAL bool _hh_growth_owns(const void *ptr);
/* size <= HH_SMALL_MAX: resized in place or moved within the growth heap;
 * NULL (errno ENOMEM) if there is no memory, the block untouched. */
HH_INTERNAL void *_hh_growth_realloc(void *ptr, size_t size);
/* The blocks the heap's thread keeps go back to the growth heap (its
 * thread's exit, malloc_trim). */
HH_INTERNAL void _hh_growth_flush(hh_heap *heap);
/* Bytes in live blocks, in spans' pages written, and in spans held (no
 * lock taken: the statistics call it with the global lock held). */
HH_INTERNAL void _hh_growth_usage(uint64_t *live, uint64_t *written, uint64_t *held);
HH_INTERNAL void _hh_growth_before_fork(void);
HH_INTERNAL void _hh_growth_after_fork(bool child);

/* ---------------------------------------------------------- large.c */
HH_INTERNAL void *_hh_large_alloc(size_t size, size_t alignment, bool zero);
HH_INTERNAL void _hh_large_free(hh_large *large, void *ptr);
HH_INTERNAL void *_hh_large_realloc(hh_large *large, void *ptr, size_t size);
HH_INTERNAL size_t _hh_large_purge(bool everything);
/* Takes no lock (the statistics call it with the global lock held). */
HH_INTERNAL void _hh_large_usage(hh_large_usage *usage);

/* ----------------------------------------------------- api_memory.c */
/* A mapping of `size` bytes (whole 2 MiB units, 2 MiB-aligned) for an
 * arena's chunk or a pool's region, in pages as the policy decides (the
 * comment at the top of api_memory.c), counted in the demand and the
 * statistics; *hugetlb: whether it is in pages of the hugetlb pool (to be
 * given to _hh_api_memory_unmap).  NULL where the kernel refuses. */
HH_INTERNAL void *_hh_api_memory_map(size_t size, bool *hugetlb);
HH_INTERNAL void _hh_api_memory_unmap(void *base, size_t size, bool hugetlb);

/* ---------------------------------------------------------- arena.c */
/* The arena's invariants (the comment at the top of arena.c); a walk over
 * its chunks. */
struct hh_arena;
HH_INTERNAL bool _hh_arena_is_valid(const struct hh_arena *arena);

/* ----------------------------------------------------------- pool.c */
HH_INTERNAL void _hh_pools_before_fork(void);
HH_INTERNAL void _hh_pools_after_fork(bool child);

/* ------------------------------------------------------- counters.c */
HH_INTERNAL extern hh_global_stats _hh_gstats;
/* The memory held changed (locked: the global lock is held); with
 * statistics on, a new peak is looked at in detail. */
HH_INTERNAL void _hh_stats_count_mapped(intptr_t delta, bool locked);
HH_INTERNAL void _hh_stats_count_medium(intptr_t delta);
/* hh_pool and hh_arena mappings (counted in the memory held too). */
HH_INTERNAL void _hh_stats_count_api(intptr_t delta);
/* Bytes in medium blocks, and in pools and arenas. */
HH_INTERNAL uint64_t _hh_stats_medium_bytes(void);
HH_INTERNAL uint64_t _hh_stats_api_bytes(void);

/* --------------------------------------------------- stats_report.c */
/* The memory held reached a new peak of `held` bytes (global lock held):
 * the report's breakdown of it is taken now if it passed the last one by
 * 1/32 (a callback of counters.c's: the peak is gone afterwards). */
HH_INTERNAL void _hh_stats_peak_reached_locked(int64_t held);
HH_INTERNAL void _hh_stats_keep_stderr(void);
HH_INTERNAL void _hh_stats_print(int fd);
/* Bytes in blocks in use (pages walked; for mallinfo2 and the peak). */
HH_INTERNAL int64_t _hh_stats_in_use(void);

/* Fields one thread writes and others read (relaxed, no tearing). */
#define HH_SHARED_STORE(field, value) __atomic_store_n(&(field), (value), __ATOMIC_RELAXED)
#define HH_SHARED_LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

static inline struct hh_heap *_hh_page_heap(const hh_page *page) {
    return atomic_load_explicit(&page->heap, memory_order_relaxed);
}

/* The calling thread's identity: its thread pointer, one instruction (unique
 * among live threads; a heap whose thread died without abandoning it is
 * abandoned before a new heap takes the same identity). */
static inline uintptr_t _hh_thread_id(void) {
    uintptr_t tp;
#if defined(__x86_64__)
    __asm__("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
    __asm__("mrs %0, tpidr_el0" : "=r"(tp));
#else
    tp = (uintptr_t)&_hh_heap;
#endif
    return tp;
}

/* A counter only its thread writes: a plain add, readable by any thread. */
static inline void _hh_count(_Atomic(uint64_t) *counter, uint64_t n) {
    atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Raises a high-water mark to `value` if it is below (any thread). */
static inline void _hh_raise_to(_Atomic(int64_t) *mark, int64_t value) {
    int64_t high = atomic_load_explicit(mark, memory_order_relaxed);
    while (value > high && !atomic_compare_exchange_weak_explicit(mark, &high, value,
                                                                  memory_order_relaxed,
                                                                  memory_order_relaxed)) {
    }
}

/* ------------------------------------------------------- arithmetic */

static inline size_t _hh_align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

/* Bitmaps of a region's pages (used[], dirty[]). */
static inline bool _hh_bit(const uint64_t *bits, size_t i) { return bits[i >> 6] >> (i & 63) & 1; }

/* Sets (value true) or clears bits [from, to). */
static inline void _hh_set_bits(uint64_t *bits, size_t from, size_t to, bool value) {
    while (from < to) {
        size_t w = from >> 6, lo = from & 63;
        size_t n = to - from < 64 - lo ? to - from : 64 - lo;
        uint64_t mask = (n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1)) << lo;
        bits[w] = value ? bits[w] | mask : bits[w] & ~mask;
        from += n;
    }
}

static inline size_t _hh_count_bits(const uint64_t *bits, size_t from, size_t to) {
    size_t count = 0;
    while (from < to) {
        size_t w = from >> 6, lo = from & 63;
        size_t n = to - from < 64 - lo ? to - from : 64 - lo;
        uint64_t mask = (n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1)) << lo;
        count += (size_t)__builtin_popcountll(bits[w] & mask);
        from += n;
    }
    return count;
}

/* The first index in [from, to) whose bit is `value`, or `to`. */
static inline size_t _hh_find_bit(const uint64_t *bits, size_t from, size_t to, bool value) {
    while (from < to) {
        size_t w = from >> 6;
        uint64_t word = value ? bits[w] : ~bits[w];
        word &= ~(uint64_t)0 << (from & 63);
        if (word != 0) {
            size_t at = (w << 6) + (size_t)__builtin_ctzll(word);
            return at < to ? at : to;
        }
        from = (w + 1) << 6;
    }
    return to;
}

/* Pages of [from, to) of r that are free and hold memory (written); from
 * and to are multiples of 64. */
static inline size_t _hh_count_dirty_free(const hh_region *r, size_t from, size_t to) {
    size_t count = 0;
    for (size_t w = from >> 6; w < to >> 6; w++) {
        count += (size_t)__builtin_popcountll(r->dirty[w] & ~r->used[w]);
    }
    return count;
}

/* The units the pages [idx, idx + n) of a region overlap (n >= 1), as the
 * region's unit masks hold them: bit u for unit u.  Walked lowest first by
 * `for (uint32_t m = mask; m != 0; m &= m - 1)` with u = ctz(m). */
_Static_assert(HH_REGION_UNITS <= 32, "a region's unit masks are 32 bits");
static inline uint32_t _hh_units_of_pages(size_t idx, size_t n) {
    size_t first = idx / HH_UNIT_PAGES, last = (idx + n - 1) / HH_UNIT_PAGES;
    return (uint32_t)(((uint64_t)2 << last) - ((uint64_t)1 << first));
}

/* The lowest unit of a non-empty unit mask. */
static inline size_t _hh_lowest_unit(uint32_t units) {
    return (size_t)__builtin_ctz(units);
}

/* Whether unit u of r has no page in use (nor held). */
static inline bool _hh_unit_is_free(const hh_region *r, size_t u) {
    size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
    return _hh_find_bit(r->used, from, to, true) == to;
}

static inline hh_block *_hh_encode(const hh_block *p) {
    return (hh_block *)((uintptr_t)p ^ _hh_list_key);
}
#define _hh_decode _hh_encode

/* The granule map: one byte per 2 MiB of the 48-bit address space, in two
 * levels: a root of 4096 leaf pointers in .bss (one per 64 GiB), leaves of
 * 32 KiB mapped when the first granule in their range becomes ours.  Only
 * what lies outside the reserved range is marked there (large blocks, pool
 * regions, regions mapped when the range ran out); free() reads it on its
 * slow path.  Addresses at or above 2^48 are never ours: the kernel hands
 * them out only to programs that ask (x86-64 5-level paging, AArch64 52-bit),
 * and the mappings we make are checked against the limit. */
#define HH_GRANULE_SHIFT 21
#define HH_ADDRESS_BITS 48
#define HH_GRANULE_LIMIT ((uintptr_t)1 << HH_ADDRESS_BITS)
#define HH_GRANULE_LEAF_SHIFT 36
#define HH_GRANULE_ROOTS ((size_t)1 << (HH_ADDRESS_BITS - HH_GRANULE_LEAF_SHIFT))
#define HH_GRANULE_LEAF_SIZE ((size_t)1 << (HH_GRANULE_LEAF_SHIFT - HH_GRANULE_SHIFT))
HH_INTERNAL extern _Atomic(uint8_t *) _hh_granule_root[HH_GRANULE_ROOTS];

static inline uint8_t _hh_granule_kind(const void *p) {
    uintptr_t a = (uintptr_t)p;
    if (HH_UNLIKELY(a >= HH_GRANULE_LIMIT)) return HH_GRANULE_FOREIGN;
    uint8_t *leaf = atomic_load_explicit(&_hh_granule_root[a >> HH_GRANULE_LEAF_SHIFT],
                                         memory_order_acquire);
    if (HH_UNLIKELY(leaf == NULL)) return HH_GRANULE_FOREIGN;
    return atomic_load_explicit((_Atomic(uint8_t) *)&leaf[(a >> HH_GRANULE_SHIFT) &
                                                         (HH_GRANULE_LEAF_SIZE - 1)],
                                memory_order_relaxed);
}

_Static_assert(sizeof(hh_page) == 128, "page descriptors are 128 bytes");
_Static_assert(sizeof(hh_large) <= HH_LARGE_HEADER, "large header must fit before the block");
_Static_assert(HH_LARGE_MIN < HH_REGION, "a medium block fits in a region");

#endif

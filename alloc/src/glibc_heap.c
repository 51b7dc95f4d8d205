/* A small heap served by glibc's own allocator (HUGEHEAP_SMALL_HEAPS=glibc),
 * the library taking over once the heap passes 8 MiB or the program
 * allocates fast.
 *
 * Why: under the huge threshold the library's pages are 4 KiB ones, so it
 * gives a small heap nothing glibc does not, while its size classes leave
 * free room glibc would fill with other sizes (processes of a few MiB held a
 * tenth to a third more).  Served by glibc, a small process is glibc's.
 *
 * Off by default: measured against the size classes (2026-11-29, the
 * notebook's entry on it), small processes that allocate little peak at most
 * at 1.01 of glibc's (the size classes: up to 1.39), and heaps of 30-480 MiB
 * are level in speed and memory; but a small process that allocates fast
 * holds glibc's memory and the library's (1.50-2.29 of glibc's peak, against
 * 1.27-2.12), and glibc's blocks have glibc's checks, not the library's (a
 * sized delete naming the wrong size passes).
 *
 * Only where the library is the process's malloc beside glibc (the shared
 * library); the static and named builds keep the size classes.  glibc's
 * functions are found once, by dlsym(RTLD_NEXT), from the library's
 * constructor: never inside a malloc (dlsym may allocate, and the dynamic
 * loader may hold its lock there).  Until then, and where they are not found,
 * the size classes serve.
 *
 * The switch is one way: once the demand (the library's, plus the bytes of
 * glibc's blocks live) with a request would reach GLIBC_HEAP_MAX (or the huge
 * threshold, if lower), or the program allocates fast (FAST_BLOCKS blocks
 * and more, at one or more per microsecond of CPU time), every new block is
 * the library's.  The second bound is for speed: the size classes allocate
 * at two to three times glibc's rate, and at a block per microsecond glibc's
 * extra cost is a few percent of the CPU time.  glibc's blocks stay where
 * they are: free tells them from ours by the reserved range and the granule
 * map (a pointer that is none of ours goes to glibc), and realloc moves them
 * into the library once it serves.  Their bytes and number are counted
 * (glibc's malloc_usable_size; each thread tells the process in steps of
 * COUNT_STEP bytes or COUNT_BLOCKS blocks, so that no shared line is written
 * on every call: when one was, four threads churning small blocks ran at a
 * quarter of glibc's speed), and the bytes are part of the demand policy.c
 * sees.  The counts are estimates: a thread that exits takes what it has not
 * told yet (less than a step) with it.  After the switch nothing reuses glibc's freed memory, so glibc is
 * asked to give it back (malloc_trim) each time its live bytes fell by
 * TRIM_STEP. */
#include <stdatomic.h>
#include <string.h>

#include "internal.h"

#if defined(HH_SHARED_LIBRARY) && !defined(HH_NO_OVERRIDE)
#include <dlfcn.h>
#define GLIBC_HEAP_POSSIBLE 1
/* dlsym of the architecture's first glibc version, not 2.34's (where it
 * moved into libc): the library runs on glibc from 2.17.  Weak: where glibc
 * is older than 2.34 and no one loaded libdl, there is none and the size
 * classes serve. */
#if defined(__x86_64__)
#define DLSYM_VERSION "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define DLSYM_VERSION "GLIBC_2.17"
#endif
#ifdef DLSYM_VERSION
extern void *first_dlsym(void *handle, const char *name) __attribute__((weak));
__asm__(".symver first_dlsym, dlsym@" DLSYM_VERSION);
#define DLSYM first_dlsym
#else
#define DLSYM dlsym
#endif
#else
#define GLIBC_HEAP_POSSIBLE 0
#endif

#define COUNT_STEP ((int64_t)64 << 10)
#define COUNT_BLOCKS 1024
#define FAST_BLOCKS ((uint64_t)64 << 10)
/* Where the size classes cost small heaps most (1-6 MiB: 1.15-1.39 of
 * glibc's peak; 12-14 MiB: 0.86-0.98); a medium heap's first 32 MiB served
 * by glibc, in 4 KiB pages, cost it a few percent of its speed. */
#define GLIBC_HEAP_MAX ((size_t)8 << 20)
#define TRIM_STEP ((int64_t)2 << 20)

static struct {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*memalign)(size_t, size_t);
    void (*free)(void *);
    size_t (*usable)(void *);
    int (*trim)(size_t);
} glibc;

atomic_bool _hh_glibc_serving;     /* new blocks may be glibc's (internal.h) */
static atomic_bool glibc_has_blocks; /* glibc may hold live blocks of the program's */
/* Written a step at a time, read on every call: a line of their own. */
static struct {
    _Alignas(64) _Atomic(int64_t) live; /* bytes of glibc's blocks live, as told */
    _Atomic(int64_t) live_at_trim;       /* `live` when glibc last gave memory back */
    _Atomic(uint64_t) served;            /* blocks glibc made for the program, as told */
    atomic_bool fast;                    /* the program allocates fast: the library serves */
    char pad[64 - 2 * sizeof(int64_t) - sizeof(uint64_t) - sizeof(atomic_bool)];
} told;
static __thread int64_t untold __attribute__((tls_model("initial-exec")));
static __thread uint32_t untold_blocks __attribute__((tls_model("initial-exec")));

/* ----------------------------------------------------------------- start */

#if GLIBC_HEAP_POSSIBLE
/* glibc's definition of `name`, the next after ours, into *slot (a function
 * pointer, written as POSIX says dlsym's result is to be). */
static bool find(void *slot, const char *name) {
#ifdef DLSYM_VERSION
    if (first_dlsym == NULL) return false;
#endif
    void *fn = DLSYM(RTLD_NEXT, name);
    memcpy(slot, &fn, sizeof fn);
    return fn != NULL;
}
#endif

bool _hh_glibc_heap_start(void) {
    if (_hh_cfg.small_heaps != HH_SMALL_GLIBC) return false;
#if GLIBC_HEAP_POSSIBLE
    /* glibc's internal names: its malloc and friends are ours. */
    bool found = find(&glibc.malloc, "__libc_malloc") && find(&glibc.calloc, "__libc_calloc") &&
                 find(&glibc.realloc, "__libc_realloc") && find(&glibc.memalign, "__libc_memalign") &&
                 find(&glibc.free, "__libc_free") && find(&glibc.usable, "malloc_usable_size") &&
                 find(&glibc.trim, "malloc_trim");
    if (found) {
        atomic_store_explicit(&glibc_has_blocks, true, memory_order_release);
        atomic_store_explicit(&_hh_glibc_serving, true, memory_order_release);
        return true;
    }
#endif
    _hh_warn("hugeheap: HUGEHEAP_SMALL_HEAPS=glibc, but glibc's allocator is not there to "
             "serve (a static program?); the size classes serve small heaps\n");
    return false;
}

/* ------------------------------------------------------------- counting */

static void tell(int64_t bytes, uint32_t blocks) {
    untold += bytes;
    untold_blocks += blocks;
    if (untold > -COUNT_STEP && untold < COUNT_STEP && untold_blocks < COUNT_BLOCKS) return;
    if (untold_blocks != 0) {
        uint64_t served =
            atomic_fetch_add_explicit(&told.served, untold_blocks, memory_order_relaxed) +
            untold_blocks;
        untold_blocks = 0;
        if (served >= FAST_BLOCKS && _hh_clock_cpu_ns() <= served * HH_FAST_NS_PER_BLOCK) {
            atomic_store_explicit(&told.fast, true, memory_order_relaxed);
        }
    }
    int64_t now = atomic_fetch_add_explicit(&told.live, untold, memory_order_relaxed) + untold;
    untold = 0;
    if (atomic_load_explicit(&_hh_glibc_serving, memory_order_relaxed)) return;
    /* After the switch: glibc gives back what its freed blocks held, a step
     * at a time (one thread asks; malloc_trim walks glibc's heap). */
    int64_t trimmed = atomic_load_explicit(&told.live_at_trim, memory_order_relaxed);
    if (trimmed - now >= TRIM_STEP &&
        atomic_compare_exchange_strong_explicit(&told.live_at_trim, &trimmed, now,
                                                memory_order_relaxed, memory_order_relaxed)) {
        glibc.trim(0);
    }
}

size_t _hh_glibc_live_bytes(void) {
    int64_t bytes = atomic_load_explicit(&told.live, memory_order_relaxed);
    return bytes > 0 ? (size_t)bytes : 0;
}

uint64_t _hh_glibc_blocks_served(void) {
    return atomic_load_explicit(&told.served, memory_order_relaxed) + untold_blocks;
}

/* ------------------------------------------------------------ serving */

bool _hh_glibc_takes(size_t size) {
    if (!atomic_load_explicit(&_hh_glibc_serving, memory_order_acquire)) return false;
    size_t demand = _hh_policy_demand() + (size_t)(untold > 0 ? untold : 0);
    size_t most = _hh_cfg.huge_threshold < GLIBC_HEAP_MAX ? _hh_cfg.huge_threshold : GLIBC_HEAP_MAX;
    if (demand < most && size < most - demand &&
        !atomic_load_explicit(&told.fast, memory_order_relaxed)) {
        return true;
    }
    /* The heap passes GLIBC_HEAP_MAX, or the program allocates fast: the
     * library serves from now on. */
    if (atomic_exchange_explicit(&_hh_glibc_serving, false, memory_order_acq_rel)) {
        atomic_store_explicit(&told.live_at_trim,
                              atomic_load_explicit(&told.live, memory_order_relaxed),
                              memory_order_relaxed);
    }
    return false;
}

void *_hh_glibc_alloc(size_t size, size_t alignment, bool zero) {
    void *block;
    if (alignment > 16) {
        block = glibc.memalign(alignment, size);
        if (block != NULL && zero) memset(block, 0, size);
    } else {
        block = zero ? glibc.calloc(1, size) : glibc.malloc(size);
    }
    if (block != NULL) tell((int64_t)glibc.usable(block), 1);
    return block;
}

bool _hh_glibc_may_hold(const void *ptr) {
    return ptr != NULL && atomic_load_explicit(&glibc_has_blocks, memory_order_acquire);
}

void _hh_glibc_free(void *ptr) {
    tell(-(int64_t)glibc.usable(ptr), 0);
    glibc.free(ptr);
}

size_t _hh_glibc_usable(void *ptr) { return glibc.usable(ptr); }

void *_hh_glibc_realloc(void *ptr, size_t size) {
    int64_t before = (int64_t)glibc.usable(ptr);
    void *resized = glibc.realloc(ptr, size);
    if (resized != NULL) tell((int64_t)glibc.usable(resized) - before, 0);
    return resized;
}

void _hh_glibc_trim(void) {
    if (atomic_load_explicit(&glibc_has_blocks, memory_order_acquire)) glibc.trim(0);
}

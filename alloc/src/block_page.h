/* A page of fixed-size blocks: the free lists that the heap's small pages
 * (heap.c, page_pop.h, fastpath.h) and hh_pool's pages (pool.c) keep alike,
 * hardened alike, inline so that malloc's and free's fast paths compile to
 * what they would written out.
 *
 * A free block's first word links to the next free block, encoded (XOR with
 * the process's secret key, _hh_encode); its second word holds the secret
 * free mark from its carving until it is handed out (hh_block, types.h).  A
 * page keeps the lists its owner pushes and pops without atomics, and one
 * list other threads push on with a compare-and-swap, in a word whose two
 * low bits hold the page's state (HH_PAGE_NORMAL, FULL, PENDING: the
 * protocol at the top of heap.c; a pool's pages stay NORMAL).  The checks
 * see a page as an hh_block_area: its carved blocks. */
#ifndef HUGEHEAP_BLOCK_PAGE_H
#define HUGEHEAP_BLOCK_PAGE_H

#include "internal.h"

/* Whether p is the start of one of the area's carved blocks (any thread). */
static inline bool _hh_blocks_hold(hh_block_area a, const void *p) {
    size_t offset = (size_t)((const char *)p - a.area);
    return offset < a.end && offset % a.block_size == 0;
}

/* Links `n` (at least 1) fresh blocks of `size` bytes from `first` on into a
 * list, each carrying the free mark; returns its head. */
static inline hh_block *_hh_blocks_carve(char *first, uint32_t n, size_t size) {
    char *p = first;
    for (uint32_t i = 1; i < n; i++, p += size) {
        ((hh_block *)p)->next = _hh_encode((hh_block *)(p + size));
        ((hh_block *)p)->mark = _hh_free_mark;
    }
    ((hh_block *)p)->next = _hh_encode(NULL);
    ((hh_block *)p)->mark = _hh_free_mark;
    return (hh_block *)first;
}

/* The owner's free: block goes first on one of its lists, marked free. */
static inline __attribute__((always_inline)) void _hh_blocks_push(hh_block **list,
                                                                 hh_block *block) {
    block->mark = _hh_free_mark;
    block->next = _hh_encode(*list);
    *list = block;
}

/* Takes block, the head of *list, off it: its link becomes the head and its
 * mark is cleared.  The link must decode to a 16-byte-aligned address: the
 * key's low four bits are all set, so a link that a use after free wrote
 * over with a plain pointer, zeros or text decodes to a misaligned one.
 * Then nothing changes and the answer is false: the caller stops
 * (_hh_free_list_corrupted) before the written address is handed out.
 * The new head is fetched into the cache now: the next malloc of this size
 * reads its link, and a list in the order blocks were freed long before
 * holds blocks out of cache (alloc-test: 15% of the process's time in
 * operator new, waiting on that read; 9% with the prefetch, for one
 * instruction and a register move more on the fast path). */
static inline __attribute__((always_inline)) bool _hh_blocks_take(hh_block **list,
                                                                 hh_block *block) {
    hh_block *next = _hh_decode(block->next);
    if (HH_UNLIKELY((uintptr_t)next & 15)) return false;
    __builtin_prefetch(next, 1, 3);
    *list = next;
    block->mark = 0;
    return true;
}

/* The length of an encoded list, or UINT32_MAX if it is longer than `limit`
 * or leaves the area's blocks (a bounded walk: for assertions and the
 * double-free check); *found is set if `find` is on it. */
static inline uint32_t _hh_blocks_count(hh_block_area a, uint32_t limit, const hh_block *list,
                                        const hh_block *find, bool *found) {
    uint32_t n = 0;
    for (const hh_block *b = list; b != NULL; b = _hh_decode(b->next)) {
        if (n++ >= limit || !_hh_blocks_hold(a, b)) return UINT32_MAX;
        if (b == find) *found = true;
    }
    return n;
}

/* Another thread's free: block goes first on the page's remote list,
 * marked free; a FULL page becomes PENDING with it.  The word as it was
 * before the push. */
static inline uintptr_t _hh_blocks_push_remote(_Atomic(uintptr_t) *remote, hh_block *block) {
    block->mark = _hh_free_mark;
    uintptr_t word = atomic_load_explicit(remote, memory_order_relaxed);
    uintptr_t state;
    do {
        state = word & HH_PAGE_STATE_MASK;
        block->next = _hh_encode((hh_block *)(word & ~HH_PAGE_STATE_MASK));
    } while (!atomic_compare_exchange_weak_explicit(
        remote, &word, (uintptr_t)block | (state == HH_PAGE_FULL ? HH_PAGE_PENDING : state),
        memory_order_acq_rel, memory_order_relaxed));
    return word;
}

/* The owner takes the page's remote list (its state stays): its first
 * block, NULL if it was empty. */
static inline hh_block *_hh_blocks_take_remote(_Atomic(uintptr_t) *remote) {
    uintptr_t word = atomic_load_explicit(remote, memory_order_relaxed);
    if ((word & ~HH_PAGE_STATE_MASK) == 0) return NULL;
    while (!atomic_compare_exchange_weak_explicit(remote, &word, word & HH_PAGE_STATE_MASK,
                                                  memory_order_acquire, memory_order_relaxed)) {
    }
    return (hh_block *)(word & ~HH_PAGE_STATE_MASK);
}

/* Puts the list `head` (not empty), taken off the remote list, in front of
 * *list; the number of blocks it held.  At most `limit` blocks can have come
 * back: a longer list is a cycle or a stray write, and walking on would
 * loop or wander off the page, so the program stops. */
static inline uint32_t _hh_blocks_splice(hh_block *head, hh_block_area a, uint32_t limit,
                                         hh_block **list) {
    hh_block *tail = head;
    uint32_t count = 1;
    for (hh_block *next; (next = _hh_decode(tail->next)) != NULL; tail = next) {
        if (HH_UNLIKELY(++count > limit || !_hh_blocks_hold(a, next))) {
            _hh_free_list_corrupted(next);
        }
    }
    tail->next = _hh_encode(*list);
    *list = head;
    return count;
}

/* A free that found the block's free mark set.  The owner looks for it on
 * its lists `mine` and `mine_too` (either may be NULL) and on the remote
 * list, which below its head only grows at the head until the owner
 * collects it (bounded walks over the area's blocks, at most `limit`).
 * Found, or freed by another thread, which cannot walk the owner's lists:
 * the program stops with `message` and the block.  Otherwise the mark was
 * the program's data, and the free goes on. */
static inline void _hh_blocks_check_double(hh_block_area a, uint32_t limit, const hh_block *mine,
                                           const hh_block *mine_too,
                                           _Atomic(uintptr_t) *remote, const hh_block *block,
                                           bool owner, const char *message) {
    bool found = false;
    if (owner) {
        _hh_blocks_count(a, limit, mine, block, &found);
        _hh_blocks_count(a, limit, mine_too, block, &found);
    }
    uintptr_t word = atomic_load_explicit(remote, memory_order_acquire);
    _hh_blocks_count(a, limit, (const hh_block *)(word & ~HH_PAGE_STATE_MASK), block, &found);
    if (found || !owner) _hh_fatal(message, block);
}

#endif

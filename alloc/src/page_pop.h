/* Taking a block off a small page's free list, inline: malloc's fast path
 * (fastpath.h) and the heap's refill (heap.c) both end here. */
#ifndef HUGEHEAP_PAGE_POP_H
#define HUGEHEAP_PAGE_POP_H

#include <string.h>

#include "block_page.h"
#include "internal.h"

/* Takes the first block of one of a page's lists (not empty), which holds
 * blocks zeroed but for their link if `list_is_zero`; the program stops
 * there if its link was written over (_hh_blocks_take). */
static inline __attribute__((always_inline)) void *_hh_page_pop_list(hh_page *page,
                                                                   hh_block **list,
                                                                   hh_block *block, bool zero,
                                                                   bool list_is_zero) {
    if (HH_UNLIKELY(!_hh_blocks_take(list, block))) return _hh_free_list_corrupted_at(block);
    page->used++;
    if (zero) {
        if (list_is_zero) {
            block->next = NULL; /* the link is the only word ever written */
        } else {
            memset(block, 0, page->block_size);
        }
    }
    return block;
}

/* Takes the first block of a page whose free list is not empty. */
static inline __attribute__((always_inline)) void *_hh_page_pop(hh_page *page, hh_block *block,
                                                              bool zero) {
    return _hh_page_pop_list(page, &page->free, block, zero, page->free_is_zero);
}

#endif

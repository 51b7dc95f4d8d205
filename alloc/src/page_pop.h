/* Taking a block off a small page's free list, inline: malloc's fast path
 * (fastpath.h) and the heap's refill (heap.c) both end here. */
#ifndef HUGEHEAP_PAGE_POP_H
#define HUGEHEAP_PAGE_POP_H

#include <string.h>

#include "internal.h"

/* Takes the first block of a page whose free list is not empty.  The next
 * block must decode to a 16-byte-aligned address: the key's low four bits are
 * all set, so a link that a use after free wrote over with a plain pointer,
 * zeros or text decodes to a misaligned one, and the program stops before
 * the written address is handed out. */
static inline __attribute__((always_inline)) void *_hh_page_pop(hh_page *page, hh_block *block,
                                                              bool zero) {
    hh_block *next = _hh_decode(block->next);
    if (HH_UNLIKELY((uintptr_t)next & 15)) return _hh_free_list_corrupted_at(block);
    page->free = next;
    page->used++;
    block->mark = 0;
    if (zero) {
        if (page->free_is_zero) {
            block->next = NULL; /* the link is the only word ever written */
        } else {
            memset(block, 0, page->block_size);
        }
    }
    return block;
}

#endif

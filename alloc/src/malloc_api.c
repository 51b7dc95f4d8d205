/* The public entry points, with glibc's observable behaviour: 16-byte
 * alignment, errno ENOMEM on failure, malloc(0) a unique pointer,
 * realloc(p, 0) frees, overflowing counts fail instead of returning short
 * blocks.
 *
 * Every malloc-family symbol is defined here, in one object file, as an alias
 * of its hh_ twin: a static link that pulls malloc pulls them all, so libc.a's
 * own malloc is never linked beside ours.  HH_NO_OVERRIDE builds only the hh_
 * names (for sanitizer builds, where the sanitizer owns malloc).
 *
 * First, what malloc and free do by a block's kind, a call away from their
 * inline fast paths (fastpath.h): _hh_alloc_big makes medium and large
 * blocks, _hh_free_slow frees whatever free's fast path did not take; realloc
 * and malloc_usable_size ask the same kinds below. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "hugeheap.h"
#include "fastpath.h"
#include "internal.h"
#include "kind.h"
#include "pointer_kind.h"

/* --------------------------------------------- malloc's and free's dispatch */

void *_hh_alloc_big(size_t size, size_t alignment, bool zero) {
    if (_hh_glibc_serves(size)) return _hh_glibc_alloc(size, alignment, zero);
    _hh_init(); /* a medium or large block may be the process's first */
    if (_hh_size_kind(size, alignment) == HH_KIND_MEDIUM) {
        return _hh_medium_alloc(size, alignment, zero);
    }
    return _hh_large_alloc(size, alignment, zero);
}

/* One free in sixteen lands here where a program frees at random among many
 * live blocks (bench/fastpath.py's window): through _hh_free_slow's lookup
 * of the pointer's kind it cost 154 instructions. */
void _hh_free_out_of_queue(hh_page *page, void *ptr, size_t size) {
    hh_block *block = ptr;
    if (HH_LIKELY(_hh_page_takes_back(page, block) && size <= page->block_size)) {
        _hh_blocks_push(&page->local_free, block);
        page->used--;
        _hh_page_after_local_free(_hh_heap, page);
        return;
    }
    _hh_free_small_slow(page, ptr, size); /* the checks in full */
}

void _hh_free_slow(void *ptr, size_t size) {
    hh_pointer_kind what = _hh_pointer_kind(ptr);
    switch (what.kind) {
    case HH_KIND_SMALL:
        _hh_free_small_slow(what.page, ptr, size);
        return;
    case HH_KIND_MEDIUM:
        if (size != 0) { /* a pointer that is no medium block is stopped by the free */
            size_t pages = _hh_medium_pages(what.region, ptr);
            if (HH_UNLIKELY(pages != 0 && size > pages << HH_OS_PAGE_SHIFT)) {
                _hh_free_size_mismatch(ptr);
            }
        }
        _hh_medium_free(what.region, ptr);
        return;
    case HH_KIND_GROWTH:
        _hh_growth_free(ptr, size);
        return;
    case HH_KIND_LARGE:
        if (HH_UNLIKELY(size > what.large->usable)) _hh_free_size_mismatch(ptr);
        _hh_large_free(what.large, ptr);
        return;
    case HH_KIND_LARGE_FREED:
        _hh_fatal("free(): invalid pointer (not a live large block; double free?)", ptr);
    case HH_KIND_POOL:
        _hh_fatal("free(): invalid pointer (an hh_pool object: give it to hh_pool_free)", ptr);
    case HH_KIND_FOREIGN:
        break;
    }
    if (ptr == NULL) return;
    if (_hh_glibc_may_hold(ptr)) { /* glibc served the heap while it was small */
        _hh_glibc_free(ptr);
        return;
    }
    _hh_fatal("free(): invalid pointer (not allocated by hugeheap)", ptr);
}

/* ------------------------------------------------------------ entry points */

static inline size_t usable_in_page(hh_page *page, void *ptr) {
    const char *block = (const char *)_hh_page_checked_block(page, ptr, HH_NOT_LIVE);
    return page->block_size - (size_t)((const char *)ptr - block);
}

/* What a pointer handed to realloc or malloc_usable_size is: a block of
 * ours (small, medium or large), glibc's (HH_KIND_FOREIGN, where glibc served
 * the heap while it was small), or a stop with one line naming the pointer
 * (and what was called) for anything else. */
static hh_pointer_kind block_kind(const void *ptr, const char *what) {
    hh_pointer_kind kind = _hh_pointer_kind(ptr);
    if (kind.kind == HH_KIND_FOREIGN && _hh_glibc_may_hold(ptr)) return kind;
    if (HH_UNLIKELY(kind.kind != HH_KIND_SMALL && kind.kind != HH_KIND_MEDIUM &&
                    kind.kind != HH_KIND_GROWTH && kind.kind != HH_KIND_LARGE)) {
        _hh_fatal(what, ptr);
    }
    return kind;
}

HH_API void *hh_malloc(size_t size) { return _hh_alloc(size, false); }

HH_API void hh_free(void *ptr) { _hh_free_fast(ptr, 0); }

HH_API void *hh_calloc(size_t count, size_t size) {
    size_t bytes;
    if (HH_UNLIKELY(__builtin_mul_overflow(count, size, &bytes))) {
        errno = ENOMEM;
        return NULL;
    }
    return _hh_alloc(bytes, true);
}

/* A block that realloc makes (from NULL) or grows to `size` bytes: as
 * malloc's, and where HUGEHEAP_GROWTH_HEAP=on the growth heap's up to 1 KiB
 * too while it takes blocks (growth.c says why). */
static void *alloc_growing(size_t size) {
    _hh_init(); /* realloc(NULL, n) may be the first call */
    if (size <= HH_DIRECT_MAX && _hh_cfg.growth_heap == HH_GROWTH_ALL && _hh_growth_open()) {
        return _hh_growth_alloc(size, false);
    }
    return _hh_alloc(size, false);
}

static void *move_block(void *ptr, size_t old_usable, size_t size) {
    void *moved = size > old_usable ? alloc_growing(size) : _hh_alloc(size, false);
    if (moved == NULL) return NULL;
    memcpy(moved, ptr, old_usable < size ? old_usable : size);
    hh_free(ptr);
    return moved;
}

HH_API void *hh_realloc(void *ptr, size_t size) {
    if (ptr == NULL) return alloc_growing(size);
    if (size == 0) { /* glibc frees and returns NULL */
        hh_free(ptr);
        return NULL;
    }
    hh_heap *heap = _hh_heap;
    if (heap->alive) _hh_count(&heap->stats.reallocs, 1);
    hh_pointer_kind kind =
        block_kind(ptr, "realloc(): invalid pointer (not allocated by hugeheap)");
    if (kind.kind == HH_KIND_FOREIGN) { /* glibc's: it resizes it while it serves */
        if (_hh_glibc_takes(size)) return _hh_glibc_realloc(ptr, size);
        return move_block(ptr, _hh_glibc_usable(ptr), size);
    }
    if (kind.kind == HH_KIND_LARGE) {
        size_t usable = kind.large->usable;
        void *resized = _hh_large_realloc(kind.large, ptr, size);
        return resized != NULL ? resized : move_block(ptr, usable, size);
    }
    if (kind.kind == HH_KIND_SMALL) {
        size_t usable = usable_in_page(kind.page, ptr);
        if (size <= usable && (usable <= HH_SMALL_STEP_MAX || size >= usable / 2)) return ptr;
        return move_block(ptr, usable, size);
    }
    if (kind.kind == HH_KIND_GROWTH) {
        if (size <= HH_SMALL_MAX && _hh_growth_open()) return _hh_growth_realloc(ptr, size);
        return move_block(ptr, _hh_growth_usable(ptr, "realloc(): invalid pointer"), size);
    }
    void *resized = _hh_medium_realloc(kind.region, ptr, size);
    if (resized != NULL) return resized;
    return move_block(ptr, _hh_medium_usable(kind.region, ptr), size);
}

HH_API void *hh_reallocarray(void *ptr, size_t count, size_t size) {
    size_t bytes;
    if (HH_UNLIKELY(__builtin_mul_overflow(count, size, &bytes))) {
        errno = ENOMEM;
        return NULL;
    }
    return hh_realloc(ptr, bytes);
}

/* alignment: a power of two. */
static void *alloc_aligned(size_t alignment, size_t size) {
    if (alignment <= 16) return _hh_alloc(size, false);
    if (_hh_glibc_serves(size)) return _hh_glibc_alloc(size, alignment, false);
    _hh_init(); /* the class tables below */
    if (size > HH_MAX_ALLOC || alignment > HH_MAX_ALLOC / 2) {
        errno = ENOMEM;
        return NULL;
    }
    size_t rounded = _hh_align_up(size ? size : 1, alignment);
    if (_hh_size_kind(rounded, 16) == HH_KIND_SMALL) {
        /* Pages start on 64 KiB boundaries, so a class whose size the
         * alignment divides gives aligned blocks: either class the thread's
         * heap may take (the coarse one while the heap is small, HH_CLASSES). */
        if (_hh_class_size[_hh_size_class(rounded, 0)] % alignment == 0 &&
            _hh_class_size[_hh_size_class(rounded, 1)] % alignment == 0) {
            return _hh_alloc_small(rounded, false);
        }
    }
    size_t padded = size + alignment - 16;
    if (alignment < HH_OS_PAGE && _hh_size_kind(padded, 16) == HH_KIND_SMALL) {
        char *block = _hh_alloc_small(padded, false);
        if (block == NULL) return NULL;
        char *aligned = (char *)_hh_align_up((uintptr_t)block, alignment);
        if (aligned != block) {
            /* The allocating thread owns the page: frees may now point inside. */
            hh_page *page = _hh_page_of(block);
            uintptr_t owner = atomic_load_explicit(&page->owner, memory_order_relaxed);
            atomic_store_explicit(&page->owner, owner | HH_PAGE_ALIGNED, memory_order_relaxed);
            atomic_store_explicit(&page->has_aligned, true, memory_order_relaxed);
        }
        return aligned;
    }
    return _hh_alloc_big(size > HH_SMALL_MAX ? size : HH_SMALL_MAX + 1, alignment, false);
}

static size_t next_power_of_two(size_t x) {
    size_t p = 1;
    while (p < x) p <<= 1;
    return p;
}

HH_API void *hh_memalign(size_t alignment, size_t size) {
    if (alignment > SIZE_MAX / 2 + 1) {
        errno = EINVAL;
        return NULL;
    }
    if (alignment & (alignment - 1)) alignment = next_power_of_two(alignment);
    return alloc_aligned(alignment, size);
}

HH_API int hh_posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    int saved = errno;
    void *p = alloc_aligned(alignment, size);
    if (p == NULL) {
        errno = saved;
        return ENOMEM;
    }
    *out = p;
    return 0;
}

HH_API void *hh_aligned_alloc(size_t alignment, size_t size) { return hh_memalign(alignment, size); }

HH_API void *hh_valloc(size_t size) { return alloc_aligned(HH_OS_PAGE, size); }

HH_API void *hh_pvalloc(size_t size) {
    if (size > SIZE_MAX - HH_OS_PAGE) {
        errno = ENOMEM;
        return NULL;
    }
    return alloc_aligned(HH_OS_PAGE, size ? _hh_align_up(size, HH_OS_PAGE) : HH_OS_PAGE);
}

HH_API size_t hh_usable_size(void *ptr) {
    if (ptr == NULL) return 0;
    hh_pointer_kind kind = block_kind(ptr, "malloc_usable_size(): invalid pointer");
    if (kind.kind == HH_KIND_FOREIGN) return _hh_glibc_usable(ptr);
    if (kind.kind == HH_KIND_LARGE) return kind.large->usable;
    if (kind.kind == HH_KIND_SMALL) return usable_in_page(kind.page, ptr);
    if (kind.kind == HH_KIND_GROWTH) {
        return _hh_growth_usable(ptr, "malloc_usable_size(): invalid pointer");
    }
    return _hh_medium_usable(kind.region, ptr);
}

HH_API void hh_free_sized(void *ptr, size_t size) { _hh_free_fast(ptr, size); }

HH_API void hh_free_aligned_sized(void *ptr, size_t alignment, size_t size) {
    (void)alignment;
    _hh_free_fast(ptr, size);
}

HH_API int hh_trim(size_t pad) {
    (void)pad;
    _hh_init();
    _hh_heap_purge_local(_hh_heap);
    size_t released = _hh_release_pages(true) + _hh_large_purge(true);
    _hh_glibc_trim();
    return released > 0;
}

HH_API void hh_print_stats(int fd) {
    _hh_init();
    _hh_stats_print(fd);
}

HH_API bool hh_owns(const void *ptr) {
    hh_pointer_kind kind = _hh_pointer_kind(ptr);
    switch (kind.kind) {
    case HH_KIND_SMALL:
        return _hh_page_holds(kind.page, ptr);
    case HH_KIND_MEDIUM:
        return _hh_medium_pages(kind.region, ptr) != 0;
    case HH_KIND_GROWTH:
        return _hh_growth_owns(ptr);
    case HH_KIND_LARGE:
        return true;
    default:
        return false;
    }
}

HH_API struct hh_mallinfo2 hh_mallinfo2(void) {
    _hh_init();
    struct hh_mallinfo2 info;
    memset(&info, 0, sizeof info);
    int64_t mapped = atomic_load_explicit(&_hh_gstats.mapped, memory_order_relaxed);
    int64_t in_use = _hh_stats_in_use();
    info.arena = (size_t)mapped;
    info.usmblks = (size_t)atomic_load_explicit(&_hh_gstats.mapped_peak, memory_order_relaxed);
    info.uordblks = (size_t)(in_use > 0 ? in_use : 0) + _hh_glibc_live_bytes();
    info.fordblks = mapped > in_use ? (size_t)(mapped - in_use) : 0;
    return info;
}

#ifndef HH_NO_OVERRIDE
#define HH_ALIAS(name) __attribute__((alias(#name), visibility("default"), used))

/* Declared here rather than taken from <malloc.h>, which older glibc headers
 * lack some of (mallinfo2, free_sized). */
void *malloc(size_t size) HH_ALIAS(hh_malloc);
void free(void *ptr) HH_ALIAS(hh_free);
void *calloc(size_t count, size_t size) HH_ALIAS(hh_calloc);
void *realloc(void *ptr, size_t size) HH_ALIAS(hh_realloc);
void *reallocarray(void *ptr, size_t count, size_t size) HH_ALIAS(hh_reallocarray);
void *memalign(size_t alignment, size_t size) HH_ALIAS(hh_memalign);
int posix_memalign(void **out, size_t alignment, size_t size) HH_ALIAS(hh_posix_memalign);
void *aligned_alloc(size_t alignment, size_t size) HH_ALIAS(hh_aligned_alloc);
void *valloc(size_t size) HH_ALIAS(hh_valloc);
void *pvalloc(size_t size) HH_ALIAS(hh_pvalloc);
size_t malloc_usable_size(void *ptr) HH_ALIAS(hh_usable_size);
void free_sized(void *ptr, size_t size) HH_ALIAS(hh_free_sized);
void free_aligned_sized(void *ptr, size_t alignment, size_t size) HH_ALIAS(hh_free_aligned_sized);
int malloc_trim(size_t pad) HH_ALIAS(hh_trim);
struct hh_mallinfo2 mallinfo2(void) HH_ALIAS(hh_mallinfo2);
/* Programs that call glibc's internal names directly get us too. */
void *__libc_malloc(size_t size) HH_ALIAS(hh_malloc);
void __libc_free(void *ptr) HH_ALIAS(hh_free);
void *__libc_calloc(size_t count, size_t size) HH_ALIAS(hh_calloc);
void *__libc_realloc(void *ptr, size_t size) HH_ALIAS(hh_realloc);
void *__libc_memalign(size_t alignment, size_t size) HH_ALIAS(hh_memalign);

HH_API void malloc_stats(void) { hh_print_stats(STDERR_FILENO); }
#endif

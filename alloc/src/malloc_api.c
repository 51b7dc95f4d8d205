/* The public entry points, with glibc's observable behaviour: 16-byte
 * alignment, errno ENOMEM on failure, malloc(0) a unique pointer,
 * realloc(p, 0) frees, overflowing counts fail instead of returning short
 * blocks.
 *
 * Every malloc-family symbol is defined here, in one object file, as an alias
 * of its hh_ twin: a static link that pulls malloc pulls them all, so libc.a's
 * own malloc is never linked beside ours.  HH_NO_OVERRIDE builds only the hh_
 * names (for sanitizer builds, where the sanitizer owns malloc). */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "hugeheap.h"
#include "internal.h"

#define HH_API __attribute__((visibility("default")))

static inline __attribute__((always_inline)) void *alloc(size_t size, bool zero) {
    if (HH_LIKELY(size <= HH_MEDIUM_MAX)) {
        unsigned class_index = _hh_size_class(size);
        hh_heap *heap = _hh_thread_heap;
        if (HH_LIKELY(heap != NULL)) {
            hh_page *page = heap->queue[class_index];
            if (HH_LIKELY(page->free != NULL)) return _hh_page_pop(heap, page, zero);
        }
        return _hh_alloc_slow(heap, size, zero);
    }
    return _hh_large_alloc(size, 16, zero);
}

/* The block that ptr is (or, on pages with aligned blocks, points into), or
 * a stop with one line naming the pointer: a pointer that is not a live
 * block would otherwise corrupt the heap.  `span` is 0 on a page not in use,
 * so one comparison catches both a dead page and a pointer before or past
 * the blocks; the multiply catches a pointer into the middle of a block. */
static inline hh_block *checked_block(hh_page *page, void *ptr, const char *what) {
    size_t offset = (size_t)((char *)ptr - page->area);
    if (HH_UNLIKELY(offset >= atomic_load_explicit(&page->span, memory_order_relaxed))) {
        _hh_fatal(what, ptr);
    }
    size_t start = _hh_page_block_index(page, offset) * page->block_size;
    if (HH_UNLIKELY(start != offset) &&
        !atomic_load_explicit(&page->has_aligned, memory_order_relaxed)) {
        _hh_fatal("free(): invalid pointer (inside a block, not its start)", ptr);
    }
    return (hh_block *)(page->area + start);
}

#define NOT_LIVE "free(): invalid pointer (not a live block; double free?)"

static inline hh_page *page_of(const void *ptr) {
    return _hh_page_of(_hh_segment_of(ptr), ptr);
}

static inline hh_large *checked_large(const void *ptr) {
    hh_large *large = _hh_large_of(ptr);
    if (HH_UNLIKELY(large->cookie != _hh_large_cookie(ptr))) {
        _hh_fatal("free(): invalid pointer (not a live large block; double free?)", ptr);
    }
    return large;
}

static inline size_t usable_in_page(hh_page *page, void *ptr) {
    const char *block = (const char *)checked_block(page, ptr, NOT_LIVE);
    return page->block_size - (size_t)((const char *)ptr - block);
}

/* Every call below is in tail position, so that the common path needs no
 * stack frame. */
static inline void free_in_page(void *ptr) {
    hh_page *page = page_of(ptr);
    hh_block *block = checked_block(page, ptr, NOT_LIVE);
    hh_heap *heap = _hh_thread_heap;
    if (HH_LIKELY(heap != NULL &&
                  atomic_load_explicit(&page->heap, memory_order_relaxed) == heap)) {
        if (HH_UNLIKELY(_hh_stats_on)) {
            _hh_free_local_counted(heap, page, block);
            return;
        }
        _hh_free_local(heap, page, block);
        return;
    }
    _hh_free_remote(page, block);
}

HH_API void *hh_malloc(size_t size) { return alloc(size, false); }

HH_API void hh_free(void *ptr) {
    uint8_t kind = _hh_granule_kind(ptr);
    if (HH_LIKELY(kind == HH_GRANULE_SEGMENT)) {
        free_in_page(ptr);
    } else if (kind == HH_GRANULE_LARGE) {
        _hh_large_free(checked_large(ptr), ptr);
    } else if (ptr != NULL) {
        _hh_fatal("free(): invalid pointer (not allocated by hugeheap)", ptr);
    }
}

HH_API void *hh_calloc(size_t count, size_t size) {
    size_t bytes;
    if (HH_UNLIKELY(__builtin_mul_overflow(count, size, &bytes))) {
        errno = ENOMEM;
        return NULL;
    }
    return alloc(bytes, true);
}

static void *move_block(void *ptr, size_t old_usable, size_t size) {
    void *moved = alloc(size, false);
    if (moved == NULL) return NULL;
    memcpy(moved, ptr, old_usable < size ? old_usable : size);
    hh_free(ptr);
    return moved;
}

HH_API void *hh_realloc(void *ptr, size_t size) {
    if (ptr == NULL) return alloc(size, false);
    if (size == 0) { /* glibc frees and returns NULL */
        hh_free(ptr);
        return NULL;
    }
    hh_heap *heap = _hh_thread_heap;
    if (HH_UNLIKELY(_hh_stats_on) && heap != NULL) heap->stats.reallocs++;
    uint8_t kind = _hh_granule_kind(ptr);
    if (kind == HH_GRANULE_SEGMENT) {
        size_t usable = usable_in_page(page_of(ptr), ptr);
        if (size <= usable && (usable <= HH_SMALL_STEP_MAX || size >= usable / 2)) return ptr;
        return move_block(ptr, usable, size);
    }
    if (kind == HH_GRANULE_LARGE) {
        hh_large *large = checked_large(ptr);
        size_t usable = large->usable;
        void *resized = _hh_large_realloc(large, ptr, size);
        return resized != NULL ? resized : move_block(ptr, usable, size);
    }
    _hh_fatal("realloc(): invalid pointer (not allocated by hugeheap)", ptr);
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
    if (alignment <= 16) return alloc(size, false);
    _hh_init(); /* the class tables below */
    if (size > HH_MAX_ALLOC || alignment > HH_MAX_ALLOC / 2) {
        errno = ENOMEM;
        return NULL;
    }
    size_t rounded = _hh_align_up(size ? size : 1, alignment);
    if (rounded <= HH_MEDIUM_MAX && alignment <= HH_SLICE_SIZE) {
        /* Pages start 64 KiB-aligned (4 KiB for the short first slice), so a
         * class whose size the alignment divides gives aligned blocks. */
        unsigned c = _hh_size_class(rounded);
        bool page_aligned_enough = alignment <= 4096 || _hh_class_slices[c] > 1;
        if (_hh_class_size[c] % alignment == 0 && page_aligned_enough) return alloc(rounded, false);
        size_t padded = size + alignment - 16;
        if (padded <= HH_MEDIUM_MAX) {
            char *block = alloc(padded, false);
            if (block == NULL) return NULL;
            char *aligned = (char *)_hh_align_up((uintptr_t)block, alignment);
            if (aligned != block) {
                hh_page *page = _hh_page_of(_hh_segment_of(block), block);
                atomic_store_explicit(&page->has_aligned, true, memory_order_relaxed);
            }
            return aligned;
        }
    }
    return _hh_large_alloc(size, alignment, false);
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
    uint8_t kind = _hh_granule_kind(ptr);
    if (kind == HH_GRANULE_SEGMENT) return usable_in_page(page_of(ptr), ptr);
    if (kind == HH_GRANULE_LARGE) return checked_large(ptr)->usable;
    if (ptr != NULL) _hh_fatal("malloc_usable_size(): invalid pointer", ptr);
    return 0;
}

HH_API void hh_free_sized(void *ptr, size_t size) {
    (void)size;
    hh_free(ptr);
}

HH_API void hh_free_aligned_sized(void *ptr, size_t alignment, size_t size) {
    (void)alignment;
    (void)size;
    hh_free(ptr);
}

HH_API int hh_trim(size_t pad) {
    (void)pad;
    _hh_init();
    _hh_heap_purge_local(_hh_thread_heap);
    size_t released = _hh_segment_purge(true) + _hh_large_purge(true);
    return released > 0;
}

HH_API void hh_print_stats(int fd) {
    _hh_init();
    _hh_stats_print(fd);
}

HH_API bool hh_owns(const void *ptr) {
    uint8_t kind = _hh_granule_kind(ptr);
    if (kind == HH_GRANULE_SEGMENT) {
        hh_page *page = page_of(ptr);
        size_t offset = (size_t)((const char *)ptr - page->area);
        return offset < atomic_load_explicit(&page->span, memory_order_relaxed);
    }
    if (kind == HH_GRANULE_LARGE) return _hh_large_of(ptr)->cookie == _hh_large_cookie(ptr);
    return false;
}

HH_API struct hh_mallinfo2 hh_mallinfo2(void) {
    _hh_init();
    struct hh_mallinfo2 info;
    memset(&info, 0, sizeof info);
    int64_t mapped = atomic_load_explicit(&_hh_gstats.mapped, memory_order_relaxed);
    /* Bytes in use are counted only with HUGEHEAP_STATS; else report all as used. */
    int64_t in_use = _hh_stats_on ? atomic_load_explicit(&_hh_gstats.in_use, memory_order_relaxed)
                                 : mapped;
    info.arena = (size_t)mapped;
    info.usmblks = (size_t)atomic_load_explicit(&_hh_gstats.mapped_peak, memory_order_relaxed);
    info.uordblks = (size_t)(in_use > 0 ? in_use : 0);
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

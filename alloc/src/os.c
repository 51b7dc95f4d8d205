/* Everything libhugeheap asks of the kernel: aligned mappings, huge-page
 * advice, giving memory back.  Advice is given before the memory is first
 * touched, which is what lets the kernel back it with 2 MiB pages at fault
 * time in THP `madvise` mode instead of waiting for khugepaged.
 *
 * The memory policy lives here too: a heap starts small, in 4 KiB pages
 * advised MADV_NOHUGEPAGE (so THP `always` and khugepaged leave it alone, and
 * a small process costs what it would under glibc); once the pages and large
 * blocks in use reach HUGEHEAP_HUGE_THRESHOLD_MB, every mapping made from then on is
 * advised MADV_HUGEPAGE before its first touch, and the early segments are
 * promoted (segment.c).  The switch is one way: a heap that was large once
 * stays huge. */
#include <errno.h>
#include <sys/mman.h>
#include <time.h>

#include "internal.h"

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif

void _hh_os_count_mapped(intptr_t delta) {
    _hh_counter_add(&_hh_gstats.mapped, &_hh_gstats.mapped_peak, delta);
}

/* Memory for blocks is mapped without MAP_NORESERVE: the kernel's
 * overcommit check then refuses a request the machine can never provide
 * (ENOMEM now, instead of the OOM killer later). */
static void *map_plain(size_t size, bool reserve) {
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (reserve ? 0 : MAP_NORESERVE);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static atomic_bool heap_is_large; /* set once, when mapped memory reached the threshold */
static atomic_bool promotion_due; /* the early segments still wait for their promotion */

void _hh_os_count_committed(intptr_t delta) {
    atomic_fetch_add_explicit(&_hh_gstats.committed, delta, memory_order_relaxed);
}

bool _hh_os_huge_now(size_t adding) {
    if (_hh_cfg.thp == HH_THP_OFF) return false;
    if (HH_LIKELY(atomic_load_explicit(&heap_is_large, memory_order_relaxed))) return true;
    int64_t used = atomic_load_explicit(&_hh_gstats.committed, memory_order_relaxed);
    if ((uint64_t)(used > 0 ? used : 0) + adding < _hh_cfg.huge_threshold) return false;
    if (!atomic_exchange_explicit(&heap_is_large, true, memory_order_relaxed)) {
        atomic_store_explicit(&promotion_due, true, memory_order_relaxed);
    }
    return true;
}

bool _hh_os_take_promotion(void) {
    if (HH_LIKELY(!atomic_load_explicit(&promotion_due, memory_order_relaxed))) return false;
    return atomic_exchange_explicit(&promotion_due, false, memory_order_relaxed);
}

/* Explicit huge pages from the kernel's pool.  The pool is reserved at mmap
 * time (no MAP_NORESERVE), so an empty pool fails here, never with SIGBUS
 * at first touch. */
static void *map_hugetlb(size_t size) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void _hh_os_advise(void *addr, size_t size, bool huge) {
    int saved = errno;
    /* Not huge means plain 4 KiB pages even where THP is `always`. */
    madvise(addr, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    errno = saved;
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* Backs a range already in use with huge pages now (Linux 6.1+); older
 * kernels answer EINVAL, and khugepaged collapses the range later, at its own
 * pace, because it is advised huge. */
void _hh_os_collapse(void *addr, size_t size) {
    int saved = errno;
    madvise(addr, size, MADV_COLLAPSE);
    errno = saved;
}

void *_hh_os_map_aligned(size_t size, size_t alignment, size_t offset, bool *hugetlb,
                         bool huge) {
    int saved = errno;
    if (*hugetlb) {
        if (offset == 0 && alignment <= HH_SEGMENT_SIZE && (size & HH_SEGMENT_MASK) == 0) {
            void *p = map_hugetlb(size);
            if (p != NULL) {
                _hh_os_count_mapped((intptr_t)size);
                errno = saved;
                return p;
            }
        }
        *hugetlb = false;
        atomic_fetch_add_explicit(&_hh_gstats.hugetlb_fallbacks, 1, memory_order_relaxed);
    }
    /* Over-reserve by the alignment, then cut off both ends. */
    if (size > SIZE_MAX - alignment) {
        errno = ENOMEM;
        return NULL;
    }
    char *raw = map_plain(size + alignment, true);
    if (raw == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    uintptr_t start = _hh_align_up((uintptr_t)raw + offset, alignment) - offset;
    if (start < (uintptr_t)raw) start += alignment;
    size_t head = start - (uintptr_t)raw;
    size_t tail = alignment - head;
    if (head) munmap(raw, head);
    if (tail) munmap((char *)start + size, tail);
    _hh_os_advise((void *)start, size, huge);
    _hh_os_count_mapped((intptr_t)size);
    errno = saved;
    return (void *)start;
}

void _hh_os_unmap(void *addr, size_t size) {
    int saved = errno;
    munmap(addr, size);
    _hh_os_count_mapped(-(intptr_t)size);
    errno = saved;
}

/* Gives the memory back but keeps the address range: whole segments only,
 * so a huge page is never split. */
void _hh_os_decommit(void *addr, size_t size) {
    int saved = errno;
    madvise(addr, size, MADV_DONTNEED);
    errno = saved;
}

void *_hh_os_map_metadata(size_t size) {
    int saved = errno;
    void *p = map_plain(size, false);
    errno = saved;
    return p;
}

uint64_t _hh_clock_ms(void) {
    struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

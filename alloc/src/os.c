/* Everything libhugeheap asks of the kernel: aligned mappings, huge-page
 * advice, giving memory back, moving and growing mappings, clocks, reading
 * the kernel's files (/proc, /sys).  Advice is given before the memory is first
 * touched, which is what lets the kernel back it with 2 MiB pages at fault
 * time in THP `madvise` mode instead of waiting for khugepaged.  Only the
 * system calls: when memory is advised huge, or given back, policy.c says. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif

static void *map_hugetlb(size_t size);

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* Memory for blocks is mapped without MAP_NORESERVE: the kernel's
 * overcommit check then refuses a request the machine can never provide
 * (ENOMEM now, instead of the OOM killer later). */
static void *map_plain(size_t size, bool reserve) {
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (reserve ? 0 : MAP_NORESERVE);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* size bytes whose start + offset is aligned.  The plain mapping is often
 * aligned already; else an aligned address next to it is usually free; only
 * then is the alignment over-reserved and both ends cut off (which needs
 * twice the address space: a small RLIMIT_AS refuses it). */
static char *map_plain_aligned(size_t size, size_t alignment, size_t offset, bool reserve) {
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (reserve ? 0 : MAP_NORESERVE);
    char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED) return NULL;
    uintptr_t want = _hh_align_up((uintptr_t)p + offset, alignment) - offset;
    if (want == (uintptr_t)p) return p;
    munmap(p, size);
    /* The aligned start below the plain mapping is usually free too (the
     * kernel hands out addresses from the top down), and the one after it
     * often is. */
    uintptr_t below = want - alignment;
    uintptr_t tries[2] = {below < (uintptr_t)p ? below : 0, want};
    for (int i = 0; i < 2; i++) {
        if (tries[i] == 0) continue;
        char *q = mmap((void *)tries[i], size, PROT_READ | PROT_WRITE,
                       flags | MAP_FIXED_NOREPLACE, -1, 0);
        if (q == (char *)tries[i]) return q;
        if (q != MAP_FAILED) munmap(q, size);
    }
    char *raw = mmap(NULL, size + alignment, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uintptr_t start = _hh_align_up((uintptr_t)raw + offset, alignment) - offset;
    if (start < (uintptr_t)raw) start += alignment;
    size_t head = start - (uintptr_t)raw;
    size_t tail = alignment - head;
    if (head) munmap(raw, head);
    if (tail) munmap((char *)start + size, tail);
    return (char *)start;
}

/* Explicit huge pages this process holds count against HUGEHEAP_POOL_MAX_MB
 * (the pool of a node is shared: one run must not drain it).  False, and
 * nothing counted, where taking size more would pass the cap. */
static bool hold_hugetlb(size_t size) {
    uint64_t held = atomic_fetch_add_explicit(&_hh_gstats.hugetlb_bytes, size,
                                              memory_order_relaxed) + size;
    if (held <= _hh_cfg.pool_max) return true;
    atomic_fetch_sub_explicit(&_hh_gstats.hugetlb_bytes, size, memory_order_relaxed);
    atomic_fetch_add_explicit(&_hh_gstats.hugetlb_capped, 1, memory_order_relaxed);
    return false;
}

static void let_go_hugetlb(size_t size) {
    uint64_t before = atomic_fetch_sub_explicit(&_hh_gstats.hugetlb_bytes, size,
                                                memory_order_relaxed);
    HH_ASSERT(before >= size); /* nothing given back that was not held */
    (void)before;
}

/* Explicit huge pages from the kernel's pool.  The pool is reserved at mmap
 * time (no MAP_NORESERVE), so an empty pool fails here, never with SIGBUS
 * at first touch. */
static void *map_hugetlb(size_t size) {
    if (!hold_hugetlb(size)) return NULL;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
    if (p != MAP_FAILED) return p;
    let_go_hugetlb(size);
    return NULL;
}

/* madvise, keeping errno: its failures only mean the advice was not taken. */
static void advise_quietly(void *addr, size_t size, int advice) {
    int saved = errno;
    madvise(addr, size, advice);
    errno = saved;
}

void _hh_os_advise(void *addr, size_t size, bool huge) {
    /* Not huge means plain 4 KiB pages even where THP is `always`. */
    advise_quietly(addr, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* Backs a range already in use with huge pages now (Linux 6.1+); older
 * kernels answer EINVAL, and khugepaged collapses the range later, at its own
 * pace, because it is advised huge. */
void _hh_os_collapse(void *addr, size_t size) { advise_quietly(addr, size, MADV_COLLAPSE); }

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Faults a range in now, writable, without writing it (Linux 5.14+; older
 * kernels answer EINVAL, and the program's first touch faults it in). */
void _hh_os_populate(void *addr, size_t size) { advise_quietly(addr, size, MADV_POPULATE_WRITE); }

bool _hh_os_resident(void *addr, size_t size, unsigned char *vec) {
    int saved = errno;
    bool done = mincore(addr, size, vec) == 0;
    errno = saved;
    return done;
}

void *_hh_os_map_aligned(size_t size, size_t alignment, size_t offset, bool *hugetlb,
                         bool huge) {
    int saved = errno;
    if (*hugetlb) {
        if (offset == 0 && alignment <= HH_UNIT && (size & HH_UNIT_MASK) == 0) {
            void *p = map_hugetlb(size);
            if (p != NULL) {
                errno = saved;
                return p;
            }
        }
        *hugetlb = false;
        atomic_fetch_add_explicit(&_hh_gstats.hugetlb_fallbacks, 1, memory_order_relaxed);
    }
    if (size > SIZE_MAX - alignment) {
        errno = ENOMEM;
        return NULL;
    }
    char *start = map_plain_aligned(size, alignment, offset, true);
    if (start == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    _hh_os_advise(start, size, huge);
    errno = saved;
    return start;
}

void *_hh_os_map_at(void *addr, size_t size) {
    int saved = errno;
    void *p = mmap(addr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
    errno = saved;
    if (p == MAP_FAILED) return NULL;
    if (p != addr) { /* a kernel older than 4.17 took the address as a hint */
        munmap(p, size);
        return NULL;
    }
    return p;
}

void _hh_os_unmap(void *addr, size_t size) {
    int saved = errno;
    munmap(addr, size);
    errno = saved;
}

void _hh_os_unmap_mapped(void *addr, size_t size, size_t pool_bytes) {
    _hh_os_unmap(addr, size);
    if (pool_bytes != 0) let_go_hugetlb(pool_bytes);
}

static void *reserve(size_t size, size_t alignment, int prot) {
    int saved = errno;
    if (size > SIZE_MAX - alignment) return NULL;
    char *raw = mmap(NULL, size + alignment, prot,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    errno = saved;
    if (raw == MAP_FAILED) return NULL;
    uintptr_t start = _hh_align_up((uintptr_t)raw, alignment);
    size_t head = start - (uintptr_t)raw, tail = alignment - head;
    if (head) munmap(raw, head);
    if (tail) munmap((char *)start + size, tail);
    errno = saved;
    return (void *)start;
}

void *_hh_os_reserve(size_t size, size_t alignment) { return reserve(size, alignment, PROT_NONE); }

/* Part of a reservation becomes memory the program may write.  mprotect, not
 * a new mapping over it: the part keeps its huge-page advice and merges with
 * the writable part below it into one mapping. */
bool _hh_os_open(void *addr, size_t size) {
    int saved = errno;
    bool done = mprotect(addr, size, PROT_READ | PROT_WRITE) == 0;
    errno = saved;
    return done;
}

bool _hh_os_close(void *addr, size_t size) {
    int saved = errno;
    bool done = mprotect(addr, size, PROT_NONE) == 0;
    if (done) madvise(addr, size, MADV_DONTNEED);
    errno = saved;
    return done;
}

/* Regions are committed with MAP_NORESERVE: they are address space the page
 * heap fills as it needs, and a request the machine can never provide is
 * refused before it gets here (the memory limit). */
bool _hh_os_commit(void *addr, size_t size) {
    int saved = errno;
    void *p = mmap(addr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    errno = saved;
    return p == addr;
}

void *_hh_os_map_hugetlb(size_t size) {
    int saved = errno;
    void *pages = map_hugetlb(size);
    errno = saved;
    return pages;
}

/* The explicit huge pages are mapped elsewhere first and moved onto the
 * range only once the kernel gave them: a MAP_FIXED mapping that fails may
 * leave a hole where the range was. */
bool _hh_os_commit_hugetlb(void *addr, size_t size) {
    int saved = errno;
    void *pages = map_hugetlb(size);
    bool done = false;
    if (pages != NULL) {
        done = mremap(pages, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, addr) == addr;
        if (!done) _hh_os_unmap_mapped(pages, size, size);
    }
    errno = saved;
    return done;
}

bool _hh_os_uncommit_hugetlb_unit(void *addr) {
    if (!_hh_os_commit(addr, HH_UNIT)) return false;
    let_go_hugetlb(HH_UNIT);
    return true;
}

/* Copies the pages of the unit at `unit` that `pages` marks (bit i: page i;
 * the others read as zeros in both) into `copy`, a unit mapped elsewhere,
 * and moves `copy` over the unit, whose own pages mremap gives back.  Only
 * for a process of one thread, which is in here: no thread could write the
 * pages between the copy and the move.  Signals are blocked meanwhile, so
 * that no handler writes them either. */
static bool copy_over_unit(char *copy, void *unit, const uint64_t *pages) {
    sigset_t all, before;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &before);
    for (size_t i = 0; i < HH_UNIT_PAGES;) {
        while (i < HH_UNIT_PAGES && !(pages[i / 64] >> (i % 64) & 1)) i++;
        size_t start = i;
        while (i < HH_UNIT_PAGES && (pages[i / 64] >> (i % 64) & 1)) i++;
        if (i > start) {
            memcpy(copy + (start << HH_OS_PAGE_SHIFT), (char *)unit + (start << HH_OS_PAGE_SHIFT),
                   (i - start) << HH_OS_PAGE_SHIFT);
        }
    }
    bool moved = mremap(copy, HH_UNIT, HH_UNIT, MREMAP_MAYMOVE | MREMAP_FIXED, unit) == unit;
    sigprocmask(SIG_SETMASK, &before, NULL);
    return moved;
}

/* 4 KiB pages in place of the pool page of the unit at `unit`, holding the
 * bytes of the pages `in_use` marks; the others hold nothing (the kernel
 * neither splits a hugetlb page nor gives back part of one). */
bool _hh_os_move_hugetlb_unit_to_small_pages(void *unit, const uint64_t *in_use) {
    int saved = errno;
    char *copy = map_plain(HH_UNIT, false);
    bool moved = false;
    if (copy != NULL) {
        /* As the dense policy's regions are advised: 4 KiB pages until it
         * finds the unit written enough to be a huge page again. */
        advise_quietly(copy, HH_UNIT, MADV_NOHUGEPAGE);
        moved = copy_over_unit(copy, unit, in_use);
        if (moved) {
            let_go_hugetlb(HH_UNIT);
        } else {
            munmap(copy, HH_UNIT);
        }
    }
    errno = saved;
    return moved;
}

/* The move the other way: a pool page in place of the 4 KiB pages of the
 * unit at `unit`, holding the bytes of the pages `written` marks (those
 * holding memory; the others read as zeros, as a new pool page's do).
 * False where the pool has no page for it, or the kernel would not move it. */
bool _hh_os_move_unit_into_hugetlb(void *unit, const uint64_t *written) {
    int saved = errno;
    char *page = map_hugetlb(HH_UNIT);
    bool moved = page != NULL && copy_over_unit(page, unit, written);
    if (page != NULL && !moved) _hh_os_unmap_mapped(page, HH_UNIT, HH_UNIT);
    errno = saved;
    return moved;
}

/* Gives the memory back but keeps the address range (part of a huge page:
 * see _hh_os_split_huge). */
void _hh_os_decommit(void *addr, size_t size) {
    int saved = errno;
    madvise(addr, size, MADV_DONTNEED);
    errno = saved;
}

/* The kernel keeps a huge page whole when part of it is given back
 * (MADV_DONTNEED unmaps the part but frees nothing: the page waits on a
 * queue it splits only under memory pressure, and the memory cgroup is
 * charged for all of it meanwhile).  MADV_COLD (Linux 5.4+) on a page of it
 * that is still mapped splits it now, and the split frees the parts no
 * longer mapped; it also ages that one page, which without swap changes
 * nothing.  Where the kernel will not, the memory goes at its next split. */
#ifndef MADV_COLD
#define MADV_COLD 20
#endif

void _hh_os_split_huge(void *page) { advise_quietly(page, HH_OS_PAGE, MADV_COLD); }

void *_hh_os_map_metadata(size_t size) {
    int saved = errno;
    void *p = map_plain(size, false);
    errno = saved;
    return p;
}

bool _hh_os_move(void *addr, size_t size, void *target, size_t new_size) {
    return mremap(addr, size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, target) != MAP_FAILED;
}

bool _hh_os_grow(void *addr, size_t size, size_t new_size) {
    int saved = errno;
    void *grown = mremap(addr, size, new_size, 0);
    errno = saved;
    return grown != MAP_FAILED;
}

/* The kernel's files are read inside malloc and at exit: errno is kept, as a
 * malloc that succeeds must leave it (a missing /sys file is no error of the
 * program's). */
size_t _hh_os_read_small_file(const char *path, char *buf, size_t cap) {
    int saved = errno;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? 0 : read(fd, buf, cap);
    if (fd >= 0) close(fd);
    errno = saved;
    return n > 0 ? (size_t)n : 0;
}

bool _hh_os_read_file(const char *path, void (*take)(void *arg, const char *chunk, size_t n),
                      void *arg) {
    int saved = errno;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        errno = saved;
        return false;
    }
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) take(arg, buf, (size_t)n);
    close(fd);
    errno = saved;
    return true;
}

static uint64_t clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t _hh_clock_cpu_ns(void) { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }

uint64_t _hh_clock_thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

uint64_t _hh_clock_ms(void) {
    struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

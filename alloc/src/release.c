/* Giving memory back to the kernel: never what the program will want again.
 *
 * Each 2 MiB unit remembers when pages were last handed out from it; the
 * free memory of a unit nothing was taken from for the release delay
 * (HUGEHEAP_RELEASE_DELAY_MS, 10 s by default) goes back, from the highest
 * addresses down: units free as a whole where a unit may be a huge page,
 * runs of free 4 KiB pages elsewhere (policy.c decides which units are
 * which, and when they are quiet); the free memory beyond a sixteenth of
 * the demand goes sooner, splitting huge pages for it (below, as policy.c
 * decides).  A program
 * that frees and allocates again within the delay (even blocks that do not
 * fit the holes they left, so that the heap keeps more than its demand)
 * faults nothing in twice; memory it stopped using goes back one delay
 * later.  The check runs on the page heap's own operations (a program that
 * stops calling the allocator keeps what it had: a timer thread inside
 * malloc would cost more than it saves).
 *
 * Freed big blocks follow glibc's mmap threshold instead (below).  policy.c
 * decides what goes back and when; this file gives it back. */
#include <string.h>

#include "internal.h"

#define RELEASE_CHECK_MS 50 /* the release policy looks at most this often */
#define PURGE_BATCH 16      /* runs given back per pass (outside the lock) */

static uint64_t next_check_ms; /* the release policy looks again from then on (global lock) */

/* ------------------------------------------------- the release delay */

/* The regions, the last (highest) first: memory goes back from the top. */
static size_t regions_from_top(hh_region **order) {
    size_t n = 0;
    for (hh_region *r = _hh_pageheap.regions; r != NULL; r = r->next) {
        if (n == 64) memmove(order, order + 1, --n * sizeof *order);
        order[n++] = r;
    }
    return n;
}

/* [*from, *to) of r cut to the pages that can hold memory: past the header,
 * below the writable top (nothing beyond it is handed out or written). */
static void clip_to_open(const hh_region *r, size_t *from, size_t *to) {
    if (*from < r->header_pages) *from = r->header_pages;
    if (*to > r->open_pages) *to = r->open_pages;
    if (*to > r->mapped_pages) *to = r->mapped_pages;
}

/* Holds the runs of free pages of [from, to) of r, from the top down (only
 * written ones where `written_only`), into runs[*count..max).  Pages held. */
static size_t hold_free_runs_locked(hh_region *r, size_t from, size_t to, bool written_only,
                                    hh_purge_run *runs, size_t *count, size_t max) {
    size_t held = 0, end = to;
    clip_to_open(r, &from, &end);
#define GOES_BACK(i) (!_hh_bit(r->used, (i)) && (!written_only || _hh_bit(r->dirty, (i))))
    while (end > from && *count < max) {
        size_t i = end;
        while (i > from && !GOES_BACK(i - 1)) i--;
        if (i == from) break;
        size_t start = i;
        while (start > from && GOES_BACK(start - 1)) start--;
#undef GOES_BACK
        _hh_pages_hold_locked(r, start, i - start);
        runs[(*count)++] = (hh_purge_run){r, start, i - start};
        held += i - start;
        end = start;
    }
    return held;
}

/* Picks the free memory to give back (at most PURGE_BATCH runs, from the top
 * down) and marks it used, so that nobody takes it while it is given back
 * outside the lock: the free pages of units that have been quiet for the
 * release delay (a huge heap: only units free as a whole). */
static size_t pick_purge_locked(uint64_t now, bool everything, hh_purge_run *runs) {
    size_t count = 0;
    hh_region *order[64];
    for (size_t k = regions_from_top(order); k-- > 0 && count < PURGE_BATCH;) {
        hh_region *r = order[k];
        if (r->dirty_free == 0) continue;
        for (size_t u = HH_REGION_UNITS; u-- > 0 && count < PURGE_BATCH;) {
            if (!(r->touched_units & ((uint32_t)1 << u)) ||
                !_hh_policy_unit_quiet(r, u, now, everything)) {
                continue;
            }
            size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
            if (_hh_policy_unit_whole_only(r, u)) {
                if (!_hh_unit_is_free(r, u)) continue;
                _hh_pages_hold_locked(r, from, HH_UNIT_PAGES);
                runs[count++] = (hh_purge_run){r, from, HH_UNIT_PAGES};
                continue;
            }
            /* 4 KiB pages: every free run of written pages in the unit, from its top. */
            (void)hold_free_runs_locked(r, from, to, true, runs, &count, PURGE_BATCH);
        }
    }
    return count;
}

/* The memory of the held pages [idx, idx + n) of r went back to the kernel
 * (`bytes` of it): they are clean, and the units left without memory are
 * counted given back.  A unit holds memory while a page of it is written
 * and free, or handed out (written or not: pages are marked written only
 * when they come back), other than the pages given back. */
static void note_given_back_locked(hh_region *r, size_t idx, size_t n, size_t bytes) {
    _hh_set_bits(r->dirty, idx, idx + n, false);
    atomic_fetch_add_explicit(&_hh_gstats.bytes_released, bytes, memory_order_relaxed);
    uint32_t units = _hh_units_of_pages(idx, n) & r->touched_units;
    for (; units != 0; units &= units - 1) {
        size_t u = _hh_lowest_unit(units);
        uint32_t mask = (uint32_t)1 << u;
        size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
        size_t run_from = idx > from ? idx : from, run_to = idx + n < to ? idx + n : to;
        if (_hh_find_bit(r->dirty, from, to, true) == to &&
            _hh_find_bit(r->used, from, run_from, true) == run_from &&
            _hh_find_bit(r->used, run_to, to, true) == to) {
            r->touched_units &= ~mask;
            r->hugetlb_units &= ~mask;
            HH_ASSERT(_hh_pageheap.touched_units > 0);
            _hh_pageheap.touched_units--;
            _hh_pageheap.released_units_outstanding++;
            atomic_fetch_add_explicit(&_hh_gstats.units_released, 1, memory_order_relaxed);
        }
    }
}

/* Held pages (marked used, clean) are free again. */
static void unhold_locked(hh_region *r, size_t idx, size_t n) {
    HH_ASSERT(_hh_find_bit(r->used, idx, idx + n, false) == idx + n); /* held: still marked used */
    _hh_set_bits(r->used, idx, idx + n, false);
    r->free_pages += (uint32_t)n;
    if (idx < r->first_free) r->first_free = (uint32_t)idx;
}

/* The picked runs are given back: clean and free again. */
static void finish_purge_locked(const hh_purge_run *runs, size_t count) {
    for (size_t k = 0; k < count; k++) {
        hh_region *r = runs[k].region;
        HH_ASSERT(runs[k].n > 0 && runs[k].idx >= r->header_pages &&
                  runs[k].idx + runs[k].n <= r->mapped_pages);
        size_t dirty = _hh_count_bits(r->dirty, runs[k].idx, runs[k].idx + runs[k].n);
        note_given_back_locked(r, runs[k].idx, runs[k].n, dirty << HH_OS_PAGE_SHIFT);
        unhold_locked(runs[k].region, runs[k].idx, runs[k].n);
    }
}

/* Outside the lock: the kernel takes the memory (an explicit huge page goes
 * back to its pool by mapping plain memory over it). */
static void purge_runs(const hh_purge_run *runs, size_t count) {
    for (size_t k = 0; k < count; k++) {
        char *addr = (char *)runs[k].region + (runs[k].idx << HH_OS_PAGE_SHIFT);
        size_t size = runs[k].n << HH_OS_PAGE_SHIFT;
        size_t unit = runs[k].idx / HH_UNIT_PAGES;
        if (runs[k].n == HH_UNIT_PAGES && (runs[k].region->hugetlb_units & ((uint32_t)1 << unit))) {
            if (_hh_os_uncommit_hugetlb_unit(addr)) {
                _hh_os_advise(addr, size, true);
                continue;
            }
        }
        _hh_os_decommit(addr, size);
    }
}

/* The picked runs go back to the kernel, and the huge pages at `split`
 * (a page in use of each) are split so that the kernel frees their parts
 * given back.  With the lock held on entry; returns with it held (it is let
 * go while the kernel takes the memory). */
static void purge_and_split_locked(const hh_purge_run *runs, size_t count, char *const *split,
                                   size_t n_split) {
    HH_ASSERT_EXPENSIVE(_hh_pages_valid_locked()); /* the pages held: within the writable ones */
    _hh_unlock();
    purge_runs(runs, count);
    for (size_t k = 0; k < n_split; k++) _hh_os_split_huge(split[k]);
    _hh_lock();
    finish_purge_locked(runs, count);
    HH_ASSERT_EXPENSIVE(_hh_pages_valid_locked());
}

static void purge_locked(const hh_purge_run *runs, size_t count) {
    purge_and_split_locked(runs, count, NULL, 0);
}

/* --------------------------------- free memory beyond the slack bound */

/* policy.c decides how much free memory a heap keeps for the release delay
 * (the slack bound), and how quiet a unit must be for the rest to go back
 * sooner; here it goes back, from the top down: units free as a whole, runs
 * of written free pages in units of 4 KiB pages, and the free pages of a
 * huge page policy.c finds worth splitting (the kernel frees no part of a
 * huge page until it is split). */
#define SLACK_RUNS 128 /* runs given back per pass */
#define SLACK_SPLITS 16 /* huge pages split per pass */

/* Free pages of unit u of r that hold memory: every one of a unit that may
 * be a huge page, the written ones elsewhere. */
static size_t unit_slack_pages(const hh_region *r, size_t u) {
    size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
    if (_hh_policy_unit_whole_only(r, u)) return HH_UNIT_PAGES - _hh_count_bits(r->used, from, to);
    return _hh_count_dirty_free(r, from, to);
}

static uint64_t slack_pages_locked(void) {
    uint64_t pages = 0;
    for (hh_region *r = _hh_pageheap.regions; r != NULL; r = r->next) {
        for (size_t u = 0; u < HH_REGION_UNITS; u++) {
            if (r->touched_units & ((uint32_t)1 << u)) pages += unit_slack_pages(r, u);
        }
    }
    return pages;
}

/* How many runs of free pages [from, to) of r has (those clip_to_open leaves). */
static size_t free_runs_in(const hh_region *r, size_t from, size_t to) {
    size_t runs = 0;
    clip_to_open(r, &from, &to);
    for (size_t i = from; i < to;) {
        i = _hh_find_bit(r->used, i, to, false);
        if (i == to) break;
        runs++;
        i = _hh_find_bit(r->used, i, to, true);
    }
    return runs;
}

/* The pool page of unit u of r becomes 4 KiB pages that hold its pages in
 * use only (os.c copies them), so that its free pages, given back as a split
 * huge page's are, hold no memory: done here, under the lock, because the
 * process has one thread (policy.c's _hh_policy_pool_units_movable), which
 * nobody else waits for.  False where the kernel would not map the copy. */
static bool move_pool_unit_locked(hh_region *r, size_t u) {
    size_t from = u * HH_UNIT_PAGES;
    uint64_t in_use[HH_UNIT_PAGES / 64];
    memcpy(in_use, &r->used[from / 64], sizeof in_use);
    if (!_hh_os_move_hugetlb_unit_to_small_pages((char *)r + (from << HH_OS_PAGE_SHIFT), in_use)) {
        return false;
    }
    _hh_policy_pool_unit_moved_locked(r, u);
    return true;
}

/* Picks (and holds) up to `excess` pages of free memory of units quiet for
 * `quiet_ms` to give back, from the top down; the huge pages to split for
 * it, a page in use of each, in split[]; the sparse units' pool pages are
 * moved into 4 KiB pages at once where the process has one thread. */
static size_t pick_slack_locked(uint64_t now, uint64_t quiet_ms, uint64_t excess,
                                hh_purge_run *runs, char **split, size_t *n_split) {
    int pool_movable = -1; /* read once a unit is worth moving */
    size_t count = 0;
    uint64_t picked = 0;
    hh_region *order[64];
    for (size_t k = regions_from_top(order); k-- > 0;) {
        hh_region *r = order[k];
        for (size_t u = HH_REGION_UNITS; u-- > 0;) {
            if (picked >= excess || count == SLACK_RUNS) return count;
            if (!(r->touched_units & ((uint32_t)1 << u)) ||
                now - r->unit_used_ms[u] < quiet_ms) {
                continue;
            }
            size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
            if (!_hh_policy_unit_whole_only(r, u)) {
                picked += hold_free_runs_locked(r, from, to, true, runs, &count, SLACK_RUNS);
            } else if (_hh_unit_is_free(r, u)) {
                _hh_pages_hold_locked(r, from, HH_UNIT_PAGES);
                runs[count++] = (hh_purge_run){r, from, HH_UNIT_PAGES};
                picked += HH_UNIT_PAGES;
            } else if (*n_split < SLACK_SPLITS && _hh_policy_unit_worth_splitting(r, u)) {
                if (count + free_runs_in(r, from, to) > SLACK_RUNS) return count; /* at the next pass */
                /* A page in use (mapped: a block's or the header's), found
                 * before the free ones are held. */
                size_t in_use = _hh_find_bit(r->used, from, to, true);
                size_t held = hold_free_runs_locked(r, from, to, false, runs, &count, SLACK_RUNS);
                _hh_policy_unit_split_locked(r, u);
                split[(*n_split)++] = (char *)r + (in_use << HH_OS_PAGE_SHIFT);
                picked += held;
            } else if (_hh_policy_pool_unit_worth_moving(r, u)) {
                if (pool_movable < 0) pool_movable = _hh_policy_pool_units_movable();
                if (!pool_movable) continue;
                if (count + free_runs_in(r, from, to) > SLACK_RUNS) return count; /* at the next pass */
                if (!move_pool_unit_locked(r, u)) continue;
                picked += hold_free_runs_locked(r, from, to, false, runs, &count, SLACK_RUNS);
            }
        }
    }
    return count;
}

/* Gives back the free memory beyond the slack bound, one pass.  Pages
 * given back. */
static size_t give_back_slack_locked(uint64_t now) {
    uint64_t bound, quiet_ms;
    if (!_hh_policy_slack_goes_back_locked(&bound, &quiet_ms)) return 0;
    uint64_t slack = slack_pages_locked();
    if (slack <= bound) return 0;
    hh_purge_run runs[SLACK_RUNS];
    char *split[SLACK_SPLITS];
    size_t n_split = 0;
    size_t count = pick_slack_locked(now, quiet_ms, slack - bound, runs, split, &n_split);
    if (count == 0) return 0;
    purge_and_split_locked(runs, count, split, n_split);
    size_t pages = 0;
    for (size_t k = 0; k < count; k++) pages += runs[k].n;
    atomic_fetch_add_explicit(&_hh_gstats.slack_bytes_released, (uint64_t)pages << HH_OS_PAGE_SHIFT,
                              memory_order_relaxed);
    return pages;
}

/* With the lock held on entry; returns with it held.  Bytes given back. */
size_t _hh_release_locked(bool everything) {
    size_t released = 0;
    uint64_t now = _hh_clock_ms();
    if (!everything) {
        if (now < next_check_ms || _hh_pageheap.dirty_free_pages == 0) return 0;
        next_check_ms = now + RELEASE_CHECK_MS;
    }
    for (;;) {
        hh_purge_run runs[PURGE_BATCH];
        size_t count = pick_purge_locked(now, everything, runs);
        if (count == 0) break;
        purge_locked(runs, count);
        for (size_t k = 0; k < count; k++) released += runs[k].n << HH_OS_PAGE_SHIFT;
        if (!everything) break; /* one batch per check: the rest at the next one */
    }
    /* The time again: the lock was let go, and another thread may have
     * taken pages since (a unit used after `now` would look quiet). */
    if (!everything) released += give_back_slack_locked(_hh_clock_ms()) << HH_OS_PAGE_SHIFT;
    _hh_usage_changed_locked();
    return released;
}

size_t _hh_release_pages(bool everything) {
    _hh_lock();
    size_t released = _hh_release_locked(everything);
    _hh_unlock();
    return released;
}

/* ------------------------------------ freed big blocks: glibc's threshold */

/* policy.c decides which freed medium blocks give their memory back (a bar
 * at glibc's mmap threshold, rising as glibc's does); here they do.  A small
 * heap's such block is shut: its memory goes back, its pages become
 * PROT_NONE and are held out of the page heap (the last SHUT_SLOTS such
 * blocks; all of them at the promotion), so a use after free of it faults
 * and the next allocation gets other pages.  Otherwise (a huge heap, or
 * explicit huge pages) it goes back into the page heap, and the 2 MiB units
 * it leaves free as a whole go back to the kernel (never part of a huge
 * page: that would split it) unless giving back churns. */
#define SHUT_SLOTS 8

static hh_purge_run shut[SHUT_SLOTS]; /* oldest first */
static size_t shut_count;

/* A unit marked touched that is free as a whole and clean holds no memory
 * (the shut blocks in it kept it marked while they were held): unmarked,
 * it is not made a huge page at the promotion. */
static void forget_unit_if_clean_locked(hh_region *r, size_t u) {
    uint32_t mask = (uint32_t)1 << u;
    size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
    if (!(r->touched_units & mask) || !_hh_unit_is_free(r, u) ||
        _hh_find_bit(r->dirty, from, to, true) != to) {
        return;
    }
    r->touched_units &= ~mask;
    HH_ASSERT(_hh_pageheap.touched_units > 0);
    _hh_pageheap.touched_units--;
}

/* The oldest shut block goes back into the page heap, writable and clean;
 * where the kernel will not make it writable it stays held (address space
 * lost, not memory). */
static void unshut_oldest_locked(void) {
    hh_purge_run run = shut[0];
    memmove(shut, shut + 1, --shut_count * sizeof *shut);
    char *addr = (char *)run.region + (run.idx << HH_OS_PAGE_SHIFT);
    if (!_hh_os_open(addr, run.n << HH_OS_PAGE_SHIFT)) return;
    unhold_locked(run.region, run.idx, run.n);
    for (uint32_t units = _hh_units_of_pages(run.idx, run.n); units != 0; units &= units - 1) {
        forget_unit_if_clean_locked(run.region, _hh_lowest_unit(units));
    }
}

/* Shuts the freed block [idx, idx + n) of r; false (the kernel refused):
 * it is to be freed as usual. */
static bool shut_locked(hh_region *r, size_t idx, size_t n) {
    char *addr = (char *)r + (idx << HH_OS_PAGE_SHIFT);
    size_t size = n << HH_OS_PAGE_SHIFT;
    if (!_hh_os_close(addr, size)) {
        _hh_os_open(addr, size); /* part of it may be PROT_NONE now */
        return false;
    }
    if (shut_count == SHUT_SLOTS) unshut_oldest_locked();
    HH_ASSERT(shut_count < SHUT_SLOTS);
    shut[shut_count++] = (hh_purge_run){r, idx, n};
    atomic_fetch_add_explicit(&_hh_gstats.blocks_shut, 1, memory_order_relaxed);
    note_given_back_locked(r, idx, n, size); /* its pages stay marked used: held */
    _hh_usage_demand_locked(-(int64_t)n);
    _hh_usage_changed_locked();
    return true;
}

/* The units that the freed pages [idx, idx + n) of r leave free as a whole
 * go back to the kernel now.  With the lock held on entry; returns with it
 * held (it is let go while the kernel takes the memory). */
static void give_back_free_units_locked(hh_region *r, size_t idx, size_t n) {
    hh_purge_run runs[HH_REGION_UNITS];
    size_t count = 0;
    uint32_t units = _hh_units_of_pages(idx, n) & r->touched_units;
    for (; units != 0; units &= units - 1) {
        size_t u = _hh_lowest_unit(units);
        if (!_hh_unit_is_free(r, u)) continue;
        _hh_pages_hold_locked(r, u * HH_UNIT_PAGES, HH_UNIT_PAGES);
        runs[count++] = (hh_purge_run){r, u * HH_UNIT_PAGES, HH_UNIT_PAGES};
    }
    if (count == 0) return;
    purge_locked(runs, count);
    _hh_usage_changed_locked();
}

/* Whether a unit of the pages [idx, idx + n) of r is a page of the hugetlb pool. */
static bool in_pool_pages(const hh_region *r, size_t idx, size_t n) {
    return (r->hugetlb_units & _hh_units_of_pages(idx, n)) != 0;
}

/* A medium block freed: shut, or freed and its free units given back, if
 * policy.c says it goes back; freed as usual otherwise.  With the lock held. */
void _hh_release_block_locked(hh_region *r, size_t idx, size_t n, bool gives_back, bool moved) {
    if (!_hh_policy_freed_block_goes_back(n, gives_back, moved)) {
        _hh_pages_free_locked(r, idx, n, n);
        return;
    }
    if (_hh_policy_freed_block_shut(in_pool_pages(r, idx, n)) && shut_locked(r, idx, n)) return;
    _hh_pages_free_locked(r, idx, n, n);
    if (!_hh_policy_giving_back_churns()) give_back_free_units_locked(r, idx, n);
}

void _hh_release_unshut_all_locked(void) {
    while (shut_count > 0) unshut_oldest_locked();
}

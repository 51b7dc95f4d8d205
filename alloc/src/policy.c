/* The memory policy: when memory becomes huge pages, and when it goes back
 * to the kernel.  os.c makes the system calls; this file decides.
 *
 * The heap: it starts small, in 4 KiB pages advised MADV_NOHUGEPAGE (so THP
 * `always` and khugepaged leave it alone, and a small process costs what it
 * would under glibc).  Once the demand (pages, large blocks, arenas' and
 * pools' memory in use) reaches HUGEHEAP_HUGE_THRESHOLD_MB it is promoted,
 * once: the switch is one way, a heap that was large once stays huge.
 *
 * A large block (and an arena's chunk, a pool's region: api_memory.c):
 * mapped from then on advised MADV_HUGEPAGE before its first touch; the
 * large blocks mapped while the heap was small are listed here and advised
 * huge and collapsed at the promotion (a block that never grows would
 * otherwise stay in 4 KiB pages for good).
 *
 * A region's 2 MiB unit: under the dense policy (HUGEHEAP_HUGE_UNITS=dense,
 * the default) it becomes a huge page once the program has written most of
 * it, until the heap proves dense and every unit is made huge; with `all`,
 * every unit is huge from its first touch.  A run of 2 MiB or more handed out
 * whole is huge from its first touch either way.
 *
 * What huge pages cost: the library times every huge page it makes itself,
 * by MADV_COLLAPSE or by faulting a unit in before the program writes it
 * (MADV_POPULATE_WRITE), in the CPU time of the thread that makes it: the
 * budget is a share of CPU time, and a thread descheduled meanwhile (a busy
 * node) spent none of it waiting.  What one takes beyond FREE_UNIT_NS (about
 * what the same memory costs in 4 KiB pages) is paid from a budget of a
 * share of the process's CPU time so far (1/32, HUGEHEAP_HUGE_BUDGET_SHARE);
 * a large block, huge at the program's first touch, is charged at what its
 * first unit took (a sample the library faults in), its growth at what the
 * last ones took.  Where huge pages cost no more than small ones (bare
 * metal, or huge pages another process has just freed) the budget never
 * binds; where the host backs fresh memory lazily (2-10 ms per 2 MiB on this
 * project's virtual machine) a short run whose heap grows fast stays mostly
 * in 4 KiB pages, as under glibc, and a long one gets its huge pages as it
 * goes.
 * HUGEHEAP_HUGE_BUDGET=off buys every huge page whatever it costs (and a
 * heap that proves dense is huge at the first touch, untimed, as before the
 * budget); `always` pays the whole cost from the budget.
 *
 * Giving back: this file decides when memory goes back to the kernel, for
 * all three kinds of it; release.c and large.c give it back.  A region's
 * unit gives back its free memory once the unit was quiet for the release
 * delay (a unit that may be a huge page only whole), and the free memory
 * beyond a sixteenth of the demand sooner (the slack); a freed medium block
 * at glibc's mmap threshold or above gives its memory back at once, the bar
 * rising as glibc's does; a freed large block is unmapped at once, or, where
 * the program churns blocks of its size, waits in large.c's cache for the
 * release delay.  One churn detector, with two inputs (units faulted in
 * again, sizes of large blocks mapped again), keeps what the program would
 * take again ("giving back", at the end). */
#include <string.h>

#include "internal.h"

#define OPEN_STEP_PAGES 64 /* a small heap's pages become writable 256 KiB at a time */

/* ------------------------------------------------ what huge pages cost */

#define FREE_UNIT_NS 1000000u /* a unit costs about this in 4 KiB pages anyway (512 faults) */
#define CALIBRATION_UNITS 4   /* made and timed before a huge page at the first touch is charged */
#define RETRY_MS 50           /* work the budget deferred is looked at again this often */

static _Atomic(uint64_t) made_ns, made_units; /* what the huge pages the library made took */
static _Atomic(uint64_t) recent_excess_ns;    /* beyond FREE_UNIT_NS per unit, the last few */
static _Atomic(int64_t) dearest_excess_ns;    /* the most one make cost the budget */
static atomic_bool work_deferred;             /* units or blocks wait for the budget */
static _Atomic(uint64_t) retry_at_ms;
static atomic_bool dense_check_due; /* units may have become dense (dense policy) */

static size_t units_in(size_t bytes) { return (bytes + HH_UNIT - 1) >> HH_UNIT_SHIFT; }

/* What a unit that took `ns` costs the budget: what it took beyond what the
 * same memory costs in 4 KiB pages (everything, with the budget `always`). */
static uint64_t excess_ns(uint64_t ns) {
    if (_hh_cfg.huge_budget == HH_BUDGET_ALWAYS) return ns;
    return ns > FREE_UNIT_NS ? ns - FREE_UNIT_NS : 0;
}

/* What is left of the budget now; UINT64_MAX where it is off. */
static uint64_t budget_left_ns(void) {
    if (_hh_cfg.huge_budget == HH_BUDGET_OFF) return UINT64_MAX;
    uint64_t allowed = _hh_clock_cpu_ns() / _hh_cfg.huge_budget_share;
    uint64_t spent = atomic_load_explicit(&_hh_gstats.huge_cost_ns, memory_order_relaxed);
    return allowed > spent ? allowed - spent : 0;
}

/* Whether the budget affords `units` more huge pages at `each` apiece
 * (something must be left: the library's own are paid as they are made, so
 * the budget is overdrawn by one at most). */
static bool budget_affords_at(size_t units, uint64_t each) {
    uint64_t left = budget_left_ns();
    if (left == UINT64_MAX) return true;
    return left > 0 && (each == 0 || units <= left / each);
}

/* The same, at what the last ones cost. */
static bool budget_affords(size_t units) {
    return budget_affords_at(units, atomic_load_explicit(&recent_excess_ns, memory_order_relaxed));
}

/* Pays for `units` huge pages at `each` apiece, made at the program's first
 * touch (which cannot be timed). */
static void charge(size_t units, uint64_t each) {
    atomic_fetch_add_explicit(&_hh_gstats.huge_cost_ns, units * each, memory_order_relaxed);
}

/* Work the budget does not afford now is looked at again in RETRY_MS. */
static void defer_for_budget(void) {
    atomic_fetch_add_explicit(&_hh_gstats.huge_deferred, 1, memory_order_relaxed);
    atomic_store_explicit(&retry_at_ms, _hh_clock_ms() + RETRY_MS, memory_order_relaxed);
    atomic_store_explicit(&work_deferred, true, memory_order_relaxed);
}

/* Pays for `units` huge pages made in `took` ns; what each cost the budget. */
static uint64_t pay_made(uint64_t took, uint64_t units) {
    uint64_t excess = excess_ns(took / units);
    atomic_fetch_add_explicit(&made_ns, took, memory_order_relaxed);
    atomic_fetch_add_explicit(&made_units, units, memory_order_relaxed);
    uint64_t cost = excess * units; /* to the budget */
    atomic_fetch_add_explicit(&_hh_gstats.huge_cost_ns, cost, memory_order_relaxed);
    /* The budget is asked before a make, at what the last ones cost, so one
     * dearer than those (a fresh page) overdraws it by up to this much. */
    _hh_raise_to(&dearest_excess_ns, (int64_t)cost);
    /* A running average over the last few (weight 1/4): a fresh huge page
     * here costs ten times a recycled one, and they come in runs. */
    uint64_t recent = atomic_load_explicit(&recent_excess_ns, memory_order_relaxed);
    atomic_store_explicit(&recent_excess_ns, recent - recent / 4 + excess / 4, memory_order_relaxed);
    return excess;
}

/* Makes huge pages of [addr, addr + size) by `make` (collapse or populate),
 * and pays the CPU time it took; returns what it cost the budget per unit. */
static uint64_t make_huge_timed(void (*make)(void *, size_t), void *addr, size_t size) {
    uint64_t start = _hh_clock_thread_cpu_ns();
    make(addr, size);
    uint64_t took = _hh_clock_thread_cpu_ns() - start;
    return pay_made(took, units_in(size) > 0 ? units_in(size) : 1);
}

void _hh_policy_collapse(void *addr, size_t size) {
    (void)make_huge_timed(_hh_os_collapse, addr, size);
}

/* Faults the 2 MiB unit at `unit` in as a huge page, timed and paid;
 * returns what it cost the budget. */
static uint64_t populate_unit(void *unit) {
    atomic_fetch_add_explicit(&_hh_gstats.units_populated, 1, memory_order_relaxed);
    return make_huge_timed(_hh_os_populate, unit, HH_UNIT);
}

/* Whether `units` more units may be huge pages at the program's first touch
 * (the kernel pays for them in its page faults, which cannot be timed):
 * once some units were made and timed, and the budget affords them at what
 * the last ones cost, which is charged. */
static bool afford_at_fault(size_t units) {
    if (units == 0 || _hh_cfg.huge_budget == HH_BUDGET_OFF) return true;
    if (atomic_load_explicit(&made_units, memory_order_relaxed) < CALIBRATION_UNITS ||
        !budget_affords(units)) {
        defer_for_budget();
        return false;
    }
    charge(units, atomic_load_explicit(&recent_excess_ns, memory_order_relaxed));
    return true;
}

uint64_t _hh_policy_dearest_cost_ns(void) {
    return (uint64_t)atomic_load_explicit(&dearest_excess_ns, memory_order_relaxed);
}

uint64_t _hh_policy_unit_cost_ns(void) {
    uint64_t units = atomic_load_explicit(&made_units, memory_order_relaxed);
    return units ? atomic_load_explicit(&made_ns, memory_order_relaxed) / units : 0;
}

/* Work the budget deferred is due again. */
static bool deferred_work_due(void) {
    if (HH_LIKELY(!atomic_load_explicit(&work_deferred, memory_order_relaxed))) return false;
    if (_hh_clock_ms() < atomic_load_explicit(&retry_at_ms, memory_order_relaxed)) return false;
    return atomic_exchange_explicit(&work_deferred, false, memory_order_relaxed);
}

/* ----------------------------------------------------------- the heap */

static atomic_bool heap_is_large;   /* set once, when the demand reached the threshold */
static atomic_bool promotion_due;   /* the early heap still waits for its promotion */
static _Atomic(int64_t) demand;     /* bytes of pages, blocks, arenas and pools in use */

void _hh_policy_count_demand(intptr_t delta) {
    int64_t before = atomic_fetch_add_explicit(&demand, delta, memory_order_relaxed);
    HH_ASSERT(before + delta >= 0); /* nothing given back that was not handed out */
    (void)before;
}

size_t _hh_policy_demand(void) {
    int64_t used = atomic_load_explicit(&demand, memory_order_relaxed);
    return (used > 0 ? (size_t)used : 0) + _hh_glibc_live_bytes();
}

bool _hh_policy_heap_small(void) { return _hh_policy_demand() < _hh_cfg.huge_threshold; }

bool _hh_policy_huge_now(size_t adding) {
    if (_hh_cfg.thp == HH_THP_OFF) return false;
    if (HH_LIKELY(atomic_load_explicit(&heap_is_large, memory_order_relaxed))) return true;
    if (_hh_policy_demand() + adding < _hh_cfg.huge_threshold) return false;
    if (!atomic_exchange_explicit(&heap_is_large, true, memory_order_relaxed)) {
        atomic_store_explicit(&promotion_due, true, memory_order_relaxed);
    }
    return true;
}

/* True once, for the caller that is to promote the early heap. */
static bool take_promotion(void) {
    if (HH_LIKELY(!atomic_load_explicit(&promotion_due, memory_order_relaxed))) return false;
    return atomic_exchange_explicit(&promotion_due, false, memory_order_relaxed);
}

bool _hh_policy_heap_is_huge(void) { return _hh_policy_huge_now(0) && _hh_cfg.thp != HH_THP_OFF; }

/* The dense policy (HUGEHEAP_HUGE_UNITS=dense, the default): a huge heap's
 * regions stay advised NOHUGEPAGE, and each 2 MiB unit becomes a huge page
 * on its own once the program has written most of it (collapse_dense_units),
 * so memory handed out and never written stays out, as under glibc.
 * Otherwise (`all`) regions are advised huge whole and every unit is a huge
 * page from its first touch. */
static atomic_bool dense_policy_dropped; /* the heap proved dense: every unit is huge now */

static bool units_by_density(void) {
    /* In hugetlb mode too: a unit the heap touches once it is huge is a pool
     * page from then on; the units it wrote in 4 KiB pages before (or where
     * the pool was empty) become transparent huge pages as they fill, as
     * the budget allows, not all at the threshold (z3's factor-28 held 6.9
     * MiB more so, unwritten, 1.36 of glibc's peak against 1.12). */
    bool thp = _hh_cfg.thp == HH_THP_ON || _hh_cfg.thp == HH_THP_HUGETLB;
    return thp && _hh_cfg.huge_units_dense &&
           !atomic_load_explicit(&dense_policy_dropped, memory_order_relaxed);
}

/* Whether memory of regions is advised huge before its first touch. */
bool _hh_policy_regions_huge_at_fault(void) {
    return _hh_policy_huge_now(0) && !units_by_density();
}

bool _hh_policy_every_unit_huge(void) { return _hh_policy_heap_is_huge() && !units_by_density(); }

/* Whether units become huge pages one by one now, as they are found written. */
static bool dense_policy_in_force(void) { return units_by_density() && _hh_policy_heap_is_huge(); }

/* Whether unit u of r can be a huge page, so its free memory goes back only
 * with the whole unit (but for the free memory beyond the release policy's
 * bound, for which release.c splits huge pages at most half in use). */
bool _hh_policy_unit_whole_only(const hh_region *r, size_t u) {
    return _hh_policy_heap_is_huge() &&
           (!units_by_density() || ((r->huge_units | r->hugetlb_units) >> u & 1));
}

/* Whether the huge page of unit u of r may be split to give back its free
 * pages (the dense policy, which makes it huge again once it is dense). */
static bool unit_splittable(const hh_region *r, size_t u) {
    return dense_policy_in_force() && (r->huge_units >> u & 1) && !(r->hugetlb_units >> u & 1);
}

void _hh_policy_unit_split_locked(hh_region *r, size_t u) {
    HH_ASSERT(unit_splittable(r, u));
    r->huge_units &= ~((uint32_t)1 << u);
    r->unit_checked_at[u] = 0; /* collapsed again once dense, as the budget allows */
    atomic_fetch_add_explicit(&_hh_gstats.units_split, 1, memory_order_relaxed);
}

/* Pages become writable this many at a time: whole units where a unit may
 * be a huge page (a huge heap's; a small heap's stay in 4 KiB pages in
 * hugetlb mode too, and a pool page opens its unit whole when it comes). */
size_t _hh_policy_open_step(void) {
    return _hh_policy_heap_is_huge() ? HH_UNIT_PAGES : OPEN_STEP_PAGES;
}

/* Units the library makes huge pages of itself before the program writes
 * them (MADV_POPULATE_WRITE, timed), while the budget affords it: those a
 * run of 2 MiB or more covers whole, and, in a heap that proved dense
 * (below) with the budget on, each unit it touches from then on.  Huge pages
 * at the program's first touch could not be timed, and the first units of a
 * process say little of the rest: they come from huge pages another process
 * has just freed (0.5-1 ms here), the later ones are fresh (5-10 ms).
 * Guarded by the global lock. */
#define POPULATE_QUEUE 64
static bool populate_new_units;
static char *populate_queue[POPULATE_QUEUE];
static size_t populate_count;
static atomic_bool populate_due;

/* Queues unit u of r to be made a huge page before the program writes it,
 * if the budget affords it; false if it stays in 4 KiB pages (collapsed once
 * written, as the budget allows). */
static bool queue_populate_locked(hh_region *r, size_t u) {
    uint32_t mask = (uint32_t)1 << u;
    if (populate_count == POPULATE_QUEUE || ((r->huge_units | r->hugetlb_units) & mask)) return false;
    if (!budget_affords(1)) {
        defer_for_budget();
        return false;
    }
    char *unit = (char *)r + (u << HH_UNIT_SHIFT);
    _hh_os_advise(unit, HH_UNIT, true);
    r->huge_units |= mask;
    populate_queue[populate_count++] = unit;
    atomic_store_explicit(&populate_due, true, memory_order_relaxed);
    return true;
}

/* The units queued are faulted in as huge pages, by the thread that touched
 * them, before it hands their memory to the program. */
static void populate_queued_units(void) {
    char *units[POPULATE_QUEUE];
    _hh_lock();
    size_t n = populate_count;
    memcpy(units, populate_queue, n * sizeof units[0]);
    populate_count = 0;
    atomic_store_explicit(&populate_due, false, memory_order_relaxed);
    _hh_unlock();
    for (size_t i = 0; i < n; i++) (void)populate_unit(units[i]);
}

/* Under the dense policy, the units a run covers whole that hold no memory
 * yet are made huge pages before the run is handed out: a block of 2 MiB or
 * more is an array the program fills, as a large block is, which is huge at
 * its first touch; looking at such units first would fault them twice. */
void _hh_policy_advise_whole_units_locked(hh_region *r, size_t idx, size_t n) {
    /* In hugetlb mode such a unit is a pool page at its first touch. */
    if (n < HH_UNIT_PAGES || !dense_policy_in_force() || _hh_cfg.thp == HH_THP_HUGETLB) return;
    for (size_t u = _hh_align_up(idx, HH_UNIT_PAGES) / HH_UNIT_PAGES;
         (u + 1) * HH_UNIT_PAGES <= idx + n; u++) {
        uint32_t mask = (uint32_t)1 << u;
        if ((r->touched_units | r->huge_units) & mask) continue;
        if (!queue_populate_locked(r, u)) return; /* collapsed once written, as the budget allows */
    }
}

/* ----------------------------------------------------- large blocks */

bool _hh_policy_new_block_huge(size_t span) {
    if (!_hh_policy_huge_now(span)) return false;
    if (budget_left_ns() > 0) return true;
    defer_for_budget();
    return false;
}

bool _hh_policy_block_first_unit(char *user, size_t usable) {
    if (_hh_cfg.huge_budget == HH_BUDGET_OFF || usable < HH_UNIT) return true;
    uint64_t each = populate_unit(user);
    size_t rest = units_in(usable) - 1;
    if (rest == 0 || budget_affords_at(rest, each)) {
        charge(rest, each);
        return true;
    }
    _hh_os_advise(user + HH_UNIT, usable - HH_UNIT, false);
    defer_for_budget();
    return false;
}

bool _hh_policy_block_huge(size_t adding, size_t collapsing) {
    if (!_hh_policy_huge_now(adding)) return false;
    if (collapsing > 0 && !budget_affords(units_in(adding) + units_in(collapsing))) {
        defer_for_budget();
        return false;
    }
    return afford_at_fault(units_in(adding)); /* the collapse is paid as it runs */
}

/* The blocks mapped in 4 KiB pages while the heap was small, for the
 * promotion to make huge (a block that never grows would otherwise stay in
 * small pages for good), and those the budget for huge pages did not afford
 * at their first touch, to collapse as it grows.  Guarded by the global
 * lock; a block whose header is here has small_pages set.  A block that
 * finds it full stays in small pages. */
#define SMALL_PAGE_BLOCKS 512
static hh_large *small_page_blocks[SMALL_PAGE_BLOCKS];
static size_t small_page_count;

void _hh_policy_list_small_block(hh_large *h) {
    HH_ASSERT(atomic_load_explicit(&h->small_pages, memory_order_relaxed));
    _hh_lock();
    if (small_page_count < SMALL_PAGE_BLOCKS) {
        small_page_blocks[small_page_count++] = h;
    } else {
        atomic_store_explicit(&h->small_pages, 0, memory_order_relaxed);
    }
    _hh_unlock();
}

void _hh_policy_unlist_small_block(hh_large *h) {
    if (!atomic_load_explicit(&h->small_pages, memory_order_relaxed)) return;
    _hh_lock();
    for (size_t i = 0; i < small_page_count; i++) {
        if (small_page_blocks[i] == h) {
            small_page_blocks[i] = small_page_blocks[--small_page_count];
            break;
        }
    }
    _hh_unlock();
}

/* The blocks listed in 4 KiB pages are advised huge and collapsed: at the
 * promotion all of them, later as many as the budget affords (the others
 * stay listed). */
static void collapse_listed_blocks(bool budgeted) {
    enum { BATCH = 32 }; /* a small frame: malloc may run on a small stack */
    struct {
        char *base, *user;
        size_t map_size, usable;
    } blocks[BATCH];
    for (;;) {
        size_t n = 0;
        _hh_lock();
        HH_ASSERT(small_page_count <= SMALL_PAGE_BLOCKS);
        while (small_page_count > 0 && n < BATCH) {
            hh_large *h = small_page_blocks[small_page_count - 1];
            if (budgeted && (n > 0 || !budget_affords(units_in(h->usable)))) break;
            small_page_count--;
            atomic_store_explicit(&h->small_pages, 0, memory_order_relaxed);
            blocks[n].base = h->map_base;
            blocks[n].user = (char *)h + HH_LARGE_HEADER;
            blocks[n].map_size = h->map_size;
            blocks[n].usable = h->usable;
            n++;
        }
        bool waiting = small_page_count > 0;
        _hh_unlock();
        if (n == 0) {
            if (waiting && budgeted) defer_for_budget();
            return;
        }
        /* Outside the lock, as the regions' collapse: a block freed meanwhile
         * makes madvise fail (ENOMEM, ignored) or, if its address was mapped
         * again, collapse memory that is someone else's but keeps its
         * contents. */
        for (size_t i = 0; i < n; i++) {
            _hh_os_advise(blocks[i].base, blocks[i].map_size, true);
            _hh_policy_collapse(blocks[i].user, blocks[i].usable & ~HH_UNIT_MASK);
            atomic_fetch_add_explicit(&_hh_gstats.units_promoted,
                                      blocks[i].usable >> HH_UNIT_SHIFT, memory_order_relaxed);
        }
    }
}

/* ------------------------------------------------ units: the dense policy */

/* Whether a new unit gets its pool page at the program's first touch.  Not
 * under the dense policy in a one-thread process, until the heap proved
 * dense: the unit starts in 4 KiB pages and is moved into a pool page once
 * found written (collapse_dense_units), so a sparse heap's unit holds what
 * the program wrote of it, as in THP mode, not a whole pool page.  Where
 * threads could write a unit while it is copied, and without the budget
 * (which makes every unit huge at once, not by moves), at the first touch. */
static bool pool_page_at_first_touch(void) {
    return populate_new_units || _hh_cfg.huge_budget == HH_BUDGET_OFF ||
           !dense_policy_in_force() || !_hh_policy_pool_units_movable();
}

void _hh_policy_unit_touched_locked(hh_region *r, size_t u) {
    uint32_t mask = (uint32_t)1 << u;
    if (_hh_cfg.thp == HH_THP_HUGETLB && !(r->hugetlb_units & mask) && _hh_policy_huge_now(0) &&
        pool_page_at_first_touch()) {
        /* Untouched: nothing to lose by replacing it.  A small heap stays in
         * 4 KiB pages, as with transparent ones: a pool page for each unit
         * it touches would cost it up to 2 MiB of the pool apiece.  The unit
         * is made writable whole first: the kernel changes the protection
         * of a pool page whole only, so the region's writable part must
         * never end inside one. */
        if (_hh_region_open_to_locked(r, (u + 1) * HH_UNIT_PAGES) &&
            _hh_os_commit_hugetlb((char *)r + ((size_t)u << HH_UNIT_SHIFT), HH_UNIT)) {
            r->hugetlb_units |= mask;
        } else {
            atomic_fetch_add_explicit(&_hh_gstats.hugetlb_fallbacks, 1, memory_order_relaxed);
        }
    }
    /* The units below a new one are likely written by now; a new one not
     * in the pool's pages is made huge ahead where the heap proved dense. */
    if (dense_policy_in_force()) {
        atomic_store_explicit(&dense_check_due, true, memory_order_relaxed);
        if (populate_new_units) queue_populate_locked(r, u);
    }
}

#define DENSE_BATCH 32 /* units looked at per pass (outside the lock) */

/* A heap that reaches this many units (64 MiB) while the units seen sparse
 * twice hold less than 1/DENSE_SPARSE_SHARE of its pages unwritten writes
 * what it allocates: the dense policy, which faults every unit in 4 KiB
 * pages and then copies it into a huge page, is dropped there for huge pages
 * at the first touch.  Every heap has a few such units, where the current
 * small pages of its size classes are not carved yet: 1-5% of the pages of
 * the SAT and SMT runs of suites/huge-units.toml, 27-32% of ABC's pdr, whose
 * blocks are written a tenth, from 20 units on.  Deciding early bounds the
 * second touch of a dense heap to 64 MiB. */
#define DENSE_DECIDE_UNITS 32
#define DENSE_SPARSE_SHARE 8

static uint64_t sparse_pages; /* unwritten pages of the units seen sparse twice */
static bool dense_decided;

static void note_sparse_locked(hh_region *r, size_t u, size_t unwritten) {
    HH_ASSERT(u < HH_REGION_UNITS && unwritten <= HH_UNIT_PAGES);
    uint32_t mask = (uint32_t)1 << u;
    if (r->sparse_units & mask) return;
    r->sparse_units |= mask;
    sparse_pages += unwritten;
}

/* Whether unit u of r is to be looked at now: it holds memory in 4 KiB
 * pages, is writable whole, has enough pages handed out, and was not looked
 * at since the heap last grew by an eighth (a unit found sparse is looked
 * at again as the heap grows, not at every new unit). */
static bool dense_candidate_locked(const hh_region *r, size_t u) {
    uint32_t mask = (uint32_t)1 << u;
    if (!(r->touched_units & mask) || ((r->huge_units | r->hugetlb_units) & mask)) return false;
    size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
    if (to > r->open_pages || to > r->mapped_pages) return false;
    uint64_t at = r->unit_checked_at[u];
    if (at != 0 && _hh_pageheap.touched_units < at + (at / 8 > 1 ? at / 8 : 1)) return false;
    return _hh_count_bits(r->used, from, to) >= HH_DENSE_PAGES;
}

/* Whether the heap has just proved dense (see DENSE_DECIDE_UNITS). */
static bool proved_dense_locked(void) {
    if (dense_decided || _hh_pageheap.touched_units < DENSE_DECIDE_UNITS) return false;
    dense_decided = true;
    uint64_t pages = _hh_pageheap.touched_units * HH_UNIT_PAGES;
    if (sparse_pages * DENSE_SPARSE_SHARE > pages) return false;
    if (_hh_cfg.huge_budget != HH_BUDGET_OFF) {
        /* The library makes new units huge itself, timed and on the budget;
         * the units in 4 KiB pages are collapsed as they are found written. */
        populate_new_units = true;
        return false;
    }
    atomic_store_explicit(&dense_policy_dropped, true, memory_order_relaxed);
    return true;
}

static void make_every_unit_huge(void);

/* The written unit at addr moved into a pool page (os.c copies the pages
 * that hold memory: `resident`, by mincore), timed and paid as a collapse
 * is.  False where the pool had no page for it. */
static bool move_into_pool_page(void *addr, const unsigned char *resident) {
    uint64_t written[HH_UNIT_PAGES / 64] = {0};
    for (size_t i = 0; i < HH_UNIT_PAGES; i++) {
        written[i / 64] |= (uint64_t)(resident[i] & 1) << (i % 64);
    }
    uint64_t start = _hh_clock_thread_cpu_ns();
    if (!_hh_os_move_unit_into_hugetlb(addr, written)) {
        atomic_fetch_add_explicit(&_hh_gstats.hugetlb_fallbacks, 1, memory_order_relaxed);
        return false;
    }
    (void)pay_made(_hh_clock_thread_cpu_ns() - start, 1);
    atomic_fetch_add_explicit(&_hh_gstats.units_into_pool, 1, memory_order_relaxed);
    return true;
}

/* Under the dense policy: every unit of the regions that the program has
 * mostly written (pages handed out and resident, by mincore) is advised huge
 * and collapsed into a huge page now; in hugetlb mode, in a process of one
 * thread, moved into a pool page instead (a quarter of a fresh transparent
 * huge page's price where the host backs memory lazily).  The lock is let
 * go while the kernel looks and collapses; what changes meanwhile is
 * harmless (a page given back in a unit being collapsed comes back as
 * zeros, and one given back after it splits the huge page; no other thread
 * runs beside a move). */
static void collapse_dense_units(void) {
    hh_dense_look looks[DENSE_BATCH];
    unsigned char resident[HH_UNIT_PAGES];
    bool short_of_budget = false;
    int into_pool = -1; /* read once a unit is written enough */
    _hh_lock();
    hh_region *r = _hh_pageheap.regions;
    size_t u = 0;
    while (r != NULL) {
        size_t n = 0;
        uint32_t now = (uint32_t)_hh_pageheap.touched_units;
        bool affordable = budget_affords(1);
        while (r != NULL && n < DENSE_BATCH) {
            if (u == HH_REGION_UNITS) {
                r = r->next;
                u = 0;
                continue;
            }
            if (dense_candidate_locked(r, u)) {
                if (!affordable) { /* this unit and the rest wait for the budget */
                    short_of_budget = true;
                    r = NULL;
                    break;
                }
                looks[n] = (hh_dense_look){.region = r, .unit = u, .again = r->unit_checked_at[u] != 0,
                                           .checked_at = r->unit_checked_at[u]};
                r->unit_checked_at[u] = now;
                memcpy(looks[n].used, &r->used[u * HH_UNIT_PAGES / 64], sizeof looks[n].used);
                n++;
            }
            u++;
        }
        _hh_unlock();
        for (size_t k = 0; k < n; k++) {
            /* Each collapse is paid before the next is afforded: what they
             * take varies tenfold here (a fresh huge page or a recycled one). */
            if (k > 0 && !budget_affords(1)) {
                for (size_t rest = k; rest < n; rest++) looks[rest].waits = true;
                short_of_budget = true;
                break;
            }
            char *addr = (char *)looks[k].region + (looks[k].unit << HH_UNIT_SHIFT);
            if (!_hh_os_resident(addr, HH_UNIT, resident)) continue;
            /* The region's header counts as written: it is the allocator's. */
            size_t header = looks[k].unit == 0 ? looks[k].region->header_pages : 0;
            size_t used = header, written = header;
            for (size_t i = header; i < HH_UNIT_PAGES; i++) {
                size_t handed_out = looks[k].used[i / 64] >> (i % 64) & 1;
                used += handed_out;
                written += (resident[i] & 1) & handed_out;
            }
            HH_ASSERT(written <= used && used <= HH_UNIT_PAGES);
            looks[k].unwritten = used - written;
            if (written < HH_DENSE_PAGES) continue;
            if (into_pool < 0) into_pool = _hh_policy_pool_units_movable();
            if (into_pool && move_into_pool_page(addr, resident)) {
                looks[k].in_pool_page = true;
            } else {
                _hh_os_advise(addr, HH_UNIT, true);
                _hh_policy_collapse(addr, HH_UNIT);
            }
            looks[k].made_huge = true;
            atomic_fetch_add_explicit(&_hh_gstats.units_promoted, 1, memory_order_relaxed);
        }
        _hh_lock();
        for (size_t k = 0; k < n; k++) {
            if (looks[k].waits) { /* to be looked at as soon as the budget allows */
                looks[k].region->unit_checked_at[looks[k].unit] = looks[k].checked_at;
                continue;
            }
            uint32_t mask = (uint32_t)1 << looks[k].unit;
            if (looks[k].in_pool_page) {
                looks[k].region->hugetlb_units |= mask;
            } else if (looks[k].made_huge) {
                looks[k].region->huge_units |= mask;
            }
            if (looks[k].again && !looks[k].made_huge) {
                note_sparse_locked(looks[k].region, looks[k].unit, looks[k].unwritten);
            }
        }
    }
    bool dense = proved_dense_locked();
    _hh_usage_changed_locked();
    _hh_unlock();
    if (short_of_budget) defer_for_budget();
    if (dense) make_every_unit_huge();
}

/* Every region is advised huge and every unit holding memory is collapsed
 * into a huge page now (MADV_COLLAPSE, Linux 6.1+; older kernels leave them
 * to khugepaged, which follows the advice). */
static void make_every_unit_huge(void) {
    enum { MAX_UNITS = 512 };
    char *units[MAX_UNITS];
    size_t n_units = 0;
    hh_region *list[256];
    size_t n_regions = 0;
    _hh_lock();
    for (hh_region *r = _hh_pageheap.regions; r != NULL && n_regions < 256; r = r->next) {
        list[n_regions++] = r;
        for (size_t u = 0; u < HH_REGION_UNITS && n_units < MAX_UNITS; u++) {
            uint32_t mask = (uint32_t)1 << u;
            if ((r->touched_units & mask) && !((r->hugetlb_units | r->huge_units) & mask)) {
                units[n_units++] = (char *)r + (u << HH_UNIT_SHIFT);
            }
        }
    }
    _hh_usage_changed_locked();
    _hh_unlock();
    for (size_t i = 0; i < n_regions; i++) _hh_os_advise(list[i], HH_REGION, true);
    for (size_t i = 0; i < n_units; i++) {
        _hh_policy_collapse(units[i], HH_UNIT);
        atomic_fetch_add_explicit(&_hh_gstats.units_promoted, 1, memory_order_relaxed);
    }
}

/* -------------------------------------------------------- promotion */

/* The heap passed the threshold: its pages become huge, at once (all
 * units) or as they fill (the dense policy), and so do the large blocks
 * mapped while it was small. */
static void promote_heap(void) {
    _hh_lock();
    _hh_release_unshut_all_locked(); /* a huge heap packs its pages */
    /* The top unit in use of each region becomes writable whole (a huge page
     * needs it); where the kernel refuses, it stays in 4 KiB pages. */
    for (hh_region *r = _hh_pageheap.regions; r != NULL; r = r->next) {
        _hh_region_open_to_locked(r, _hh_align_up(r->open_pages, HH_UNIT_PAGES));
    }
    bool by_density = units_by_density();
    _hh_usage_changed_locked();
    _hh_unlock();
    _hh_range_advise_descriptors(true);
    if (by_density) {
        atomic_store_explicit(&dense_check_due, true, memory_order_relaxed);
    } else {
        make_every_unit_huge();
    }
    collapse_listed_blocks(false);
}

void _hh_policy_promote(void) {
    if (HH_UNLIKELY(take_promotion())) promote_heap();
    if (HH_UNLIKELY(atomic_load_explicit(&dense_check_due, memory_order_relaxed)) &&
        atomic_exchange_explicit(&dense_check_due, false, memory_order_relaxed)) {
        collapse_dense_units();
    }
    if (HH_UNLIKELY(atomic_load_explicit(&populate_due, memory_order_relaxed))) {
        populate_queued_units();
    }
    if (HH_UNLIKELY(deferred_work_due())) {
        if (dense_policy_in_force()) collapse_dense_units();
        collapse_listed_blocks(true);
    }
}

/* ------------------------------------------------------- giving back */

/* Whether unit u of r has been quiet (nothing handed out from it) for the
 * release delay, or everything is to go. */
bool _hh_policy_unit_quiet(const hh_region *r, size_t u, uint64_t now, bool everything) {
    return everything || now - r->unit_used_ms[u] >= _hh_cfg.release_delay_ms;
}

/* The slack: the release delay keeps what a program frees for 10 s, so that
 * nothing it frees and allocates again is faulted in twice; but a run of a
 * few seconds whose freed memory is not taken again (a growing array's old
 * copies, medium blocks freed among others in use) then peaks at all it ever
 * held, where glibc's heap and mimalloc's give such memory back within
 * milliseconds.  So the free memory a heap holds beyond a sixteenth of its
 * demand (and beyond one unit) goes back as soon as its unit has been quiet
 * for SLACK_QUIET_MS (nothing handed out from it), from the top down: units
 * free as a whole, runs of written free pages in units of 4 KiB pages, and
 * the free pages of a huge page at most half in use whose program freed a
 * quarter of it or more: the huge page is split for it (the kernel frees no
 * part of a huge page until it is split), and the dense policy makes it a
 * huge page again once it is dense, as the budget allows.  A huge page more
 * than half in use keeps its free pages, and the units the library has just
 * made huge and the program has not reached yet (their free pages unwritten)
 * are left alone.  Not while the heap is seen to fault in again what it
 * gives back.
 *
 * A heap still in 4 KiB pages (not promoted) keeps less: a page it gives
 * back and takes again costs one 4 KiB fault, as glibc pays when it trims
 * its heap, not the milliseconds of a huge page; so beyond 256 KiB (not one
 * unit) and from units quiet for 50 ms.  A process of a few MiB otherwise
 * holds a whole unit of free memory, a third of its heap. */
#define SLACK_SHARE 16
#define SLACK_MIN_PAGES HH_UNIT_PAGES
#define SLACK_QUIET_MS 250
#define SMALL_HEAP_SLACK_MIN_PAGES 64 /* 256 KiB */
#define SMALL_HEAP_SLACK_QUIET_MS 50

bool _hh_policy_slack_goes_back_locked(uint64_t *bound_pages, uint64_t *quiet_ms) {
    if (_hh_policy_giving_back_churns()) return false;
    bool huge = _hh_policy_heap_is_huge();
    uint64_t bound = _hh_pageheap.demand_pages / SLACK_SHARE;
    uint64_t least = huge ? SLACK_MIN_PAGES : SMALL_HEAP_SLACK_MIN_PAGES;
    *bound_pages = bound < least ? least : bound;
    *quiet_ms = huge ? SLACK_QUIET_MS : SMALL_HEAP_SLACK_QUIET_MS;
    return true;
}

/* Whether unit u of r, a huge page, is to be split to give back its free
 * pages: at most half of it in use, and a quarter of it or more freed by the
 * program (written and free). */
bool _hh_policy_unit_worth_splitting(const hh_region *r, size_t u) {
    size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
    return unit_splittable(r, u) && _hh_count_bits(r->used, from, to) <= HH_UNIT_PAGES / 2 &&
           _hh_count_dirty_free(r, from, to) >= HH_UNIT_PAGES / 4;
}

/* Whether the pool pages of units at most half in use may become 4 KiB
 * pages now, to give back their free pages beyond the slack bound as THP
 * mode's split huge pages do: in hugetlb mode under the dense policy, unless
 * HUGEHEAP_POOL_MOVE=off, in a process of one thread (the kernel's count,
 * read from /proc/self/status: a thread that never called malloc counts
 * too).  A pool page is moved by copying its pages in use (os.c), which no
 * other thread may write meanwhile.  CaDiCaL on a pebbling formula left
 * 3-20 live small pages in each of 40 units after it freed its parse-time
 * blocks: from the pool it peaked at 118 MiB against THP mode's 88. */
bool _hh_policy_pool_units_movable(void) {
    if (_hh_cfg.thp != HH_THP_HUGETLB || !_hh_cfg.pool_move || !dense_policy_in_force()) {
        return false;
    }
    char status[4096];
    size_t n = _hh_os_read_small_file("/proc/self/status", status, sizeof status - 1);
    status[n] = '\0';
    const char *threads = strstr(status, "\nThreads:");
    if (threads == NULL) return false;
    threads += strlen("\nThreads:");
    while (*threads == ' ' || *threads == '\t') threads++;
    return threads[0] == '1' && (threads[1] == '\n' || threads[1] == '\0');
}

bool _hh_policy_pool_unit_worth_moving(const hh_region *r, size_t u) {
    size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
    return (r->hugetlb_units >> u & 1) && _hh_count_bits(r->used, from, to) <= HH_UNIT_PAGES / 2;
}

void _hh_policy_pool_unit_moved_locked(hh_region *r, size_t u) {
    uint32_t mask = (uint32_t)1 << u;
    HH_ASSERT(r->hugetlb_units & mask);
    r->hugetlb_units &= ~mask;
    r->huge_units &= ~mask;
    r->unit_checked_at[u] = 0; /* a transparent huge page once dense, as the budget allows */
    atomic_fetch_add_explicit(&_hh_gstats.pool_units_moved, 1, memory_order_relaxed);
}

/* The churn detector: memory given back that the program wants again soon
 * after, so that giving it back lowered no peak and costs a fault or a
 * mapping again.  One detector with two inputs, kept apart because they
 * measure different things:
 *
 * - units refaulted: of the 2 MiB units the page heap gave back, how many it
 *   faulted in again (pages.c counts them).  A unit has no size: what comes
 *   back is any memory at its address, so only the share of units faulted
 *   in again says whether giving them back pays.  It stops the page heap's
 *   giving back of units (a big free's, the slack's).
 * - sizes allocated again: a large block is a mapping of its own, unmapped
 *   when freed; nothing of it is faulted in again, a new mapping is made.
 *   What repeats is a size: a program that maps a block of about the size of
 *   one it freed within the release delay churns that size, and freed blocks
 *   of it then wait in large.c's cache.
 *
 * One signal for both would change what each decides: a large block mapped
 * again, counted as a unit faulted in again, would stop the page heap's
 * giving back for a churn of large blocks, and a share of units has no size
 * to keep blocks of. */
#define CHURN_MIN_UNITS 16 /* given back before the refaults are judged */
#define RECENT_FREES 8     /* large frees remembered, to be matched by allocations */
#define CHURN_SIZES 4      /* sizes of large blocks seen to churn, the last ones */

/* Units: whether the heap has faulted in again three in four of the 2 MiB
 * units it gave back (once it has given back CHURN_MIN_UNITS): giving back
 * more would be churn. */
bool _hh_policy_giving_back_churns(void) {
    uint64_t released = atomic_load_explicit(&_hh_gstats.units_released, memory_order_relaxed);
    uint64_t again = atomic_load_explicit(&_hh_gstats.units_refaulted, memory_order_relaxed);
    return released >= CHURN_MIN_UNITS && again * 4 >= released * 3;
}

/* Sizes: the last large frees the cache could have kept and did not (sizes
 * and times), and the sizes seen to churn.  Guarded by the global lock. */
typedef struct {
    size_t size;
    uint64_t freed_at_ms;
} large_free;
static large_free recent_frees[RECENT_FREES];
static unsigned recent_next;
static size_t churn_sizes[CHURN_SIZES];
static unsigned churn_next;

/* Within a quarter of each other. */
static bool about_the_same(size_t a, size_t b) {
    return a >= b ? a - b <= b / 4 : b - a <= a / 4;
}

static bool size_churns(size_t size) {
    for (unsigned i = 0; i < CHURN_SIZES; i++) {
        if (churn_sizes[i] && about_the_same(churn_sizes[i], size)) return true;
    }
    return false;
}

bool _hh_policy_large_free_cached_locked(size_t size) {
    if (size_churns(size)) return true;
    recent_frees[recent_next++ % RECENT_FREES] = (large_free){size, _hh_clock_ms()};
    return false;
}

void _hh_policy_large_mapped_locked(size_t size) {
    uint64_t now = _hh_clock_ms();
    for (unsigned i = 0; i < RECENT_FREES; i++) {
        if (recent_frees[i].size && about_the_same(recent_frees[i].size, size) &&
            now - recent_frees[i].freed_at_ms < _hh_cfg.release_delay_ms && !size_churns(size)) {
            churn_sizes[churn_next++ % CHURN_SIZES] = size;
            return;
        }
    }
}

/* Freed big blocks: glibc's threshold.  While the heap is small, a medium
 * block allocated at glibc's mmap threshold (128 KiB) or above gives its
 * memory back at once when it is freed, as glibc unmaps a block it mapped on
 * its own; as glibc's, the choice is made when the block is allocated, and a
 * realloc that moves such a block keeps it (glibc remaps it).  The bar rises
 * as glibc's mmap threshold does, to the size of such a block the program
 * frees (not a realloc's old copy), so a program that frees and allocates
 * big blocks again gives memory back once per size at most, not at every
 * free: the system calls are rare enough to make under the lock.  What the
 * program then no longer holds is a growing vector's old copies (a new one
 * twice as large, the old one freed): they never fit the next copy, and kept
 * for the release delay they would add up to the vector's size again; and
 * the big blocks made early and freed together later (the arrays of
 * minisat's simplifier, when its preprocessing ends).  Judged at the free
 * instead, where a vector's move to a large block had raised the bar to
 * 2 MiB, those stayed: holes too small for the next big block, and a minisat
 * process of 12 MiB peaked 1.6 MiB higher.  Such a block is shut (release.c)
 * unless its pages are explicit huge pages.
 *
 * Once the heap is huge, only a freed block bigger than every one given
 * back before (the bar at the free, which every such block raises) goes
 * back into the page heap with the 2 MiB units it leaves free as a whole
 * given back to the kernel (never part of a huge page: that would split
 * it), until the heap is seen to fault in again what it gives back.  There
 * a unit given back costs a fresh huge page when the program takes the room
 * again (milliseconds on a host that backs memory lazily), where memory a
 * small heap gives back costs 4 KiB faults, as glibc's unmapped blocks do.
 * A program that replaces big blocks by others of about their size (not a
 * vector's doubling copies) reuses the room at once, and giving it back
 * lowers no peak. */
#define BIG_FREE_MIN_PAGES 32 /* 128 KiB */

static _Atomic(int64_t) big_free_min_pages = BIG_FREE_MIN_PAGES;

bool _hh_policy_block_gives_back(size_t pages) {
    return (int64_t)pages >= atomic_load_explicit(&big_free_min_pages, memory_order_relaxed);
}

bool _hh_policy_freed_block_goes_back(size_t pages, bool gives_back, bool moved) {
    int64_t bar = atomic_load_explicit(&big_free_min_pages, memory_order_relaxed);
    bool huge = _hh_policy_heap_is_huge();
    if (huge ? (int64_t)pages < bar : !gives_back) return false;
    if (huge || !moved) _hh_raise_to(&big_free_min_pages, (int64_t)pages + 1);
    return true;
}

bool _hh_policy_freed_block_shut(bool in_pool_pages) {
    /* Pool pages cannot be shut in part (mprotect and MADV_DONTNEED take a
     * hugetlb mapping in whole 2 MiB pages); a small heap's units are 4 KiB
     * pages in hugetlb mode too, so only the units decide. */
    return !_hh_policy_heap_is_huge() && !in_pool_pages;
}

/* The cache of freed large blocks: a block waits there (sizes that churn,
 * above) for the release delay, then is unmapped.  When the oldest cached
 * block is due; UINT64_MAX: the cache is empty. */
static _Atomic(uint64_t) cache_due_ms = UINT64_MAX;

bool _hh_policy_cached_block_due(uint64_t freed_at_ms, uint64_t now, bool everything) {
    return everything || now - freed_at_ms >= _hh_cfg.release_delay_ms;
}

void _hh_policy_cache_changed_locked(const hh_cached_mapping *cache, size_t count) {
    uint64_t due = UINT64_MAX;
    for (size_t i = 0; i < count; i++) {
        uint64_t at = cache[i].freed_at_ms + _hh_cfg.release_delay_ms;
        if (at < due) due = at;
    }
    atomic_store_explicit(&cache_due_ms, due, memory_order_relaxed);
}

bool _hh_policy_cache_due(void) {
    uint64_t due = atomic_load_explicit(&cache_due_ms, memory_order_relaxed);
    if (HH_LIKELY(due == UINT64_MAX)) return false;
    return _hh_clock_ms() >= due;
}

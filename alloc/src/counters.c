/* The counters of what the heap did, which every layer writes: memory held
 * and its peak, blocks made and freed, memory given back.  Reading them into
 * a report is stats_report.c's, at the top. */
#include "internal.h"

hh_global_stats _hh_gstats;

static _Atomic(uint64_t) medium_bytes, api_bytes;

/* Adds to a counter and raises its high-water mark. */
static void counter_add(_Atomic(int64_t) *now, _Atomic(int64_t) *peak, int64_t delta) {
    _hh_raise_to(peak, atomic_fetch_add_explicit(now, delta, memory_order_relaxed) + delta);
}

void _hh_stats_count_medium(intptr_t delta) {
    atomic_fetch_add_explicit(&medium_bytes, (uint64_t)delta, memory_order_relaxed);
}

void _hh_stats_count_api(intptr_t delta) {
    atomic_fetch_add_explicit(&api_bytes, (uint64_t)delta, memory_order_relaxed);
    _hh_stats_count_mapped(delta, false);
}

uint64_t _hh_stats_medium_bytes(void) {
    return atomic_load_explicit(&medium_bytes, memory_order_relaxed);
}

uint64_t _hh_stats_api_bytes(void) {
    return atomic_load_explicit(&api_bytes, memory_order_relaxed);
}

void _hh_stats_count_mapped(intptr_t delta, bool locked) {
    counter_add(&_hh_gstats.mapped, &_hh_gstats.mapped_peak, delta);
    if (!_hh_stats_on || delta <= 0) return;
    int64_t now = atomic_load_explicit(&_hh_gstats.mapped, memory_order_relaxed);
    if (now < atomic_load_explicit(&_hh_gstats.mapped_peak, memory_order_relaxed)) return;
    if (!locked) _hh_lock();
    _hh_stats_peak_reached_locked(now);
    if (!locked) _hh_unlock();
}

/* The process's start-up and fork: the configuration read and the secret
 * keys drawn (the state they fill is state.c's), the fork handlers.  (The
 * size classes are kind.c's, the life of thread heaps heap_life.c's.)
 *
 * Start-up is in two steps.  _hh_init reads the environment and draws the
 * keys: it may run inside the first malloc, before libc is ready, so it
 * allocates nothing.  _hh_late_init registers the fork handlers and the
 * thread key, which may allocate: it runs once, outside the global lock. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/auxv.h>

#include "internal.h"
#include "kind.h"

static atomic_int init_state; /* 0: not yet, 2: done */
/* late_init: 0 not started, 1 running (in the thread whose in_late_init is
 * set), 2 done. */
static atomic_int late_init_state;
static __thread bool in_late_init __attribute__((tls_model("initial-exec")));

/* ------------------------------------------------------------------- init */

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

/* Things that may call back into malloc: done once, outside the lock.  A
 * thread that made its heap while another thread runs this waits for the
 * thread key, so that its heap, too, is abandoned when it exits (a thread that
 * returned at once would never be).  The thread running it may allocate from
 * inside (pthread_atfork and pthread_key_create may): it does not wait on
 * itself. */
void _hh_late_init(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&late_init_state, &expected, 1)) {
        if (in_late_init) return;
        HH_TEST_POINT("late_init_wait", NULL);
        while (atomic_load_explicit(&late_init_state, memory_order_acquire) != 2) sched_yield();
        _hh_heap_watch_exit();
        return;
    }
    in_late_init = true;
    HH_TEST_POINT("late_init_running", NULL);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    _hh_heap_watch_exits_start();
    in_late_init = false;
    atomic_store_explicit(&late_init_state, 2, memory_order_release);
}

void _hh_init(void) {
    if (HH_LIKELY(atomic_load_explicit(&init_state, memory_order_acquire) == 2)) return;
    _hh_lock();
    if (atomic_load_explicit(&init_state, memory_order_relaxed) == 0) {
        _hh_config_read(&_hh_cfg);
        atomic_store_explicit(&_hh_growth_taking, _hh_cfg.growth_heap != HH_GROWTH_OFF,
                              memory_order_relaxed);
        _hh_stats_on = _hh_cfg.stats_print || _hh_cfg.stats_json_path[0] != '\0';
        _hh_stats_keep_stderr();
        _hh_classes_init();
        _hh_region_reserve_range();
        const void *random = (const void *)getauxval(AT_RANDOM); /* 16 bytes, unaligned */
        uint64_t key[2] = {(uintptr_t)&_hh_cfg, _hh_clock_ms()};
        if (random != NULL) memcpy(key, random, sizeof key);
        _hh_cookie_key = key[0] ^ key[1];
        _hh_cookie_key |= 1;
        /* Two more keys from the first: links and marks must differ from it. */
        _hh_free_mark = (uintptr_t)((_hh_cookie_key * 0x9E3779B97F4A7C15ull) | 1);
        /* The low four bits set: a link overwritten by a plain pointer, zeros
         * or text decodes to a misaligned address (see _hh_page_pop). */
        _hh_list_key = (uintptr_t)(_hh_free_mark * 0xBF58476D1CE4E5B9ull) | 15;
        atomic_store_explicit(&init_state, 2, memory_order_release);
    }
    _hh_unlock();
}

__attribute__((constructor)) static void init_at_load(void) {
    _hh_init();
    _hh_late_init();
    /* Where glibc is to serve the small heap, a heap this thread made before
     * (libraries' constructors allocate) is left as at a thread's exit, so
     * that its next malloc finds the empty heap and goes to glibc; its blocks
     * stay ours until freed. */
    if (_hh_glibc_heap_start() && _hh_heap->alive) _hh_heap_leave();
}

/* ------------------------------------------------------------------- fork */

/* The global lock first, then the pools' locks and the growth heap's: the
 * order every path takes. */
static void fork_prepare(void) {
    _hh_lock_before_fork();
    _hh_pools_before_fork();
    _hh_growth_before_fork();
}

static void fork_parent(void) {
    _hh_growth_after_fork(false);
    _hh_pools_after_fork(false);
    _hh_lock_after_fork_parent();
}

/* The child has one thread.  Heaps of the parent's other threads stay as
 * they were (they may have been mid-update when fork() happened, so they are
 * not touched): their blocks can still be freed, by the remote path. */
static void fork_child(void) {
    _hh_growth_after_fork(true);
    _hh_pools_after_fork(true);
    _hh_lock_after_fork_child();
    _hh_heap_fork_child();
}

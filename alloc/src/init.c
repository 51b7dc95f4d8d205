/* The process: its configuration and secret keys, the size classes, start-up,
 * the heap of each thread (made on its first allocation, handed on at its
 * exit), and fork.
 *
 * Start-up is in two steps.  _hh_init reads the environment and draws the
 * keys: it may run inside the first malloc, before libc is ready, so it
 * allocates nothing.  late_init registers the fork handlers and the thread
 * key, which may allocate: it runs once, outside the global lock. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/auxv.h>

#include "internal.h"
#include "kind.h"
#include "pthread_compat.h"

hh_config _hh_cfg;
bool _hh_stats_on;
uint64_t _hh_cookie_key;
uintptr_t _hh_list_key;
uintptr_t _hh_free_mark;
#if defined(HH_TESTING)
_Atomic(_hh_test_hook_fn) _hh_test_hook;
#endif

/* Its free list is always empty, it has no owner and no blocks: every queue
 * of a new heap points here, and so does every slot of the empty heap. */
hh_page _hh_empty_page;
#define EMPTY_PAGES(n) {[0 ...(n)-1] = &_hh_empty_page}
hh_heap _hh_empty_heap = {.direct = EMPTY_PAGES(HH_DIRECT_SLOTS), .queue = EMPTY_PAGES(HH_CLASSES)};
__thread hh_heap *_hh_heap __attribute__((tls_model("initial-exec"))) = &_hh_empty_heap;

static atomic_int init_state; /* 0: not yet, 2: done */
/* late_init: 0 not started, 1 running (in the thread whose in_late_init is
 * set), 2 done. */
static atomic_int late_init_state;
static __thread bool in_late_init __attribute__((tls_model("initial-exec")));
static atomic_bool thread_key_ready;
static pthread_key_t thread_key;
static atomic_uint_fast64_t threads_seen;

/* Guarded by the global lock. */
static hh_heap *all_heaps, *free_heaps;
static char *meta_next, *meta_end;

/* ------------------------------------------------------------------- init */

void *_hh_meta_alloc_locked(size_t size) {
    size = _hh_align_up(size, 64);
    if ((size_t)(meta_end - meta_next) < size) {
        size_t chunk = size > 65536 ? _hh_align_up(size, 65536) : 65536;
        char *m = _hh_os_map_metadata(chunk);
        if (m == NULL) return NULL;
        meta_next = m;
        meta_end = m + chunk;
    }
    void *p = meta_next;
    meta_next += size;
    return p;
}

static void thread_exit(void *heap);
static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

/* Things that may call back into malloc: done once, outside the lock.  A
 * thread that made its heap while another thread runs this waits for the
 * thread key, so that its heap, too, is abandoned when it exits (a thread that
 * returned at once would never be).  The thread running it may allocate from
 * inside (pthread_atfork and pthread_key_create may): it does not wait on
 * itself. */
static void late_init(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&late_init_state, &expected, 1)) {
        if (in_late_init) return;
        HH_TEST_POINT("late_init_wait", NULL);
        while (atomic_load_explicit(&late_init_state, memory_order_acquire) != 2) sched_yield();
        hh_heap *heap = _hh_heap;
        if (heap->alive && atomic_load_explicit(&thread_key_ready, memory_order_acquire)) {
            pthread_setspecific(thread_key, heap);
        }
        return;
    }
    in_late_init = true;
    HH_TEST_POINT("late_init_running", NULL);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    bool have_keys = true;
#if defined(HH_SHARED_LIBRARY)
    have_keys = pthread_key_create != NULL; /* no libpthread: no other threads either */
#endif
    if (have_keys && pthread_key_create(&thread_key, thread_exit) == 0) {
        atomic_store_explicit(&thread_key_ready, true, memory_order_release);
        hh_heap *heap = _hh_heap;
        if (heap->alive) pthread_setspecific(thread_key, heap);
    }
    in_late_init = false;
    atomic_store_explicit(&late_init_state, 2, memory_order_release);
}

void _hh_init(void) {
    if (HH_LIKELY(atomic_load_explicit(&init_state, memory_order_acquire) == 2)) return;
    _hh_lock();
    if (atomic_load_explicit(&init_state, memory_order_relaxed) == 0) {
        _hh_config_read(&_hh_cfg);
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
    late_init();
}

/* ------------------------------------------------------------ thread heaps */

hh_heap *_hh_heap_for_thread(void) {
    hh_heap *heap = _hh_heap;
    if (heap->alive) return heap;
    _hh_init();
    uintptr_t id = _hh_thread_id();
    _hh_lock();
    /* A live heap with this thread's identity belongs to a thread that is
     * gone (identities are unique among live threads) and never abandoned
     * it: its pages must not look like this thread's. */
    hh_heap *orphan = NULL;
    for (hh_heap *h = all_heaps; h != NULL && orphan == NULL; h = h->next_all) {
        if (h->alive && h->thread_id == id) orphan = h;
    }
    _hh_unlock();
    if (orphan != NULL) {
        _hh_heap_abandon_orphan(orphan);
        _hh_lock();
        orphan->next_free = free_heaps;
        free_heaps = orphan;
        _hh_unlock();
    }
    _hh_lock();
    heap = free_heaps;
    if (heap != NULL) {
        free_heaps = heap->next_free;
    } else {
        heap = _hh_meta_alloc_locked(sizeof *heap);
        if (heap != NULL) {
            memset(heap, 0, sizeof *heap);
            heap->next_all = all_heaps;
            all_heaps = heap;
        }
    }
    if (heap != NULL) {
        /* A recycled heap keeps its counts (and its place in the list of all). */
        memset(heap, 0, offsetof(hh_heap, thread_id));
        for (unsigned i = 0; i < HH_DIRECT_SLOTS; i++) heap->direct[i] = &_hh_empty_page;
        for (unsigned c = 0; c < HH_CLASSES; c++) heap->queue[c] = &_hh_empty_page;
        heap->thread_id = id;
        atomic_store_explicit(&heap->alive, true, memory_order_relaxed);
    }
    _hh_unlock();
    if (heap == NULL) return NULL;
    atomic_fetch_add_explicit(&threads_seen, 1, memory_order_relaxed);
    _hh_heap = heap;
    /* May allocate (keys past the first 32): the heap is in place already. */
    if (atomic_load_explicit(&thread_key_ready, memory_order_acquire)) {
        pthread_setspecific(thread_key, heap);
    } else {
        late_init();
    }
    return heap;
}

static void thread_exit(void *arg) {
    hh_heap *heap = arg;
    if (!_hh_heap_abandon(heap)) return;
    _hh_heap = &_hh_empty_heap;
    _hh_lock();
    heap->next_free = free_heaps;
    free_heaps = heap;
    _hh_unlock();
}

void _hh_heap_stats_sum(hh_heap_stats *sum, uint64_t *threads) {
    memset(sum, 0, sizeof *sum);
    _hh_lock();
    for (hh_heap *h = all_heaps; h != NULL; h = h->next_all) {
        _hh_count(&sum->allocs, atomic_load_explicit(&h->stats.allocs, memory_order_relaxed));
        _hh_count(&sum->remote_frees,
                  atomic_load_explicit(&h->stats.remote_frees, memory_order_relaxed));
        _hh_count(&sum->reallocs, atomic_load_explicit(&h->stats.reallocs, memory_order_relaxed));
        _hh_count(&sum->mremap_moves,
                  atomic_load_explicit(&h->stats.mremap_moves, memory_order_relaxed));
        _hh_count(&sum->mremap_in_place,
                  atomic_load_explicit(&h->stats.mremap_in_place, memory_order_relaxed));
    }
    _hh_unlock();
    *threads = atomic_load_explicit(&threads_seen, memory_order_relaxed);
}

/* ------------------------------------------------------------------- fork */

/* The global lock first, then the pools' locks: the order every path takes. */
static void fork_prepare(void) {
    _hh_lock_before_fork();
    _hh_pools_before_fork();
}

static void fork_parent(void) {
    _hh_pools_after_fork(false);
    _hh_lock_after_fork_parent();
}

/* The child has one thread.  Heaps of the parent's other threads stay as
 * they were (they may have been mid-update when fork() happened, so they are
 * not touched): their blocks can still be freed, by the remote path. */
static void fork_child(void) {
    _hh_pools_after_fork(true);
    _hh_lock_after_fork_child();
    _hh_heap_fork_child();
}

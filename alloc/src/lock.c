/* The one global lock: it guards what threads share on slow paths (the
 * regions and their page heap, abandoned pages, the large-block cache, the
 * heap list).
 * Fast paths never take it.
 *
 * It remembers its owner so that fork() called from a signal handler that
 * interrupted this very thread inside a slow path does not deadlock in the
 * prepare handler: the child starts with the lock reset either way.
 *
 * Between our fork prepare handler and fork() itself the lock is held by the
 * forking thread with nothing half-done under it, and pthread_atfork prepare
 * handlers registered before ours run in that interval.  If one of them
 * allocates on a slow path, that thread takes the lock again: it may (a
 * depth count), and only then.  Anywhere else taking it twice would mean
 * entering a structure in the middle of an update, and spins as before. */
#include <sched.h>

#include "internal.h"

static atomic_int lock_word;
static _Atomic(const void *) lock_owner;
static __thread char thread_token __attribute__((tls_model("initial-exec")));
static bool taken_for_fork;
static _Atomic(const void *) fork_holder; /* the thread holding it across fork */
static unsigned fork_depth;               /* its extra holds (that thread only) */

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spins a little, then yields: the holder may be descheduled. */
static void acquire_word(atomic_int *word) {
    unsigned spins = 0;
    while (atomic_exchange_explicit(word, 1, memory_order_acquire) != 0) {
        while (atomic_load_explicit(word, memory_order_relaxed) != 0) {
            if (++spins < 64) {
                cpu_relax();
            } else {
                sched_yield();
            }
        }
    }
}

void _hh_lock(void) {
    if (HH_UNLIKELY(atomic_load_explicit(&fork_holder, memory_order_relaxed) == &thread_token)) {
        fork_depth++;
        return;
    }
    acquire_word(&lock_word);
    atomic_store_explicit(&lock_owner, &thread_token, memory_order_relaxed);
}

void _hh_unlock(void) {
    if (HH_UNLIKELY(fork_depth > 0) &&
        atomic_load_explicit(&fork_holder, memory_order_relaxed) == &thread_token) {
        fork_depth--;
        return;
    }
    atomic_store_explicit(&lock_owner, NULL, memory_order_relaxed);
    atomic_store_explicit(&lock_word, 0, memory_order_release);
}

void _hh_lock_before_fork(void) {
    if (atomic_load_explicit(&lock_owner, memory_order_relaxed) == &thread_token) {
        taken_for_fork = false; /* we interrupted ourselves: do not wait on us */
        return;
    }
    _hh_lock();
    taken_for_fork = true;
    atomic_store_explicit(&fork_holder, &thread_token, memory_order_relaxed);
}

void _hh_lock_after_fork_parent(void) {
    atomic_store_explicit(&fork_holder, NULL, memory_order_relaxed);
    fork_depth = 0;
    if (taken_for_fork) _hh_unlock();
}

void _hh_lock_after_fork_child(void) {
    atomic_store_explicit(&fork_holder, NULL, memory_order_relaxed);
    fork_depth = 0;
    atomic_store_explicit(&lock_owner, NULL, memory_order_relaxed);
    atomic_store_explicit(&lock_word, 0, memory_order_release);
}

/* Sublocks (one per pool) follow the same rules: the thread that holds every
 * lock across fork may take one again from a prepare handler (a depth
 * count), and a fork from a signal handler that interrupted this thread while
 * it held one does not wait on itself. */
static bool holds_for_fork(void) {
    return atomic_load_explicit(&fork_holder, memory_order_relaxed) == &thread_token;
}

void _hh_sublock_take(hh_sublock *lock) {
    if (HH_UNLIKELY(holds_for_fork()) &&
        atomic_load_explicit(&lock->owner, memory_order_relaxed) == &thread_token) {
        lock->depth++;
        return;
    }
    acquire_word(&lock->word);
    atomic_store_explicit(&lock->owner, &thread_token, memory_order_relaxed);
}

void _hh_sublock_give(hh_sublock *lock) {
    if (HH_UNLIKELY(lock->depth > 0) && holds_for_fork()) {
        lock->depth--;
        return;
    }
    atomic_store_explicit(&lock->owner, NULL, memory_order_relaxed);
    atomic_store_explicit(&lock->word, 0, memory_order_release);
}

/* Called after _hh_lock_before_fork, by the thread that holds the global lock
 * for the fork. */
void _hh_sublock_take_for_fork(hh_sublock *lock) {
    if (atomic_load_explicit(&lock->owner, memory_order_relaxed) == &thread_token) {
        lock->depth++; /* interrupted ourselves: already ours */
        return;
    }
    acquire_word(&lock->word);
    atomic_store_explicit(&lock->owner, &thread_token, memory_order_relaxed);
}

void _hh_sublock_after_fork(hh_sublock *lock, bool child) {
    if (child) {
        lock->depth = 0;
        atomic_store_explicit(&lock->owner, NULL, memory_order_relaxed);
        atomic_store_explicit(&lock->word, 0, memory_order_release);
        return;
    }
    if (lock->depth > 0) {
        lock->depth--; /* the hold taken for the fork on top of the thread's own */
        return;
    }
    atomic_store_explicit(&lock->owner, NULL, memory_order_relaxed);
    atomic_store_explicit(&lock->word, 0, memory_order_release);
}

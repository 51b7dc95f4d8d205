/* Defects a code read found in libhugeheap, each as a test that failed before
 * its fix.  Races are made deterministic with the library's test points
 * (HH_TEST_POINT, compiled into the test library only): a test stops a thread
 * exactly inside the window, does what another thread could do there, and
 * lets it go on.
 *
 *   test_defects NAME     one test (ctest runs each on its own: some need a
 *                         fresh process, and a hang must not hide the others) */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "hugeheap.h"
#include "internal.h"
#include "kind.h"

#define MiB ((size_t)1 << 20)

/* ------------------------------------------------------------- test points */

typedef void (*point_handler)(const void *arg);
static const char *wanted_point;
static _Atomic(point_handler) handler;

static void dispatch(const char *point, const void *arg) {
    point_handler h = atomic_load(&handler);
    if (h != NULL && wanted_point != NULL && strcmp(point, wanted_point) == 0) h(arg);
}

static void arm(const char *point, point_handler h) {
    wanted_point = point;
    atomic_store(&handler, h);
    atomic_store(&_hh_test_hook, dispatch);
}

static void disarm(void) { atomic_store(&handler, (point_handler)NULL); }

/* -- (a) realloc moving a large block clears its old granule before mremap */

static atomic_int moves_seen, moves_with_stale_mark;

static void on_large_moved(const void *old_user) {
    atomic_fetch_add(&moves_seen, 1);
    /* The old range is unmapped now: another thread's mapping could be there
     * already.  Our map must not claim it any more. */
    if (_hh_granule_kind(old_user) != HH_GRANULE_FOREIGN) atomic_fetch_add(&moves_with_stale_mark, 1);
}

static void test_large_realloc_granule(void) {
    arm("large_moved", on_large_moved);
    char *p = hh_malloc(HH_LARGE_MIN); /* a large block: it grows by mremap */
    CHECK(p != NULL);
    /* A page of someone else's right after its mapping (unless something is
     * there already): it cannot grow in place, so the growth moves it. */
    char *end = p + hh_usable_size(p);
    void *blocker = mmap(end, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                         -1, 0);
    CHECK(blocker == end || (blocker == MAP_FAILED && errno == EEXIST));
    p = hh_realloc(p, 2 * HH_LARGE_MIN);
    CHECK(p != NULL);
    disarm();
    CHECK(atomic_load(&moves_seen) > 0);
    CHECK(atomic_load(&moves_with_stale_mark) == 0);
    hh_free(p);
    if (blocker == end) munmap(blocker, 4096);
}

/* -- (b) the granule map covers the 48-bit address space of AArch64 (and of
 * x86-64 with 5-level paging when a program asks for high addresses) */

static void test_granule_high_addresses(void) {
    /* Below 2^47 as before, and in [2^47, 2^48) where AArch64's kernel puts
     * mmap by default: the old map covered only the first. */
    const uintptr_t addresses[] = {(uintptr_t)1 << 30, ((uintptr_t)1 << 47) - HH_UNIT,
                                   (uintptr_t)0xffffa0000000ull & ~(uintptr_t)HH_UNIT_MASK,
                                   ((uintptr_t)1 << 48) - HH_UNIT};
    for (size_t i = 0; i < sizeof addresses / sizeof addresses[0]; i++) {
        void *a = (void *)addresses[i];
        CHECK(_hh_granule_reserve(a, HH_UNIT));
        _hh_granule_set(a, HH_GRANULE_LARGE);
        CHECK(_hh_granule_kind(a) == HH_GRANULE_LARGE);
        CHECK(_hh_granule_kind((char *)a + HH_UNIT - 1) == HH_GRANULE_LARGE);
        _hh_granule_set(a, HH_GRANULE_FOREIGN);
        CHECK(_hh_granule_kind(a) == HH_GRANULE_FOREIGN);
    }
    /* Beyond the map: refused (the caller then fails with ENOMEM). */
    errno = 0;
    CHECK(!_hh_granule_reserve((void *)((uintptr_t)1 << 48), HH_UNIT));
    CHECK(errno == ENOMEM);
    CHECK(_hh_granule_kind((void *)(((uintptr_t)1 << 52) + 4096)) == HH_GRANULE_FOREIGN);
}

/* -- (c) little address space (RLIMIT_AS): big requests fail with ENOMEM,
 * small ones still work (a region outside the reserved range is mapped a
 * part at a time), nothing aborts */

static int low_address_space_child(void) {
    errno = 0;
    void *big = hh_malloc(512 * MiB);
    int big_ok = big == NULL && errno == ENOMEM;
    void *small = hh_malloc(100);
    int small_ok = small != NULL;
    for (int i = 0; i < 1000 && small_ok; i++) small_ok = hh_malloc(1000) != NULL;
    hh_free(small);
    return big_ok && small_ok ? 0 : 1;
}

static void test_granule_map_enomem(const char *self) {
    pid_t pid = fork();
    if (pid == 0) {
        /* Too little address space for a map of the whole address space (the
         * old one reserved 64 MiB at the first allocation), enough to run. */
        struct rlimit limit = {48 * MiB, 48 * MiB};
        setrlimit(RLIMIT_AS, &limit);
        execl(self, self, "low-address-space-child", (char *)NULL);
        _exit(3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) fprintf(stderr, "child killed by signal %d\n", WTERMSIG(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* -- (d) a page turned PENDING just before fork() reaches the child's pending
 * stack (the remote freer, which would have pushed it, is gone there) */

enum { FORK_BLOCK = 1024, FORK_BLOCKS = 400 };
static void *fork_blocks[FORK_BLOCKS];
static const hh_page *fork_page;
static atomic_int fork_stage; /* 1: freer inside the window, 2: forked */

static void on_remote_free_published(const void *page) {
    if (page != fork_page) return;
    atomic_store(&fork_stage, 1);
    while (atomic_load(&fork_stage) != 2) sched_yield();
}

static void *free_first_block(void *arg) {
    (void)arg;
    hh_free(fork_blocks[0]);
    return NULL;
}

static void test_fork_pending(void) {
    for (int i = 0; i < FORK_BLOCKS; i++) fork_blocks[i] = hh_malloc(FORK_BLOCK);
    fork_page = _hh_page_of(fork_blocks[0]);
    uintptr_t state = atomic_load(&((hh_page *)fork_page)->thread_free) & HH_PAGE_STATE_MASK;
    CHECK(state == HH_PAGE_FULL); /* exhausted and out of the queue */
    arm("remote_free_published", on_remote_free_published);
    pthread_t freer;
    pthread_create(&freer, NULL, free_first_block, NULL);
    while (atomic_load(&fork_stage) != 1) sched_yield();
    pid_t pid = fork();
    if (pid == 0) {
        /* The child's only thread: the freed block must come back to it. */
        int reused = 0;
        for (int i = 0; i < 4 * FORK_BLOCKS && !reused; i++) {
            void *p = hh_malloc(FORK_BLOCK);
            reused = p == fork_blocks[0];
        }
        _exit(reused ? 0 : 1);
    }
    atomic_store(&fork_stage, 2);
    pthread_join(freer, NULL);
    disarm();
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 1; i < FORK_BLOCKS; i++) hh_free(fork_blocks[i]);
}

/* -- (d') a thread the forked child makes takes the identity of a thread
 * fork() did not copy (glibc hands it that thread's stack): the vanished
 * thread's pages did not become its own (that thread may have been mid-way
 * through an update of them), nor was its heap abandoned as an orphan's */

static atomic_int vanished_stage; /* 1: the thread holds its block, 2: forked */
static void *vanished_block;
static pthread_t vanished_thread;

static void *hold_a_block(void *arg) {
    (void)arg;
    vanished_block = hh_malloc(200);
    atomic_store(&vanished_stage, 1);
    while (atomic_load(&vanished_stage) != 2) sched_yield();
    hh_free(vanished_block);
    return NULL;
}

/* In the child: 0 if the vanished thread's page is not this thread's, 1 if
 * it is, 77 if this thread did not take the vanished one's identity. */
static void *free_a_vanished_block(void *arg) {
    int *outcome = arg;
    if (!pthread_equal(pthread_self(), vanished_thread)) {
        *outcome = 77;
        return NULL;
    }
    const hh_page *page = _hh_page_of(vanished_block);
    bool mine = (atomic_load(&page->owner) & ~HH_PAGE_FLAGS) == _hh_thread_id();
    hh_free(vanished_block);
    void *blocks[400];
    for (int i = 0; i < 400; i++) blocks[i] = hh_malloc(200);
    for (int i = 0; i < 400; i++) hh_free(blocks[i]);
    *outcome = mine;
    return NULL;
}

static void test_fork_vanished_thread(void) {
    pthread_create(&vanished_thread, NULL, hold_a_block, NULL);
    while (atomic_load(&vanished_stage) != 1) sched_yield();
    pid_t pid = fork();
    if (pid == 0) {
        int outcome = 2;
        pthread_t t;
        if (pthread_create(&t, NULL, free_a_vanished_block, &outcome) != 0) _exit(2);
        pthread_join(t, NULL);
        _exit(outcome);
    }
    atomic_store(&vanished_stage, 2);
    pthread_join(vanished_thread, NULL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        SKIP("the child's thread did not take the vanished thread's identity (not glibc?)");
    }
    if (WIFSIGNALED(status)) fprintf(stderr, "child killed by signal %d\n", WTERMSIG(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* -- (e) a thread that makes its heap while the first thread is inside
 * late_init is still abandoned when it exits */

static atomic_int late_stage; /* 1: the thread allocated, 2: it waits for late_init */
static hh_heap *late_thread_heap, *next_thread_heap;
static pthread_t late_thread;
static bool late_test;

static void *allocate_in_late_init(void *arg) {
    (void)arg;
    void *p = hh_malloc(100);
    late_thread_heap = _hh_heap;
    hh_free(p);
    atomic_store(&late_stage, 1);
    return NULL;
}

static void on_late_init(const char *point, const void *arg) {
    (void)arg;
    if (strcmp(point, "late_init_wait") == 0) {
        atomic_store(&late_stage, 2);
    } else if (strcmp(point, "late_init_running") == 0) {
        pthread_create(&late_thread, NULL, allocate_in_late_init, NULL);
        while (atomic_load(&late_stage) == 0) sched_yield();
    }
}

static void *note_heap(void *arg) {
    (void)arg;
    void *p = hh_malloc(100);
    next_thread_heap = _hh_heap;
    hh_free(p);
    return NULL;
}

static void test_late_init_heap(void) {
    CHECK(late_test); /* the constructor below ran */
    atomic_store(&_hh_test_hook, (_hh_test_hook_fn)NULL);
    pthread_join(late_thread, NULL);
    CHECK(late_thread_heap != NULL);
    /* Its heap was abandoned at exit, so it is the next one handed out. */
    pthread_t next;
    pthread_create(&next, NULL, note_heap, NULL);
    pthread_join(next, NULL);
    CHECK(next_thread_heap == late_thread_heap);
}

/* -- (f) a pthread_atfork prepare handler registered before ours runs after
 * ours, with our lock held: if it allocates on a slow path, fork must not
 * deadlock */

static bool atfork_test, atfork_pool_test;
static hh_pool *atfork_pool;

static void prepare_that_allocates(void) {
    if (atfork_test) {
        void *big = hh_malloc(64 * MiB); /* large blocks take the global lock */
        hh_free(big);
    }
    if (atfork_pool_test) {
        /* A fresh pool page each time: the pool's lock is taken. */
        for (int i = 0; i < 5000; i++) hh_pool_alloc(atfork_pool);
    }
}

static void test_atfork_allocating(void) {
    alarm(60); /* a deadlock ends the test instead of hanging ctest */
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(pid > 0 && WIFEXITED(status));
    alarm(0);
}

/* Before libhugeheap's constructor (default priority): the handlers are
 * registered first and the test points set before late_init runs. */
__attribute__((constructor(101))) static void before_hugeheap(void) {
    const char *test = getenv("HH_DEFECT_TEST");
    if (test != NULL && strcmp(test, "late-init-heap") == 0) {
        late_test = true;
        atomic_store(&_hh_test_hook, on_late_init);
    }
    if (test != NULL && strcmp(test, "atfork-allocating") == 0) {
        atfork_test = true;
        pthread_atfork(prepare_that_allocates, NULL, NULL);
    }
    if (test != NULL && strcmp(test, "atfork-pool") == 0) {
        atfork_pool_test = true;
        atfork_pool = hh_pool_create(64);
        pthread_atfork(prepare_that_allocates, NULL, NULL);
    }
}

/* -- statistics */

/* Allocations and frees as the statistics summary prints them. */
static void printed_counts(unsigned long long *allocs, unsigned long long *frees) {
    int fds[2];
    if (pipe(fds) != 0) abort();
    hh_print_stats(fds[1]);
    close(fds[1]);
    char text[4096];
    ssize_t n = read(fds[0], text, sizeof text - 1);
    close(fds[0]);
    text[n > 0 ? n : 0] = '\0';
    const char *a = strstr(text, "allocations "), *f = strstr(text, "frees ");
    *allocs = a ? strtoull(a + 12, NULL, 10) : 0;
    *frees = f ? strtoull(f + 6, NULL, 10) : 0;
}

/* Medium and large blocks are counted one by one, allocated and freed; small
 * blocks as their pages hand them out (a batch at a time), and those not in
 * use at the count are counted freed. */
static void test_large_free_stats(void) {
    _hh_stats_on = true;
    void *warm = hh_malloc(10); /* the thread's heap exists from here */
    unsigned long long allocs0, frees0, allocs1, frees1;
    printed_counts(&allocs0, &frees0);
    for (int i = 0; i < 5; i++) hh_free(hh_malloc(8 * MiB));       /* medium */
    for (int i = 0; i < 3; i++) hh_free(hh_malloc(HH_LARGE_MIN)); /* large */
    printed_counts(&allocs1, &frees1);
    CHECK(allocs1 - allocs0 == 8);
    CHECK(frees1 - frees0 == 8);
    hh_free(hh_malloc(100));
    printed_counts(&allocs0, &frees0);
    CHECK(allocs0 > allocs1 && allocs0 - frees0 == allocs1 - frees1);
    hh_free(warm);
}

/* The release policy's bound on free memory held pages of a unit beyond
 * the region's writable top: a small heap opens its pages 256 KiB at a time,
 * and a unit free as a whole went back whole, its unopened pages marked in
 * use while the lock was let go (another thread's allocation then found the
 * region invalid).  The pages picked are checked before the lock goes. */
static void test_slack_unopened_pages(void) {
    enum { BLOCKS = 20, BLOCK = 256 << 10 };
    void *blocks[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        blocks[i] = hh_malloc(BLOCK);
        CHECK(blocks[i] != NULL);
        memset(blocks[i], 1, BLOCK);
    }
    /* The blocks past the first 2 MiB unit go: free memory over the bound
     * (one unit), the top unit free as a whole and open only in part. */
    hh_region *r = _hh_region_of(blocks[0]);
    for (int i = 0; i < BLOCKS; i++) {
        if ((size_t)((char *)blocks[i] - (char *)r) < 2 * MiB) continue;
        hh_free(blocks[i]);
        blocks[i] = NULL;
    }
    struct timespec quiet = {0, 300 * 1000 * 1000};
    nanosleep(&quiet, NULL);
    void *probe = hh_malloc(BLOCK); /* the release policy looks */
    _hh_lock();
    CHECK(_hh_pages_valid_locked());
    CHECK(_hh_pageheap.dirty_free_pages <= HH_UNIT_PAGES);
    _hh_unlock();
    hh_free(probe);
    for (int i = 0; i < BLOCKS; i++) hh_free(blocks[i]);
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "";
    if (strcmp(name, "low-address-space-child") == 0) return low_address_space_child();
    if (strcmp(name, "large-realloc-granule") == 0) {
        test_large_realloc_granule();
    } else if (strcmp(name, "granule-high-addresses") == 0) {
        test_granule_high_addresses();
    } else if (strcmp(name, "granule-map-enomem") == 0) {
        test_granule_map_enomem(argv[0]);
    } else if (strcmp(name, "fork-pending") == 0) {
        test_fork_pending();
    } else if (strcmp(name, "fork-vanished-thread") == 0) {
        test_fork_vanished_thread();
    } else if (strcmp(name, "late-init-heap") == 0) {
        test_late_init_heap();
    } else if (strcmp(name, "atfork-allocating") == 0 || strcmp(name, "atfork-pool") == 0) {
        test_atfork_allocating();
    } else if (strcmp(name, "large-free-stats") == 0) {
        test_large_free_stats();
    } else if (strcmp(name, "slack-unopened-pages") == 0) {
        test_slack_unopened_pages();
    } else {
        fprintf(stderr, "usage: test_defects TEST (see the file for the names)\n");
        return 2;
    }
    return check_summary();
}

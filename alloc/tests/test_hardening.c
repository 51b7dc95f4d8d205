/* Frees that cannot corrupt the heap: each misuse runs in a child process,
 * which must stop with SIGABRT and one line on stderr that names the problem
 * and the pointer (as glibc's "free(): double free detected" does).  And a
 * request the machine can never provide is refused with ENOMEM. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "hugeheap.h"

typedef void (*misuse)(void);

static int pointer_fd = -1; /* the child tells the parent which pointer it misuses */

static void say_pointer(const void *p) {
    char text[32];
    int n = snprintf(text, sizeof text, "0x%016llx", (unsigned long long)(uintptr_t)p);
    if (write(pointer_fd, text, (size_t)n) != n) _exit(2);
}

/* What a child that ran a misuse left: how it ended, the pointer or
 * address it named (before the misuse), its stderr (the start of it). */
typedef struct child_result {
    int status;
    char pointer[40];
    char text[4096];
} child_result;

/* Runs f in a child, after `prepare` (if any), and collects what it left. */
static void run_child(misuse prepare, misuse f, child_result *out) {
    int fds[2];
    int shared[2];
    if (pipe(fds) != 0 || pipe(shared) != 0) abort();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(shared[0]);
        pointer_fd = shared[1];
        if (prepare != NULL) prepare();
        f();
        _exit(0); /* not reached if the misuse was caught */
    }
    close(fds[1]);
    close(shared[1]);
    ssize_t got = read(shared[0], out->pointer, sizeof out->pointer - 1);
    out->pointer[got > 0 ? got : 0] = '\0';
    close(shared[0]);
    size_t len = 0, room = sizeof out->text - 1;
    ssize_t n;
    char sink[4096]; /* the rest of a long report is read, not kept */
    while ((n = read(fds[0], len < room ? out->text + len : sink,
                     len < room ? room - len : sizeof sink)) > 0) {
        if (len < room) len += (size_t)n;
    }
    out->text[len] = '\0';
    close(fds[0]);
    out->status = 0;
    waitpid(pid, &out->status, 0);
}

/* Runs f in a child; checks it aborted with one line containing `message`
 * and the pointer f reported. */
static void expect_abort(const char *name, misuse f, const char *message) {
    child_result child;
    run_child(NULL, f, &child);
    int status = child.status;
    const char *text = child.text, *pointer = child.pointer;
    int aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
    /* One line of ours (qemu-user adds one of its own about the signal). */
    const char *line = strstr(text, "hugeheap: ");
    const char *end = line ? strchr(line, '\n') : NULL;
    int one_line = end != NULL && strstr(end, "hugeheap: ") == NULL;
    int named = line != NULL && strstr(line, message) != NULL && pointer[0] != '\0' &&
                strstr(line, pointer) != NULL;
    if (!aborted || !one_line || !named) {
        fprintf(stderr, "%s: status %d, stderr: %s\n", name, status, text);
    }
    CHECK(aborted);
    CHECK(one_line);
    CHECK(named);
}

#define FAULTED 94 /* the child's SIGSEGV handler exits with this */
#define NO_BLOCK 95 /* the child got no block to misuse */

/* Says the faulting address, then ends the child. */
static void exit_faulted(int sig, siginfo_t *info, void *context) {
    (void)sig;
    (void)context;
    char text[32];
    int n = snprintf(text, sizeof text, "fault at 0x%llx\n",
                     (unsigned long long)(uintptr_t)info->si_addr);
    if (write(STDERR_FILENO, text, (size_t)n) != n) _exit(2);
    _exit(FAULTED);
}

/* The address a misuse will touch, told to the parent (before touching). */
static void say_target(const volatile void *p) {
    if (p == NULL) _exit(NO_BLOCK);
    char text[32];
    int n = snprintf(text, sizeof text, "0x%llx", (unsigned long long)(uintptr_t)p);
    if (write(pointer_fd, text, (size_t)n) != n) _exit(2);
}

static void catch_faults(void) {
    struct sigaction on_fault;
    memset(&on_fault, 0, sizeof on_fault);
    on_fault.sa_sigaction = exit_faulted;
    on_fault.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &on_fault, NULL);
}

/* Runs f in a child; checks that it faulted (SIGSEGV) at the address it
 * named: its own handler says where, or a sanitizer's report of the SEGV
 * does. */
static void expect_fault(const char *name, misuse f) {
    child_result child;
    run_child(catch_faults, f, &child);
    int status = child.status;
    const char *text = child.text, *target = child.pointer;
    int exited = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const char *at = target[0] != '\0' ? strstr(text, target) : NULL;
    /* The target's digits end there (not a longer address that starts so). */
    int named = at != NULL && !isxdigit((unsigned char)at[strlen(target)]);
    int faulted = named && (exited == FAULTED || (exited > 0 && strstr(text, "SEGV") != NULL));
    if (!faulted) fprintf(stderr, "%s: status %d, target %s, stderr: %s\n", name, status, target, text);
    CHECK(faulted);
}

static void double_free_same_thread(void) {
    void *keep = hh_malloc(48);
    void *p = hh_malloc(48);
    say_pointer(p);
    hh_free(p);
    hh_free(keep);
    hh_free(p);
}

static void *free_argument(void *arg) {
    hh_free(arg);
    return NULL;
}

/* Freed by another thread, then again by the owner: the second free finds
 * the block on the page's thread-free list. */
static void double_free_other_thread(void) {
    void *p = hh_malloc(200);
    say_pointer(p);
    pthread_t t;
    pthread_create(&t, NULL, free_argument, p);
    pthread_join(t, NULL);
    hh_free(p);
}

/* The same into a page its owner has filled, so that the page is out of
 * the owner's queue: free's fast path sends the owner's second free
 * straight to the page (no lookup of the pointer's kind), where the free
 * mark must still send it to the full check. */
static void double_free_other_thread_full_page(void) {
    enum { BLOCKS = 1000 }; /* 200-byte blocks: three 64 KiB pages and more */
    static void *blocks[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) blocks[i] = hh_malloc(200);
    void *p = blocks[0]; /* in the first page, filled and left behind */
    say_pointer(p);
    pthread_t t;
    pthread_create(&t, NULL, free_argument, p);
    pthread_join(t, NULL);
    hh_free(p);
}

/* Freed by its owner, then again by another thread. */
static void double_free_remote_second(void) {
    void *p = hh_malloc(200);
    say_pointer(p);
    hh_free(p);
    pthread_t t;
    pthread_create(&t, NULL, free_argument, p);
    pthread_join(t, NULL);
}

static void double_free_large(void) {
    void *p = hh_malloc(8 << 20);
    say_pointer(p);
    hh_free(p);
    hh_free(p);
}

static void interior_pointer(void) {
    char *p = hh_malloc(64);
    say_pointer(p + 16);
    hh_free(p + 16);
}

static void interior_pointer_medium(void) {
    char *p = hh_malloc(100000);
    say_pointer(p + 4096);
    hh_free(p + 4096);
}

/* Blocks grown by realloc live in the growth heap: the same misuses stop
 * there too. */
static void double_free_grown(void) {
    char *keep = hh_realloc(NULL, 40);
    char *p = hh_realloc(NULL, 40);
    p = hh_realloc(p, 300);
    say_pointer(p);
    hh_free(p);
    hh_free(keep);
    hh_free(p);
}

static void interior_pointer_grown(void) {
    char *p = hh_realloc(hh_realloc(NULL, 40), 300);
    say_pointer(p + 32);
    hh_free(p + 32);
}

static void realloc_of_freed_grown(void) {
    char *keep = hh_realloc(NULL, 40);
    char *p = hh_realloc(NULL, 100);
    say_pointer(p);
    hh_free(p);
    p = hh_realloc(p, 200);
    hh_free(keep);
}

/* The same once the thread's heap is live, which keeps the blocks it frees
 * for its next ones: the second free finds the block among them. */
static void double_free_grown_kept(void) {
    hh_free(hh_malloc(8)); /* the thread's heap is live from here */
    char *p = hh_realloc(hh_realloc(NULL, 40), 300);
    say_pointer(p);
    hh_free(p);
    hh_free(p);
}

/* A block of 3,000 bytes: the size classes' by default, the growth heap's
 * where HUGEHEAP_GROWTH_HEAP=big. */
static void double_free_3k(void) {
    hh_free(hh_malloc(8));
    char *p = hh_malloc(3000);
    say_pointer(p);
    hh_free(p);
    hh_free(p);
}

static void realloc_of_freed_grown_kept(void) {
    hh_free(hh_malloc(8));
    char *p = hh_realloc(hh_realloc(NULL, 40), 300);
    say_pointer(p);
    hh_free(p);
    p = hh_realloc(p, 600);
}

/* A block carved but never handed out (its neighbour's start): it carries
 * the free mark from its carving. */
static void never_handed_out(void) {
    char *p = hh_malloc(64);
    say_pointer(p + 64);
    hh_free(p + 64);
}

/* Past the blocks a page has carved so far. */
static void beyond_the_carved(void) {
    char *p = hh_malloc(64);
    say_pointer(p + 16384);
    hh_free(p + 16384);
}

static void *pool_free_argument(void *arg) {
    void **pool_and_object = arg;
    hh_pool_free(pool_and_object[0], pool_and_object[1]);
    return NULL;
}

/* hh_pool_free by a thread of its own. */
static void pool_free_elsewhere(hh_pool *pool, void *object) {
    void *args[2] = {pool, object};
    pthread_t t;
    pthread_create(&t, NULL, pool_free_argument, args);
    pthread_join(t, NULL);
}

/* Freed by its owner, then again by the owner or by another thread. */
static void pool_free_twice(bool second_elsewhere) {
    hh_pool *pool = hh_pool_create(48);
    void *keep = hh_pool_alloc(pool);
    void *p = hh_pool_alloc(pool);
    say_pointer(p);
    hh_pool_free(pool, p);
    hh_pool_free(pool, keep);
    if (second_elsewhere) {
        pool_free_elsewhere(pool, p);
    } else {
        hh_pool_free(pool, p);
    }
}

static void pool_double_free(void) { pool_free_twice(false); }

/* Another thread cannot look at the owner's list: its free of a marked
 * object stops, as malloc's does. */
static void pool_double_free_remote_second(void) { pool_free_twice(true); }

/* Freed by another thread, then again by the owner: the second free finds
 * the object on the page's remote list. */
static void pool_double_free_remote_first(void) {
    hh_pool *pool = hh_pool_create(48);
    void *p = hh_pool_alloc(pool);
    say_pointer(p);
    pool_free_elsewhere(pool, p);
    hh_pool_free(pool, p);
}

/* A free of `offset` bytes past a pool's first object (of 48 bytes). */
static void pool_free_past_first(size_t offset) {
    hh_pool *pool = hh_pool_create(48);
    char *p = hh_pool_alloc(pool);
    say_pointer(p + offset);
    hh_pool_free(pool, p + offset);
}

/* An object carved but never handed out (its neighbour's start): it carries
 * the free mark from its carving. */
static void pool_never_handed_out(void) { pool_free_past_first(48); }

/* A use after free writes a plain pointer over a freed object's link: the
 * allocation that would follow it stops instead of handing out the written
 * address (the pool's links are encoded as malloc's are). */
static void pool_corrupted_free_list(void) {
    hh_pool *pool = hh_pool_create(32);
    void *objects[3];
    for (int i = 0; i < 3; i++) objects[i] = hh_pool_alloc(pool);
    hh_pool_free(pool, objects[1]);
    hh_pool_free(pool, objects[2]);
    say_pointer(objects[2]);
    uintptr_t stray = (uintptr_t)&pointer_fd;
    memcpy(objects[2], &stray, sizeof stray);
    for (int i = 0; i < 5000; i++) hh_pool_alloc(pool);
}

static void pool_interior(void) { pool_free_past_first(16); }

static void foreign_pointer(void) {
    static char not_ours[64];
    say_pointer(not_ours);
    hh_free(not_ours);
}

/* A use after free writes over the freed block's link: the allocation that
 * would follow it stops instead of handing out the written address. */
static void corrupted_free_list(void) {
    void *blocks[3];
    for (int i = 0; i < 3; i++) blocks[i] = hh_malloc(32);
    hh_free(blocks[1]);
    hh_free(blocks[2]);
    say_pointer(blocks[2]);
    uintptr_t stray = (uintptr_t)&pointer_fd; /* a plain pointer, as an exploit would write */
    memcpy(blocks[2], &stray, sizeof stray);
    for (int i = 0; i < 5000; i++) hh_malloc(32); /* uses up the page, then its free list */
}

/* The heap is writable only as far as it reaches: past its top and just
 * before its first region, writes fault (as past glibc's top of heap). */
static void write_past_the_top(void) {
    volatile char *p = hh_malloc(64);
    if (p == NULL) _exit(NO_BLOCK);
    say_target(p + (8 << 20));
    p[8 << 20] = 1;
}

static void write_before_the_start(void) {
    volatile char *p = hh_malloc(64);
    if (p == NULL) _exit(NO_BLOCK);
    say_target(p - (2 << 20));
    p[-(2 << 20)] = 1;
}

/* A big block of 256 KiB, written. */
static volatile char *big_block(void) {
    volatile char *p = hh_malloc(256 << 10);
    if (p == NULL) _exit(NO_BLOCK);
    p[0] = 1;
    return p;
}

/* Frees p and writes into it: a fault if it was shut (PROT_NONE). */
static void free_and_write(volatile char *p) {
    hh_free((void *)p);
    say_target(p + 100);
    p[100] = 1;
}

/* A big block freed while the heap is small is shut. */
static void write_after_free_big(void) { free_and_write(big_block()); }

/* A block big when it was allocated is shut when freed, though a bigger
 * block freed since has raised the bar (glibc, too, decides when it maps a
 * block). */
static void write_after_free_big_allocated_early(void) {
    volatile char *early = big_block();
    char *bigger = hh_malloc(1 << 20);
    if (bigger == NULL) _exit(NO_BLOCK);
    bigger[0] = 1;
    hh_free(bigger);
    free_and_write(early);
}

/* A realloc's old copies raise no bar (glibc remaps a block it mapped): a
 * big block freed after a vector grew past it, to a large block, is shut. */
static void write_after_free_big_after_growth(void) {
    volatile char *early = big_block();
    char *vector = hh_malloc(300 << 10);
    if (vector == NULL) _exit(NO_BLOCK);
    for (size_t size = 450 << 10; size < ((size_t)4 << 20); size = size * 3 / 2) {
        vector = hh_realloc(vector, size);
        if (vector == NULL) _exit(NO_BLOCK);
        vector[size - 1] = 1;
    }
    free_and_write(early);
}

/* A free of a pointer into the range where no region is yet. */
static void free_beyond_the_regions(void) {
    char *p = hh_malloc(64);
    say_pointer(p + ((size_t)1 << 30));
    hh_free(p + ((size_t)1 << 30));
}

/* Whether the kernel's THP setting is `never` (then the heap never turns
 * huge, and shut blocks come back only as newer ones are shut). */
static int thp_never(void) {
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == NULL) return 1;
    char line[128] = "";
    int never = fgets(line, sizeof line, f) == NULL || strstr(line, "[never]") != NULL;
    fclose(f);
    return never;
}

/* Shut blocks are held out of the page heap, then come back into it,
 * writable and zero: more big blocks shut than the heap holds out (the
 * oldest go back first), then the heap turns huge (all go back).  First fit
 * on a fresh heap makes the addresses predictable. */
static void test_shut_blocks_come_back(void) {
    enum { BLOCKS = 12, HELD = 8 };
    char *first[BLOCKS], *blocks[BLOCKS];
    size_t sizes[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        sizes[i] = ((size_t)128 << 10) + (size_t)i * 8192;
        first[i] = hh_malloc(sizes[i]);
        CHECK(first[i] != NULL);
        memset(first[i], 0x5a, sizes[i]);
    }
    for (int i = 0; i < BLOCKS; i++) hh_free(first[i]); /* each larger: each shut */
    int huge = !thp_never();
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < BLOCKS; i++) {
            char *p = hh_calloc(1, sizes[i]);
            CHECK(p != NULL);
            int zero = 1;
            for (size_t k = 0; k < sizes[i]; k += 512) zero &= p[k] == 0;
            CHECK(zero);
            memset(p, 0x33, sizes[i]);
            blocks[i] = p;
        }
        /* The first round gets the four oldest back (freed to make room
         * for newer ones), not the eight still held; the second, after the
         * promotion, every one. */
        for (int i = 0; i < BLOCKS; i++) {
            int held = round == 0 || !huge ? i >= BLOCKS - HELD : 0;
            if (held) CHECK(blocks[i] != first[i]);
            if (!held) CHECK(blocks[i] == first[i]);
        }
        for (int i = 0; i < BLOCKS; i++) hh_free(blocks[i]);
        if (round == 0) { /* a large block turns the heap huge */
            char *big = hh_malloc((size_t)48 << 20);
            CHECK(big != NULL);
            memset(big, 1, (size_t)48 << 20);
            hh_free(big);
        }
    }
}

static void test_impossible_requests(void) {
    errno = 0;
    CHECK(hh_malloc((size_t)32 << 40) == NULL); /* 32 TiB */
    CHECK(errno == ENOMEM);
    errno = 0;
    CHECK(hh_calloc((size_t)1 << 20, (size_t)1 << 25) == NULL);
    CHECK(errno == ENOMEM);
    void *p = hh_malloc(10 << 20);
    errno = 0;
    CHECK(hh_realloc(p, (size_t)32 << 40) == NULL);
    CHECK(errno == ENOMEM);
    hh_free(p); /* still ours after the failed realloc */
}

int main(void) {
    expect_abort("double free", double_free_same_thread, "double free detected");
    expect_abort("double free, first by another thread", double_free_other_thread,
                 "double free detected");
    expect_abort("double free, first by another thread, into a full page",
                 double_free_other_thread_full_page, "double free detected");
    expect_abort("double free, second by another thread", double_free_remote_second,
                 "double free detected");
    expect_abort("double free of a large block", double_free_large, "invalid pointer");
    expect_abort("interior pointer", interior_pointer, "inside a block");
    expect_abort("interior pointer, medium block", interior_pointer_medium, "inside a block");
    expect_abort("double free of a grown block", double_free_grown, "double free");
    expect_abort("interior pointer, grown block", interior_pointer_grown, "inside a block");
    expect_abort("double free of a grown block kept by its thread", double_free_grown_kept,
                 "double free");
    expect_abort("double free of a 3 KiB block", double_free_3k, "double free");
    /* The growth heap checks a realloc's block as a free does; the size
     * classes look only at where it lies (the test runs once with each). */
    const char *growth = getenv("HUGEHEAP_GROWTH_HEAP");
    if (growth != NULL && strcmp(growth, "on") == 0) {
        expect_abort("realloc of a freed grown block", realloc_of_freed_grown, "invalid pointer");
        expect_abort("realloc of a grown block kept by its thread", realloc_of_freed_grown_kept,
                     "invalid pointer");
    }
    expect_abort("foreign pointer", foreign_pointer, "not allocated by hugeheap");
    expect_abort("a block never handed out", never_handed_out, "double free");
    expect_abort("beyond the carved blocks", beyond_the_carved, "invalid pointer");
    expect_abort("pool double free", pool_double_free, "hh_pool_free(): double free");
    expect_abort("pool double free, second by another thread", pool_double_free_remote_second,
                 "hh_pool_free(): double free");
    expect_abort("pool double free, first by another thread", pool_double_free_remote_first,
                 "hh_pool_free(): double free");
    expect_abort("pool object never handed out", pool_never_handed_out,
                 "hh_pool_free(): double free");
    expect_abort("pool interior pointer", pool_interior, "not the start of an object");
    expect_abort("pool corrupted free list", pool_corrupted_free_list, "corrupted free list");
    expect_abort("corrupted free list", corrupted_free_list, "corrupted free list");
    expect_fault("a write 8 MiB past the heap's top", write_past_the_top);
    expect_fault("a write 2 MiB before the heap", write_before_the_start);
    expect_fault("a write to a big block freed while the heap is small", write_after_free_big);
    expect_fault("a write to a big block freed after a bigger one",
                 write_after_free_big_allocated_early);
    expect_fault("a write to a big block freed after a vector grew past it",
                 write_after_free_big_after_growth);
    expect_abort("a free where no region is yet", free_beyond_the_regions,
                 "not allocated by hugeheap");
    test_shut_blocks_come_back();
    test_impossible_requests();
    return check_summary();
}

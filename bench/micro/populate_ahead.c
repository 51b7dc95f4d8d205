/* Whether a helper thread can take the first touch of huge pages off a
 * program's critical path: the program builds a heap of MIB MiB in order,
 * writing each 4 KiB page and then reading it WORK times (its own work
 * between writes, as a solver parses and simplifies while its clause arena
 * grows), in 2 MiB units of memory fresh from the kernel.  MODE says how the
 * units get their pages:
 *
 *   small     4 KiB pages (MADV_NOHUGEPAGE), faulted by the program's writes
 *   huge      huge pages (MADV_HUGEPAGE), faulted by the program's writes
 *   populate  huge pages the program's thread makes itself before writing a
 *             unit (MADV_POPULATE_WRITE), as the library does now
 *   ahead     huge pages a helper thread makes (MADV_POPULATE_WRITE) up to
 *             AHEAD units beyond the one the program writes; a unit the
 *             helper has not reached yet is faulted by the program's writes
 *
 * It prints one line: the mode, the wall time, the process's user and system
 * time (every thread's: what a competition's CPU-time limit counts), the
 * share of the heap the kernel backed with huge pages at the end (smaps), and
 * a checksum of what the program read, the same in every mode.
 * Allocates nothing: it measures the kernel and the machine, not an allocator
 * (bench/populate_ahead.py runs the modes interleaved).
 *
 *   hh-micro-populate-ahead MODE MIB [WORK] [AHEAD]   defaults WORK 4, AHEAD 8 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "arguments.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define PAGE ((size_t)4096)
#define UNIT ((size_t)2 << 20)

enum mode { SMALL, HUGE, POPULATE, AHEAD };
static const char *const MODE_NAMES[] = {"small", "huge", "populate", "ahead"};

/* What the program has written and how far the helper may go: the helper
 * waits while it is AHEAD units beyond the program. */
struct progress {
    pthread_mutex_t lock;
    pthread_cond_t moved;
    size_t units_written;
    size_t units, ahead;
    char *heap;
    int populate_error; /* errno of a failed MADV_POPULATE_WRITE, 0 if none */
};

static double seconds(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *populate_ahead(void *argument) {
    struct progress *p = argument;
    for (size_t u = 1; u < p->units; u++) { /* the program's first unit is its own */
        pthread_mutex_lock(&p->lock);
        while (u >= p->units_written + p->ahead) pthread_cond_wait(&p->moved, &p->lock);
        bool reached = u < p->units_written; /* the program got there first */
        pthread_mutex_unlock(&p->lock);
        if (reached) continue;
        if (madvise(p->heap + u * UNIT, UNIT, MADV_POPULATE_WRITE) != 0) {
            p->populate_error = errno;
            return NULL;
        }
    }
    return NULL;
}

/* Writes one page and reads it `work` times; returns what it read, so that
 * the compiler keeps the work. */
static uint64_t build_page(uint64_t *page, uint64_t seed, long work) {
    size_t words = PAGE / sizeof *page;
    for (size_t i = 0; i < words; i++) page[i] = seed + i * 0x9E3779B97F4A7C15ull;
    uint64_t sum = 0;
    for (long pass = 0; pass < work; pass++)
        for (size_t i = 0; i < words; i++) sum = (sum ^ page[i]) * 0x100000001B3ull;
    return sum;
}

/* The share of anonymous memory in huge pages now, from /proc/self/smaps_rollup;
 * -1 where the kernel does not say. */
static double huge_share(void) {
    FILE *rollup = fopen("/proc/self/smaps_rollup", "r");
    if (rollup == NULL) return -1;
    char line[256];
    long anonymous = -1, huge = -1, value;
    while (fgets(line, sizeof line, rollup) != NULL) {
        if (sscanf(line, "Anonymous: %ld kB", &value) == 1) anonymous = value;
        if (sscanf(line, "AnonHugePages: %ld kB", &value) == 1) huge = value;
    }
    fclose(rollup);
    return anonymous > 0 && huge >= 0 ? (double)huge / (double)anonymous : -1;
}

static enum mode mode_named(const char *name) {
    for (size_t m = 0; m < sizeof MODE_NAMES / sizeof MODE_NAMES[0]; m++)
        if (strcmp(name, MODE_NAMES[m]) == 0) return (enum mode)m;
    fprintf(stderr, "hh-micro-populate-ahead: MODE must be small, huge, populate or ahead, not %s\n",
            name);
    exit(2);
}

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    if (argc < 3) {
        fprintf(stderr, "usage: hh-micro-populate-ahead MODE MIB [WORK] [AHEAD]\n");
        return 2;
    }
    enum mode mode = mode_named(argv[1]);
    long mib = micro_number(argc, argv, 2, "MIB", 400, 2, 1L << 20);
    long work = micro_number(argc, argv, 3, "WORK", 4, 0, 1000);
    long ahead = micro_number(argc, argv, 4, "AHEAD", 8, 1, 1L << 20);
    if (mib % 2 != 0) {
        fprintf(stderr, "hh-micro-populate-ahead: MIB must be even (2 MiB units), not %ld\n", mib);
        return 2;
    }
    struct progress p = {.lock = PTHREAD_MUTEX_INITIALIZER,
                         .moved = PTHREAD_COND_INITIALIZER,
                         .units = ((size_t)mib << 20) / UNIT,
                         .ahead = (size_t)ahead};
    size_t size = p.units * UNIT;

    double start = now();
    char *mapping = mmap(NULL, size + UNIT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) {
        fprintf(stderr, "hh-micro-populate-ahead: cannot map %ld MiB: %s\n", mib, strerror(errno));
        return 1;
    }
    p.heap = (char *)(((uintptr_t)mapping + UNIT - 1) & ~(uintptr_t)(UNIT - 1));
    if (madvise(p.heap, size, mode == SMALL ? MADV_NOHUGEPAGE : MADV_HUGEPAGE) != 0) {
        fprintf(stderr, "hh-micro-populate-ahead: madvise: %s (no transparent huge pages?)\n",
                strerror(errno));
        return 1;
    }
    pthread_t helper;
    if (mode == AHEAD && pthread_create(&helper, NULL, populate_ahead, &p) != 0) {
        fprintf(stderr, "hh-micro-populate-ahead: cannot start the helper thread\n");
        return 1;
    }
    uint64_t checksum = 0;
    for (size_t u = 0; u < p.units; u++) {
        char *unit = p.heap + u * UNIT;
        if (mode == POPULATE && madvise(unit, UNIT, MADV_POPULATE_WRITE) != 0) {
            fprintf(stderr, "hh-micro-populate-ahead: MADV_POPULATE_WRITE: %s (Linux 5.14+)\n",
                    strerror(errno));
            return 1;
        }
        for (size_t page = 0; page < UNIT; page += PAGE)
            checksum += build_page((uint64_t *)(unit + page), u * UNIT + page, work);
        if (mode == AHEAD) {
            pthread_mutex_lock(&p.lock);
            p.units_written = u + 1;
            pthread_cond_signal(&p.moved);
            pthread_mutex_unlock(&p.lock);
        }
    }
    if (mode == AHEAD) pthread_join(helper, NULL);
    if (p.populate_error != 0) {
        fprintf(stderr, "hh-micro-populate-ahead: MADV_POPULATE_WRITE: %s (Linux 5.14+)\n",
                strerror(p.populate_error));
        return 1;
    }
    double share = huge_share();
    double wall = now() - start;
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("mode=%s mib=%ld work=%ld ahead=%ld wall_s=%.4f user_s=%.4f sys_s=%.4f huge_share=%.3f "
           "checksum=%llu\n",
           MODE_NAMES[mode], mib, work, ahead, wall, seconds(usage.ru_utime), seconds(usage.ru_stime),
           share, (unsigned long long)checksum);
    munmap(mapping, size + UNIT);
    return 0;
}

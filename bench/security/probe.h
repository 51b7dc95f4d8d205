/* The frame of the security probes: small programs that each commit one heap
 * bug of the kind mimalloc-bench's security folder lists (double frees, frees
 * of pointers never handed out, overflows into the next block, use after
 * free, size overflows, ...) and say whether the allocator serving malloc
 * noticed. bench/security.py runs them under every allocator.
 *
 * The rule, for every probe:
 *   - caught: the process dies by a signal (the allocator aborts, or the bug
 *     faults) or exits nonzero before it prints NOT_CAUGHT; where the probe
 *     itself sees the allocator do the safe thing (malloc of an impossible
 *     size returns NULL, a freed block is not handed out again at once) it
 *     says so on stderr and exits PROBE_CAUGHT;
 *   - not caught: the probe prints NOT_CAUGHT and exits 0;
 *   - no verdict: exit PROBE_ERROR (called wrongly, or a plain request failed).
 * A program's probes are listed by `--list`; `PROGRAM NAME [SIZE]` runs one.
 * Sized probes take the allocation size as an argument at run time (not
 * compiled in, as mimalloc-bench does with ALLOCATION_SIZE), so the runner
 * chooses the sizes and the compiler never sees a size it could reason about.
 *
 * Every allocator call goes through a volatile function pointer: the
 * compiler cannot fold, move or warn about a call whose callee it does not
 * know, so each bug happens exactly as written; stdout is unbuffered, so the
 * only allocations after a bug are the probe's own. */
#ifndef HH_PROBE_H
#define HH_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
#define PROBE_NORETURN [[noreturn]]
extern "C" {
#else
#define PROBE_NORETURN _Noreturn
#endif

enum {
    PROBE_CAUGHT = 3, /* caught, as the probe itself saw */
    PROBE_ERROR = 64, /* no verdict: called wrongly, or a plain request failed */
};

typedef struct probe {
    const char *name;
    const char *bug_class; /* the table bench/security.py shows it in */
    bool sized;            /* takes the allocation size as its argument */
    void (*run)(size_t size);
} probe;

/* The allocator's functions, called so the compiler cannot see through them. */
extern void *(*volatile probe_malloc)(size_t size);
extern void *(*volatile probe_calloc)(size_t count, size_t size);
extern void *(*volatile probe_realloc)(void *block, size_t size);
extern void (*volatile probe_free)(void *block);
extern void *(*volatile probe_memcpy)(void *to, const void *from, size_t size);
extern void *(*volatile probe_memset)(void *block, int byte, size_t size);

/* The bug went through: prints NOT_CAUGHT and exits 0. */
PROBE_NORETURN void probe_not_caught(void);

/* The allocator did the safe thing, HOW: says so on stderr and exits PROBE_CAUGHT. */
PROBE_NORETURN void probe_caught(const char *how);

/* SIZE bytes that are no heap block (mapped apart, zero-filled), for copies. */
void *probe_source(size_t size);

/* Allocates SIZE bytes, or exits PROBE_ERROR if even that fails. */
void *probe_block(size_t size);

/* Whether SIZE bytes from BLOCK all read as zero (read through volatile: the
 * compiler may not assume what freed memory holds). */
bool probe_all_zero(const void *block, size_t size);

/* Frees and allocates a block of SIZE bytes COUNT times: gives the allocator
 * occasions to notice a corrupted heap at later allocations. */
void probe_churn(size_t size, long count);

/* The program's main: lists the probes of TABLE or runs the one named. */
int probe_main(int argc, char **argv, const probe *table, size_t count);

#ifdef __cplusplus
}
#endif

#define PROBE_COUNT(table) (sizeof(table) / sizeof((table)[0]))

#endif

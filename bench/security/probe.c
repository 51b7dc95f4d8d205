/* What every security probe program shares: the opaque allocator calls, the
 * verdict lines, the command line, and the control probe that commits no
 * bug and names the allocator that serves malloc (so the runner can tell a
 * mode that failed to preload its allocator from one that catches nothing). */
#include "probe.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void *(*volatile probe_malloc)(size_t) = malloc;
void *(*volatile probe_calloc)(size_t, size_t) = calloc;
void *(*volatile probe_realloc)(void *, size_t) = realloc;
void (*volatile probe_free)(void *) = free;
void *(*volatile probe_memcpy)(void *, const void *, size_t) = memcpy;
void *(*volatile probe_memset)(void *, int, size_t) = memset;

void probe_not_caught(void) {
    puts("NOT_CAUGHT");
    fflush(stdout);
    exit(0);
}

void probe_caught(const char *how) {
    fprintf(stderr, "caught: %s\n", how);
    exit(PROBE_CAUGHT);
}

void *probe_source(size_t size) {
    void *source = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (source == MAP_FAILED) {
        perror("probe: mmap of the copy's source");
        exit(PROBE_ERROR);
    }
    return source;
}

void *probe_block(size_t size) {
    void *block = probe_malloc(size);
    if (block == NULL) {
        fprintf(stderr, "probe: malloc(%zu) returned NULL\n", size);
        exit(PROBE_ERROR);
    }
    return block;
}

bool probe_all_zero(const void *block, size_t size) {
    const volatile unsigned char *bytes = block;
    for (size_t i = 0; i < size; i++)
        if (bytes[i] != 0) return false;
    return true;
}

void probe_churn(size_t size, long count) {
    for (long i = 0; i < count; i++) probe_free(probe_malloc(size));
}

/* The allocator whose malloc this process calls, by a symbol only it defines. */
static const char *serving_allocator(void) {
    static const struct {
        const char *symbol, *allocator;
    } marks[] = {{"hh_owns", "hugeheap"},
                 {"mi_malloc", "mimalloc"},
                 {"mallctl", "jemalloc"},
                 {"tc_malloc", "tcmalloc"}};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (dlsym(RTLD_DEFAULT, marks[i].symbol) != NULL) return marks[i].allocator;
    return "glibc";
}

static void control(size_t size) {
    char *block = probe_block(size);
    probe_memset(block, 'A', size);
    probe_free(block);
    printf("allocator: %s\n", serving_allocator());
    probe_not_caught();
}

static const probe control_probe = {"control", "control", true, control};

static int usage(const char *program) {
    fprintf(stderr, "usage: %s --list | NAME [SIZE]   (SIZE in bytes, for a sized probe)\n",
            program);
    return PROBE_ERROR;
}

int probe_main(int argc, char **argv, const probe *table, size_t count) {
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < count; i++)
            printf("%s\t%s\t%s\n", table[i].name, table[i].bug_class,
                   table[i].sized ? "sized" : "unsized");
        return 0;
    }
    if (argc < 2 || argc > 3) return usage(argv[0]);
    const probe *chosen = strcmp(argv[1], control_probe.name) == 0 ? &control_probe : NULL;
    for (size_t i = 0; chosen == NULL && i < count; i++)
        if (strcmp(argv[1], table[i].name) == 0) chosen = &table[i];
    if (chosen == NULL) {
        fprintf(stderr, "%s: no probe named '%s' (--list names them)\n", argv[0], argv[1]);
        return PROBE_ERROR;
    }
    /* stdout unbuffered: its buffer would otherwise be malloc'd at the first
     * line printed, right after the bug, and an allocator that checks there
     * would catch the bug by luck of stdio's timing, not by the probe. */
    setvbuf(stdout, NULL, _IONBF, 0);
    size_t size = 0;
    if (chosen->sized != (argc == 3)) {
        fprintf(stderr, "%s: probe %s takes %s\n", argv[0], chosen->name,
                chosen->sized ? "an allocation size" : "no size");
        return PROBE_ERROR;
    }
    if (argc == 3) {
        char *end;
        size = strtoull(argv[2], &end, 10);
        if (*end != '\0' || end == argv[2] || size == 0 || size > ((size_t)1 << 32)) {
            fprintf(stderr, "%s: SIZE must be a number of bytes from 1 to 4 GiB, not '%s'\n",
                    argv[0], argv[2]);
            return PROBE_ERROR;
        }
    }
    chosen->run(size);
    fprintf(stderr, "%s: probe %s returned without a verdict\n", argv[0], chosen->name);
    return PROBE_ERROR;
}

/* The stops: one line on stderr, then abort().  A misused free, a corrupted
 * free list or a broken invariant ends the program here, with the pointer
 * named; nothing here may allocate (the heap may be what is broken).  Every
 * layer stops through these, so they sit at the bottom, with the plain
 * warning line (_hh_warn) they are written with. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void _hh_warn(const char *msg) {
    ssize_t ignored = write(STDERR_FILENO, msg, strlen(msg));
    (void)ignored;
}

void _hh_assert_failed(const char *cond, const char *file, int line) {
    char text[32];
    size_t n = sizeof text;
    text[--n] = '\0';
    do {
        text[--n] = (char)('0' + line % 10);
        line /= 10;
    } while (line > 0 && n > 0);
    _hh_warn("hugeheap: internal assertion failed: ");
    _hh_warn(cond);
    _hh_warn(" (");
    _hh_warn(file);
    _hh_warn(":");
    _hh_warn(text + n);
    _hh_warn(")\n");
    abort();
}

void _hh_fatal(const char *msg, const void *ptr) {
    char line[160];
    size_t n = 0;
    const char *prefix = "hugeheap: ";
    for (const char *s = prefix; *s && n < sizeof line - 24; s++) line[n++] = *s;
    for (const char *s = msg; *s && n < sizeof line - 24; s++) line[n++] = *s;
    line[n++] = ' ';
    line[n++] = '0';
    line[n++] = 'x';
    uintptr_t a = (uintptr_t)ptr;
    for (int shift = 60; shift >= 0; shift -= 4) line[n++] = "0123456789abcdef"[(a >> shift) & 15];
    line[n++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, n);
    (void)ignored;
    abort();
}

void _hh_free_list_corrupted(const void *where) {
    _hh_fatal("corrupted free list (a block was written after free?) at", where);
}

void *_hh_free_list_corrupted_at(const void *where) { _hh_free_list_corrupted(where); }

void _hh_free_size_mismatch(const void *ptr) {
    _hh_fatal("free_sized() or sized delete: the size given is larger than the block "
              "(not the size it was allocated with) at", ptr);
}

/* A number from a line of a /proc file, for the tests and the probe. */
#ifndef HUGEHEAP_TEST_PROC_VALUE_H
#define HUGEHEAP_TEST_PROC_VALUE_H

#include <stdio.h>

/* The number `format` (a sscanf format of one %ld) reads from a line of
 * the file at `path`; -1 where none does. */
static inline long proc_value(const char *path, const char *format) {
    FILE *f = fopen(path, "r");
    char line[256];
    long value = -1;
    if (f == NULL) return -1;
    while (fgets(line, sizeof line, f)) sscanf(line, format, &value);
    fclose(f);
    return value;
}

#endif

/* What the workloads' command lines share (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cli_whole_number(const char *text, unsigned long long min, unsigned long long max,
                      unsigned long long *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno || v < min || v > max) return false;
    *out = v;
    return true;
}

int cli_bad_value(const char *program, const char *option, const char *value,
                  const char *expected) {
    fprintf(stderr, "%s: %s: '%s' is not %s\n", program, option, value, expected);
    return 2;
}

char *cli_read_file(const char *path, size_t *len, char *error, size_t error_size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(error, error_size, "%s: cannot read it (%s)", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap);
    while (text != NULL) {
        n += fread(text + n, 1, cap - n - 1, f);
        if (n + 1 < cap) break;
        char *bigger = realloc(text, cap * 2);
        if (bigger == NULL) free(text);
        text = bigger;
        cap *= 2;
    }
    /* A directory opens but does not read (EISDIR): keep that reason. */
    int failure = text == NULL ? ENOMEM : ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    if (failure) {
        free(text);
        snprintf(error, error_size, "%s: cannot read it (%s)", path, strerror(failure));
        return NULL;
    }
    text[n] = '\0';
    *len = n;
    return text;
}

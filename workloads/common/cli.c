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

/* "A, B or C" from a NULL-terminated list. */
static void list_choices(const char *const *choices, char *out, size_t size) {
    size_t n = 0, used = 0;
    while (choices[n]) n++;
    out[0] = '\0';
    for (size_t i = 0; i < n && used < size; i++) {
        const char *before = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        used += (size_t)snprintf(out + used, size - used, "%s%s", before, choices[i]);
    }
}

/* Reads one option's value into its target; 0 or the exit code. */
static int read_value(const cli_command *command, const cli_option *o, const char *value) {
    unsigned long long number;
    switch (o->kind) {
    case CLI_TEXT:
        *(const char **)o->target = value;
        return 0;
    case CLI_NUMBER:
        if (!cli_whole_number(value, o->min, o->max, &number)) break;
        *(unsigned long long *)o->target = number;
        return 0;
    case CLI_CHOICE:
        for (int i = 0; o->choices[i]; i++) {
            if (strcmp(value, o->choices[i]) == 0) {
                *(int *)o->target = i;
                return 0;
            }
        }
        if (o->expected == NULL) {
            char expected[256];
            list_choices(o->choices, expected, sizeof expected);
            return cli_bad_value(command->program, o->name, value, expected);
        }
        break;
    case CLI_CUSTOM:
        if (o->read(value, o->target)) return 0;
        break;
    case CLI_FLAG:
        break;
    }
    return cli_bad_value(command->program, o->name, value, o->expected);
}

int cli_parse_options(const cli_command *command, const cli_option *table, int argc,
                      char **argv, int first) {
    for (int i = first; i < argc; i++) {
        const cli_option *o = table;
        while (o->name && strcmp(o->name, argv[i]) != 0) o++;
        if (o->name == NULL) {
            fprintf(stderr, "%s %s: unknown option '%s'\n", command->program, command->name,
                    argv[i]);
            return command->usage();
        }
        if (o->kind == CLI_FLAG) {
            *(bool *)o->target = true;
            continue;
        }
        if (i + 1 == argc) {
            fprintf(stderr, "%s: %s needs a value\n", command->program, o->name);
            return 2;
        }
        int mistake = read_value(command, o, argv[++i]);
        if (mistake) return mistake;
    }
    return 0;
}

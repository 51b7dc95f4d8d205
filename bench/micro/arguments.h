/* Arguments from a file: `hh-micro-NAME @FILE` takes the words of FILE as its
 * arguments, as compilers read response files. A campaign suite names a
 * microbenchmark's parameters as an instance this way (the .args files in suites/micro),
 * and the parameters are recorded with the campaign like any instance. */
#ifndef HH_MICRO_ARGUMENTS_H
#define HH_MICRO_ARGUMENTS_H

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

enum { MICRO_FILE_MAX = 4096, MICRO_WORDS_MAX = 16 };

/* Replaces argc/argv by the words of FILE when the only argument is @FILE;
 * exits with status 2 and one line on stderr if FILE cannot be used. */
static void micro_arguments(int *argc, char ***argv) {
    static char text[MICRO_FILE_MAX + 1];
    static char *words[MICRO_WORDS_MAX + 2];
    if (*argc != 2 || (*argv)[1][0] != '@') return;
    const char *path = (*argv)[1] + 1;
    FILE *file = fopen(path, "r");
    if (file == NULL) {
        fprintf(stderr, "%s: cannot read the argument file %s\n", (*argv)[0], path);
        exit(2);
    }
    size_t length = fread(text, 1, MICRO_FILE_MAX + 1, file);
    fclose(file);
    if (length > MICRO_FILE_MAX) {
        fprintf(stderr, "%s: the argument file %s is longer than %d bytes\n", (*argv)[0], path,
                MICRO_FILE_MAX);
        exit(2);
    }
    text[length] = '\0';
    int count = 0;
    words[count++] = (*argv)[0];
    for (char *p = text; *p != '\0';) {
        while (isspace((unsigned char)*p)) p++;
        if (*p == '#') { /* a comment, to the end of its line */
            while (*p != '\0' && *p != '\n') p++;
            continue;
        }
        if (*p == '\0') break;
        if (count > MICRO_WORDS_MAX) {
            fprintf(stderr, "%s: more than %d arguments in %s\n", (*argv)[0], MICRO_WORDS_MAX,
                    path);
            exit(2);
        }
        words[count++] = p;
        while (*p != '\0' && !isspace((unsigned char)*p)) p++;
        if (*p != '\0') *p++ = '\0';
    }
    words[count] = NULL;
    *argc = count;
    *argv = words;
}

/* Argument INDEX, called NAME, as a whole number from MIN to MAX, or FALLBACK
 * when there are fewer arguments; exits with status 2 and one line on stderr
 * naming the argument when it is no such number. */
static inline long micro_number(int argc, char **argv, int index, const char *name, long fallback,
                                long min, long max) {
    if (index >= argc) return fallback;
    const char *text = argv[index];
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
        fprintf(stderr, "%s: %s must be a whole number from %ld to %ld, not '%s'\n", argv[0],
                name, min, max, text);
        exit(2);
    }
    return value;
}

#endif

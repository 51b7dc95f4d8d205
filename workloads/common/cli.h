/* What the workloads' command lines share: reading numbers and files, and
 * the one-line message for a bad option value. */
#ifndef WORKLOADS_CLI_H
#define WORKLOADS_CLI_H

#include <stdbool.h>
#include <stddef.h>

/* A decimal number from min to max (digits only, no sign). */
bool cli_whole_number(const char *text, unsigned long long min, unsigned long long max,
                      unsigned long long *out);
/* "PROGRAM: OPTION: 'VALUE' is not EXPECTED" on stderr; returns 2, the exit
 * code of a usage error. */
int cli_bad_value(const char *program, const char *option, const char *value,
                  const char *expected);
/* The whole file, with a NUL after its *len bytes; NULL with "PATH: cannot
 * read it (REASON)" in error. */
char *cli_read_file(const char *path, size_t *len, char *error, size_t error_size);

#endif

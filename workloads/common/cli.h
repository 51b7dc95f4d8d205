/* What the workloads' command lines share: reading numbers and files, the
 * options of a subcommand read against a table, and the one-line message for
 * a bad option value. */
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

/* What an option takes, and so what its target points to. */
typedef enum {
    CLI_FLAG,   /* nothing; bool, set true */
    CLI_TEXT,   /* any value; const char * */
    CLI_NUMBER, /* a whole number from min to max; unsigned long long */
    CLI_CHOICE, /* one of `choices`; int, the choice's index */
    CLI_CUSTOM, /* a value `read` accepts; whatever `read` writes */
} cli_kind;

typedef struct cli_option {
    const char *name; /* "--threads"; NULL ends a table */
    cli_kind kind;
    void *target;
    /* What a bad value is not ("a thread count (1-1024)"); for CLI_CHOICE,
     * NULL says "A, B or C" from the choices. */
    const char *expected;
    unsigned long long min, max;        /* CLI_NUMBER */
    const char *const *choices;         /* CLI_CHOICE: NULL-terminated */
    bool (*read)(const char *value, void *target); /* CLI_CUSTOM: false if bad */
} cli_option;

/* The subcommand whose options are read, for its messages. */
typedef struct cli_command {
    const char *program, *name; /* "pnexplore", "explore" */
    int (*usage)(void);         /* prints the synopsis; returns 2 */
} cli_command;

/* Reads argv[first] to argv[argc-1] as options of `table` into their
 * targets.  Returns 0, or the exit code after one message on stderr: an
 * unknown option ("PROGRAM COMMAND: unknown option 'X'", then the usage), an
 * option without its value ("PROGRAM: X needs a value"), a bad value (as
 * cli_bad_value says). */
int cli_parse_options(const cli_command *command, const cli_option *table, int argc,
                      char **argv, int first);

#endif

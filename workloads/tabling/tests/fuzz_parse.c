/* libFuzzer target: the program and query readers on arbitrary bytes.  They
 * must refuse or accept, never crash, leak or read out of bounds (built with
 * clang -fsanitize=fuzzer,address,undefined; run by check_hhtab.py fuzz). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char error[512];
    /* The first line, if short, is also tried as a query. */
    const uint8_t *newline = memchr(data, '\n', size < 64 ? size : 64);
    program *prog = program_parse("fuzz.pl", (const char *)data, size, error, sizeof error);
    if (prog == NULL) return 0;
    char goal[64];
    size_t n = newline ? (size_t)(newline - data) : 0;
    memcpy(goal, data, n);
    goal[n] = '\0';
    query q;
    query_parse(prog, n ? goal : "p(X)", &q, error, sizeof error);
    program_free(prog);
    return 0;
}

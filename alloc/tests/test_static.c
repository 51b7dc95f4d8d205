/* Linked with -static against libhugeheap.a: every allocation, libc's own
 * included, must come from hugeheap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hugeheap.h"

int main(void) {
    void *p = malloc(100);
    CHECK(hh_owns(p));
    free(p);
    char *dup = strdup("libc allocates this one"); /* malloc called from inside libc.a */
    CHECK(hh_owns(dup));
    free(dup);
    void *aligned = NULL;
    CHECK(posix_memalign(&aligned, 4096, 10000) == 0 && hh_owns(aligned));
    free(aligned);
    char *line = NULL;
    size_t cap = 0;
    FILE *f = fmemopen("a line of text\n", 15, "r");
    CHECK(f != NULL && getline(&line, &cap, f) > 0); /* getline grows its buffer with realloc */
    CHECK(line != NULL && hh_owns(line));
    free(line);
    fclose(f);
    void *big = calloc(1, 8 << 20);
    CHECK(hh_owns(big));
    free(big);
    return check_summary();
}

/* Generators of the tabling paper's path programs (hhtab gen). */
#ifndef HHTAB_GEN_H
#define HHTAB_GEN_H

#include <stdbool.h>
#include <stdio.h>

typedef enum { REC_LEFT, REC_RIGHT, REC_DOUBLE } gen_recursion;

/* The sizes a shape accepts; false if there is no such shape. */
bool gen_shape_range(const char *shape, unsigned long *min, unsigned long *max);
/* Writes the whole program: the table directive, path/2, the edges. */
void gen_path(FILE *out, const char *shape, unsigned long n, gen_recursion recursion);

#endif

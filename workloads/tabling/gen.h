/* Generators of benchmark programs (hhtab gen): the tabling paper's path
 * programs, and programs of each kind of the tabling benchmark set
 * SWI-Prolog's tabling is measured with, written here for hhtab. */
#ifndef HHTAB_GEN_H
#define HHTAB_GEN_H

#include <stdbool.h>
#include <stdio.h>

typedef enum { REC_LEFT, REC_RIGHT, REC_DOUBLE } gen_recursion;

/* The sizes a shape accepts; false if there is no such shape. */
bool gen_shape_range(const char *shape, unsigned long *min, unsigned long *max);
/* Writes the whole program: the table directive, path/2, the edges. */
void gen_path(FILE *out, const char *shape, unsigned long n, gen_recursion recursion);

/* The sizes a program family accepts; false if there is no such family. */
bool gen_family_range(const char *family, unsigned long *min, unsigned long *max);
/* Writes a family's program of size n; its first line names the query
 * ("% query: GOAL"). */
void gen_family(FILE *out, const char *family, unsigned long n);
/* The families, for messages: "fib, nrev, ..." */
const char *gen_family_names(void);

#endif

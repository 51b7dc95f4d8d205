/* Integer arithmetic of is/2 and the comparisons (arith.c). */
#ifndef HHTAB_ARITH_H
#define HHTAB_ARITH_H

#include <stdint.h>

#include "program.h"
#include "terms.h"

/* What an evaluation needs besides the expression: the program (names for
 * messages) and the thread's terms (its stack floor). */
typedef struct evaluation {
    const program *prog;
    const term_heap *th;
} evaluation;

/* The integer value of an arithmetic expression t of env, for literal l;
 * an unbound argument, an overflow of 61 bits, a division by zero, a
 * non-integer result or an unknown function stops the program with l's
 * place and the reason. */
int64_t eval(const evaluation *ev, const term *env, term t, const literal *l);

#endif

/* The tabling paper's path benchmarks as Prolog text: the edges of a binary
 * tree, pyramid, cycle or grid, and the tabled path/2 over them with left,
 * right or double recursion.  The definitions reproduce the paper's Table I
 * (BTree 17, Pyramid 1500, Cycle 2000, Grid 35); docs/HHTAB.md has them. */
#include "gen.h"

#include <stdio.h>
#include <string.h>

static const char *const RULES[] = {
    /* left */
    "path(X,Z) :- path(X,Y), edge(Y,Z).\npath(X,Z) :- edge(X,Z).\n",
    /* right */
    "path(X,Y) :- edge(X,Z), path(Z,Y).\npath(X,Y) :- edge(X,Y).\n",
    /* double */
    "path(X,Z) :- path(X,Y), path(Y,Z).\npath(X,Z) :- edge(X,Z).\n",
};

static const struct {
    const char *name;
    unsigned long min, max;
} SHAPES[] = {
    {"btree", 1, 24},
    {"pyramid", 2, 10000000},
    {"cycle", 1, 10000000},
    {"grid", 1, 3000},
};

bool gen_shape_range(const char *shape, unsigned long *min, unsigned long *max) {
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        if (strcmp(SHAPES[i].name, shape) == 0) {
            *min = SHAPES[i].min;
            *max = SHAPES[i].max;
            return true;
        }
    }
    return false;
}

static void edge(FILE *out, unsigned long a, unsigned long b) {
    fprintf(out, "edge(%lu,%lu).\n", a, b);
}

void gen_path(FILE *out, const char *shape, unsigned long n, gen_recursion recursion) {
    fprintf(out, "%% path/2 over %s %lu, %s recursion (hhtab gen)\n:- table path/2.\n%s", shape, n,
            recursion == REC_LEFT ? "left" : recursion == REC_RIGHT ? "right" : "double",
            RULES[recursion]);
    if (strcmp(shape, "btree") == 0) {
        /* A complete binary tree of n levels: nodes 1 .. 2^n - 1. */
        unsigned long inner = (1ul << (n - 1)) - 1;
        for (unsigned long i = 1; i <= inner; i++) {
            edge(out, i, 2 * i);
            edge(out, i, 2 * i + 1);
        }
    } else if (strcmp(shape, "pyramid") == 0) {
        /* Nodes 1 .. 2n: a diamond of two sides joined by rungs. */
        edge(out, 1, 2);
        edge(out, 1, 3);
        for (unsigned long i = 1; i + 2 <= n; i++) {
            unsigned long l = 2 * i, r = 2 * i + 1;
            edge(out, l, l + 2);
            edge(out, r, l + 2);
            edge(out, r, r + 2);
        }
        edge(out, 2 * n - 2, 2 * n);
        edge(out, 2 * n - 1, 2 * n);
    } else if (strcmp(shape, "cycle") == 0) {
        for (unsigned long i = 1; i < n; i++) edge(out, i, i + 1);
        edge(out, n, 1);
    } else {
        /* n x n nodes, row by row: an edge each way between neighbours. */
        for (unsigned long r = 0; r < n; r++) {
            for (unsigned long c = 0; c < n; c++) {
                unsigned long v = r * n + c + 1;
                if (c + 1 < n) {
                    edge(out, v, v + 1);
                    edge(out, v + 1, v);
                }
                if (r + 1 < n) {
                    edge(out, v, v + n);
                    edge(out, v + n, v);
                }
            }
        }
    }
}

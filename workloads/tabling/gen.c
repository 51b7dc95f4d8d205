/* Benchmark programs as Prolog text.
 *
 * The tabling paper's path benchmarks: the edges of a binary tree, pyramid,
 * cycle or grid, and the tabled path/2 over them with left, right or double
 * recursion.  The definitions reproduce the paper's Table I (BTree 17,
 * Pyramid 1500, Cycle 2000, Grid 35); docs/HHTAB.md has them.
 *
 * Programs of each kind of the tabling benchmark set SWI-Prolog's tabling
 * is measured with (Fibonacci, naive reverse, shuttle, ping-pong,
 * recognize, double-first recursion over a loop and a chain, joins,
 * mondial; the pyramid one is `path pyramid` with right recursion),
 * written here: each exercises what its namesake does (tabled arithmetic,
 * lists in subgoal and answer tries, left and mutual recursion with
 * comparisons, a left-recursive grammar over facts, double recursion, a
 * big join projected five ways, compound terms in heads and joins over
 * fact tables). */
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

/* ---- the tabling benchmark set's kinds ---- */

static void gen_fib(FILE *out, unsigned long n) {
    fprintf(out,
            "%% query: fib(%lu,F)\n"
            "%% Fibonacci numbers modulo 1000000007 (they stay small integers): every\n"
            "%% fib(K,_) is a subgoal of its own, so the tabled recursion is linear.\n"
            ":- table fib/2.\n"
            "fib(0, 0).\n"
            "fib(1, 1).\n"
            "fib(N, F) :-\n"
            "    N > 1,\n"
            "    A is N - 1, B is N - 2,\n"
            "    fib(A, FA), fib(B, FB),\n"
            "    F is (FA + FB) mod 1000000007.\n",
            n);
}

static void gen_nrev(FILE *out, unsigned long n) {
    fprintf(out,
            "%% query: reversed(%lu,R)\n"
            "%% Naive reverse of [1..N], tabled: every suffix of the list is a subgoal\n"
            "%% (a list in the subgoal trie) and its reverse an answer (a list in the\n"
            "%% answer trie); concat/3 is plain recursion.\n"
            ":- table nrev/2.\n"
            "nrev([], []).\n"
            "nrev([H|T], R) :- nrev(T, RT), concat(RT, [H], R).\n"
            "concat([], L, L).\n"
            "concat([H|T], L, [H|R]) :- concat(T, L, R).\n"
            "upto(I, N, []) :- I > N.\n"
            "upto(I, N, [I|T]) :- I =< N, J is I + 1, upto(J, N, T).\n"
            "reversed(N, R) :- upto(1, N, L), nrev(L, R).\n",
            n);
}

static void gen_shuttle(FILE *out, unsigned long n) {
    fprintf(out,
            "%% query: at(X)\n"
            "%% A shuttle leaves 0 and is sent to the other side, one step further\n"
            "%% each time, until it passes %lu: left recursion with arithmetic,\n"
            "%% comparisons and negative integers; 2N+1 answers.\n"
            ":- table at/1.\n"
            "at(0).\n"
            "at(Y) :- at(X), X >= 0, X < %lu, Y is -(X + 1).\n"
            "at(Y) :- at(X), X =< 0, X > -%lu, Y is 1 - X.\n",
            n, n, n);
}

static void gen_pingpong(FILE *out, unsigned long n) {
    fprintf(out,
            "%% query: ping(X)\n"
            "%% Two tables that count up through each other (one component).\n"
            ":- table ping/1, pong/1.\n"
            "ping(0).\n"
            "ping(X) :- pong(Y), Y < %lu, X is Y + 1.\n"
            "pong(0).\n"
            "pong(X) :- ping(Y), Y < %lu, X is Y + 1.\n",
            n, n);
}

static void gen_recognize(FILE *out, unsigned long n) {
    fprintf(out,
            "%% query: s(0,%lu)\n"
            "%% Recognising a string of %lu words (a b a b ...) with a left-recursive\n"
            "%% grammar: s(I,J) says words I..J-1 are a sentence.\n"
            ":- table s/2.\n"
            "s(I, J) :- w(I, a, J).\n"
            "s(I, K) :- s(I, J), w(J, b, K).\n"
            "s(I, K) :- s(I, J), w(J, a, K).\n",
            n, n);
    for (unsigned long i = 0; i < n; i++) fprintf(out, "w(%lu,%c,%lu).\n", i, i % 2 ? 'b' : 'a', i + 1);
}

static void gen_double(FILE *out, unsigned long n, bool loop) {
    fprintf(out,
            "%% query: reach(X,Y)\n"
            "%% Double recursion, the recursive clause first, over a %s of %lu links.\n"
            ":- table reach/2.\n"
            "reach(X, Y) :- reach(X, Z), reach(Z, Y).\n"
            "reach(X, Y) :- link(X, Y).\n",
            loop ? "loop" : "chain", n);
    for (unsigned long i = 0; i < n; i++) {
        fprintf(out, "link(%lu,%lu).\n", i, loop && i + 1 == n ? 0 : i + 1);
    }
}

static void gen_joins(FILE *out, unsigned long n) {
    fprintf(out,
            "%% query: column(X)\n"
            "%% A five-way join of %lu constants, tabled, and its five projections\n"
            "%% (each a call of the same subgoal, read from the complete table).\n"
            ":- table row/5.\n"
            "column(A) :- row(A, _, _, _, _).\n"
            "column(B) :- row(_, B, _, _, _).\n"
            "column(C) :- row(_, _, C, _, _).\n"
            "column(D) :- row(_, _, _, D, _).\n"
            "column(E) :- row(_, _, _, _, E).\n"
            "row(A, B, C, D, E) :- left(A, B, C, D, E), right(A, B, C, D, E).\n"
            "left(A, B, C, D, E) :- k(A), k(B), k(C), k(D), k(E).\n"
            "right(A, B, C, D, E) :- k(E), k(D), k(C), k(B), k(A).\n",
            n);
    for (unsigned long i = 0; i < n; i++) fprintf(out, "k(v%lu).\n", i);
}

/* Deterministic pseudo-random numbers for the mondial-like data. */
static unsigned long next_random(unsigned long *state) {
    *state = *state * 6364136223846793005ul + 1442695040888963407ul;
    return *state >> 33;
}

static void gen_mondial(FILE *out, unsigned long n) {
    fprintf(out,
            "%% query: answer(C,P,Pop,Area)\n"
            "%% A geography database of %lu countries: provinces and cities, joined by\n"
            "%% a tabled predicate; the question asks, through rules about region(P,C)\n"
            "%% terms, every province's city populations and area.\n"
            ":- table pc/4, answer/4.\n"
            "answer(C, P, Pop, Area) :-\n"
            "    isa(region(P, C), province),\n"
            "    att(region(P, C), population, Pop),\n"
            "    att(region(P, C), area, Area).\n"
            "isa(region(P, C), province) :- pc(_, _, C, P).\n"
            "att(region(P, C), population, Pop) :- pc(Pop, _, C, P).\n"
            "att(region(P, C), area, Area) :- pc(_, Area, C, P).\n"
            "pc(Pop, Area, C, P) :- province(P, C, Area, _), city(_, C, P, Pop).\n",
            n);
    /* Country c has 4 + c mod 5 provinces; its province p has 2 + (c + p) mod 9
     * cities.  The provinces first, then the cities. */
    unsigned long state = 42;
    for (unsigned long c = 1; c <= n; c++) {
        for (unsigned long p = 1; p <= 4 + c % 5; p++) {
            unsigned long area = 1000 + next_random(&state) % 100000;
            fprintf(out, "province('p%lu of c%lu',c%lu,%lu,%lu).\n", p, c, c, area,
                    10000 + next_random(&state) % 5000000);
        }
    }
    for (unsigned long c = 1; c <= n; c++) {
        for (unsigned long p = 1; p <= 4 + c % 5; p++) {
            for (unsigned long t = 1; t <= 2 + (c + p) % 9; t++) {
                fprintf(out, "city('t%lu in p%lu of c%lu',c%lu,'p%lu of c%lu',%lu).\n", t, p, c, c,
                        p, c, 1000 + next_random(&state) % 2000000);
            }
        }
    }
}

static const struct {
    const char *name;
    unsigned long min, max;
    void (*write)(FILE *out, unsigned long n);
} FAMILIES[] = {
    {"fib", 0, 200000, gen_fib},
    {"nrev", 0, 20000, gen_nrev},
    {"shuttle", 1, 10000000, gen_shuttle},
    {"pingpong", 1, 10000000, gen_pingpong},
    {"recognize", 1, 10000000, gen_recognize},
    {"loop", 1, 100000, NULL},
    {"chain", 1, 100000, NULL},
    {"joins", 1, 100, gen_joins},
    {"mondial", 1, 1000000, gen_mondial},
};
#define N_FAMILIES (sizeof FAMILIES / sizeof FAMILIES[0])

bool gen_family_range(const char *family, unsigned long *min, unsigned long *max) {
    for (size_t i = 0; i < N_FAMILIES; i++) {
        if (strcmp(FAMILIES[i].name, family) == 0) {
            *min = FAMILIES[i].min;
            *max = FAMILIES[i].max;
            return true;
        }
    }
    return false;
}

void gen_family(FILE *out, const char *family, unsigned long n) {
    if (strcmp(family, "loop") == 0 || strcmp(family, "chain") == 0) {
        gen_double(out, n, strcmp(family, "loop") == 0);
        return;
    }
    for (size_t i = 0; i < N_FAMILIES; i++) {
        if (strcmp(FAMILIES[i].name, family) == 0) FAMILIES[i].write(out, n);
    }
}

const char *gen_family_names(void) {
    return "fib, nrev, shuttle, pingpong, recognize, loop, chain, joins or mondial";
}

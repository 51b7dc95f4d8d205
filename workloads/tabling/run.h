/* Running queries the paper's way: every thread runs a query over one table
 * space (the same query, or each its own), K times, the tables abolished
 * between runs. */
#ifndef HHTAB_RUN_H
#define HHTAB_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "program.h"
#include "table.h"

typedef struct run_options {
    unsigned threads;
    table_design design;
    table_alloc alloc;
    unsigned repeat;
    const query *queries; /* thread i runs queries[i % nqueries] */
    unsigned nqueries;
    bool keep_solutions;  /* thread 0's solutions of the last run, as text */
} run_options;

typedef struct run_result {
    uint64_t answers;         /* solutions of thread 0's query */
    table_stats stats;        /* the tables as thread 0 sees them, last run */
    uint64_t *repeated;       /* per thread, last run */
    uint64_t *inserted;       /* per thread, last run */
    uint64_t wait_cycles;     /* FS, all threads, last run: see table_wait_complete */
    double *seconds;          /* per run: from start until the last thread's query ended */
    int64_t table_bytes;      /* table memory at the end of the last run, all threads */
    size_t pool_pages;        /* 64 KiB pages the pools held at the end of the last query */
    text solutions;           /* keep_solutions: one line each */
} run_result;

/* False with a message in error if the run could not be made (threads, memory). */
bool run_query(const program *prog, const run_options *o, run_result *r, char *error,
               size_t error_size);
void run_result_free(run_result *r);

#endif

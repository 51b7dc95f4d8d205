/* The explorer's interface: what to explore with (threads, store, where states
 * live, limits) and what a run found; explore.c says how. */
#ifndef PNEXPLORE_EXPLORE_H
#define PNEXPLORE_EXPLORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net.h"
#include "states.h"

typedef enum { STORE_SHARED, STORE_BUCKETS } store_kind;

typedef struct explore_options {
    unsigned threads;
    bool stop_at_deadlock;   /* --check deadlock */
    store_kind store;
    unsigned buckets;        /* for STORE_BUCKETS */
    alloc_kind alloc;
    uint64_t max_states;     /* 0: no limit */
    size_t memory_budget;    /* bytes the state table may grow to */
} explore_options;

typedef struct explore_result {
    uint64_t states, edges, deadlocks;
    double seconds;
    bool complete;           /* false: stopped early, `stopped` says why */
    char stopped[256];
    uint32_t max_tokens_in_place;    /* over every marking reached */
    uint64_t max_tokens_per_marking;
    double marking_bytes;    /* a state's marking record, on average */
    double bytes_per_state;  /* state records and table slots, per state */
    uint32_t *witness;       /* transitions from the initial marking to a deadlock */
    size_t witness_length;
    bool found_deadlock;
} explore_result;

typedef enum {
    EXPLORE_STARTED,   /* `result` holds what was found, complete or stopped early */
    EXPLORE_REFUSED,   /* the options do not fit the net (buckets that start above
                          --memory), or the net cannot be explored (a place that
                          starts with more tokens than a record holds) */
    EXPLORE_NO_MEMORY, /* the state tables, the net's arrays or a thread could not be had */
} explore_outcome;

/* Zeroes `result` first.  Unless it returns EXPLORE_STARTED nothing was
 * explored: the counts are zero and `result->stopped` says why and what to
 * change. */
explore_outcome explore(const net *n, const explore_options *options, explore_result *result);

#endif

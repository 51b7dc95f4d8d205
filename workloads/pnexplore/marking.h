/* A thread's current marking: its tokens, the transitions it enables kept
 * up to date as places change (a change re-tests only the transitions that
 * consume from the place), and the records of its successors. */
#ifndef PNEXPLORE_MARKING_H
#define PNEXPLORE_MARKING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "encoding.h"
#include "firing.h"

typedef struct marking {
    const firing *f;
    const encoding *e;
    uint32_t *tokens;
    uint32_t *missing;        /* per transition: its inputs short of tokens */
    uint32_t *enabled;        /* the transitions with none missing */
    uint32_t *enabled_at;     /* where each enabled transition is in `enabled` */
    uint32_t enabled_count;
    uint32_t *differ;         /* the places whose count is not the initial one, in order, */
    bool differ_listed;       /* when listed (else `dense` is valid, and lists them) */
    uint32_t differ_count;
    uint32_t *next_differ, *next_counts; /* a record being read */
    uint32_t *after;          /* a successor's counts at its transition's effects */
    uint32_t over1, over255;  /* places holding more than 1, more than 255 tokens */
    uint32_t nonflip;         /* differing places where either count is above 1 */
    uint64_t total;           /* tokens in all places */
    uint8_t *dense;           /* this marking's dense record, when `dense_valid` */
    encoding_kind dense_kind;
    bool dense_valid;
    uint32_t max_in_place;    /* over every marking this thread met */
    uint64_t max_total;
} marking;

/* At the initial marking; false if memory runs out. */
bool marking_init(marking *m, const firing *f, const encoding *e);
void marking_free(marking *m);
/* Moves to the marking of `record` (changing only the places that differ). */
void marking_set(marking *m, const uint8_t *record);
/* The bytes a successor's record is written in (marking_successor's `room`). */
size_t marking_room(const encoding *e);
/* The record of the marking after firing `t` (enabled), or of this marking
 * itself for t = UINT32_MAX, written in `room`: its length, and where in
 * `room` it starts (*record).  0 if a place would hold more than
 * ENCODING_COUNT_MAX tokens, the place in *overflow. */
size_t marking_successor(marking *m, uint32_t t, uint8_t *room, const uint8_t **record,
                         uint32_t *overflow);

#endif

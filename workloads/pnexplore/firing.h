/* The net compiled for firing: per transition its inputs (what enabledness
 * tests) and its effects (what firing changes, place by place), per place the
 * transitions that consume from it (what a change of the place re-tests). */
#ifndef PNEXPLORE_FIRING_H
#define PNEXPLORE_FIRING_H

#include <stdbool.h>
#include <stdint.h>

#include "net.h"

typedef struct weighted {
    uint32_t index;  /* a place (inputs) or a transition (consumers) */
    uint32_t weight;
} weighted;

typedef struct effect {
    uint32_t place;
    int64_t delta;   /* never 0: a place taken and given back alike is no effect */
} effect;

typedef struct firing {
    uint32_t places, transitions;
    const uint32_t *initial;        /* the net's initial marking */
    uint32_t *input_start;          /* transition t's inputs: inputs[input_start[t] ..] */
    weighted *inputs;
    uint32_t *effect_start;         /* transition t's effects, by place */
    effect *effects;
    uint32_t *consumer_start;       /* place p's consumers: consumers[consumer_start[p] ..] */
    weighted *consumers;
} firing;

/* False if memory runs out (f is then empty). */
bool firing_build(firing *f, const net *n);
void firing_free(firing *f);

#endif

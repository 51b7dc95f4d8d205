/* The net compiled for firing (see firing.h). */
#include "firing.h"

#include <stdlib.h>
#include <string.h>

static int by_place(const void *a, const void *b) {
    const effect *x = a, *y = b;
    return (x->place > y->place) - (x->place < y->place);
}

void firing_free(firing *f) {
    free(f->input_start);
    free(f->inputs);
    free(f->effect_start);
    free(f->effects);
    free(f->consumer_start);
    free(f->consumers);
    memset(f, 0, sizeof *f);
}

bool firing_build(firing *f, const net *n) {
    memset(f, 0, sizeof *f);
    f->places = n->n_places;
    f->transitions = n->n_transitions;
    f->initial = n->initial;
    size_t arcs_in = 0, arcs_all = 0;
    for (uint32_t t = 0; t < n->n_transitions; t++) {
        arcs_in += n->transitions[t].n_pre;
        arcs_all += n->transitions[t].n_pre + n->transitions[t].n_post;
    }
    f->input_start = calloc((size_t)n->n_transitions + 1, sizeof *f->input_start);
    f->inputs = malloc((arcs_in + 1) * sizeof *f->inputs);
    f->effect_start = calloc((size_t)n->n_transitions + 1, sizeof *f->effect_start);
    f->effects = malloc((arcs_all + 1) * sizeof *f->effects);
    f->consumer_start = calloc((size_t)n->n_places + 1, sizeof *f->consumer_start);
    f->consumers = malloc((arcs_in + 1) * sizeof *f->consumers);
    if (!f->input_start || !f->inputs || !f->effect_start || !f->effects || !f->consumer_start ||
        !f->consumers) {
        firing_free(f);
        return false;
    }
    size_t in = 0, out = 0;
    for (uint32_t t = 0; t < n->n_transitions; t++) {
        const transition *tr = &n->transitions[t];
        f->input_start[t] = (uint32_t)in;
        f->effect_start[t] = (uint32_t)out;
        size_t first = out;
        for (uint32_t k = 0; k < tr->n_pre; k++) {
            f->inputs[in++] = (weighted){tr->pre[k].place, tr->pre[k].weight};
            f->effects[out++] = (effect){tr->pre[k].place, -(int64_t)tr->pre[k].weight};
            f->consumer_start[tr->pre[k].place]++;
        }
        for (uint32_t k = 0; k < tr->n_post; k++) {
            f->effects[out++] = (effect){tr->post[k].place, (int64_t)tr->post[k].weight};
        }
        /* By place, a place's input and output merged, no-ops dropped. */
        qsort(f->effects + first, out - first, sizeof *f->effects, by_place);
        size_t kept = first;
        for (size_t k = first; k < out; k++) {
            if (kept > first && f->effects[kept - 1].place == f->effects[k].place) {
                f->effects[kept - 1].delta += f->effects[k].delta;
            } else {
                f->effects[kept++] = f->effects[k];
            }
            if (f->effects[kept - 1].delta == 0) kept--;
        }
        out = kept;
    }
    f->input_start[n->n_transitions] = (uint32_t)in;
    f->effect_start[n->n_transitions] = (uint32_t)out;
    /* Counts per place into starts, then fill back to front. */
    uint32_t sum = 0;
    for (uint32_t p = 0; p <= n->n_places; p++) {
        uint32_t count = p < n->n_places ? f->consumer_start[p] : 0;
        f->consumer_start[p] = sum + count;
        sum += count;
    }
    for (uint32_t t = n->n_transitions; t-- > 0;) {
        for (uint32_t k = f->input_start[t]; k < f->input_start[t + 1]; k++) {
            uint32_t p = f->inputs[k].index;
            f->consumers[--f->consumer_start[p]] = (weighted){t, f->inputs[k].weight};
        }
    }
    return true;
}

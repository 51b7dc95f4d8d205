/* A place/transition net: places with initial markings, transitions with
 * weighted input (pre) and output (post) arcs.  Built from PNML, LoLA or a
 * generator; names are kept for messages and witnesses. */
#ifndef PNEXPLORE_NET_H
#define PNEXPLORE_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct arc {
    uint32_t place;
    uint32_t weight;
} arc;

typedef struct transition {
    char *name;
    arc *pre, *post;
    uint32_t n_pre, n_post, cap_pre, cap_post;
} transition;

/* A hash table from 64-bit keys to 32-bit values, by open addressing: what
 * makes building a net linear in its size (looking names up one by one made
 * it quadratic). */
typedef struct net_index {
    uint64_t *keys;
    uint32_t *values; /* 0: an empty slot */
    uint64_t mask, count;
} net_index;

typedef struct net {
    char **place_names;
    uint32_t *initial;
    uint32_t n_places, cap_places;
    transition *transitions;
    uint32_t n_transitions, cap_transitions;
    net_index names; /* every name (places and transitions share one namespace) */
    net_index arcs;  /* (transition, place, direction): the arc's place in its list */
    char error[512]; /* the first error: what and where */
} net;

net *net_new(void);
void net_free(net *n);
/* Each returns false (and fills n->error) on a mistake the message names. */
bool net_add_place(net *n, const char *name, long long initial);
bool net_add_transition(net *n, const char *name);
/* An arc between a place and a transition, either way round, by name. */
bool net_add_arc(net *n, const char *source, const char *target, long long weight);
long net_find_place(const net *n, const char *name);
long net_find_transition(const net *n, const char *name);
void net_error(net *n, const char *format, ...) __attribute__((format(printf, 2, 3)));

#endif

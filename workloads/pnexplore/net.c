/* The net in memory, and the checks every input format shares. */
#include "net.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *grow(void *array, uint32_t *cap, size_t element) {
    uint32_t new_cap = *cap ? *cap * 2 : 16;
    void *grown = realloc(array, new_cap * element);
    if (grown == NULL) {
        fprintf(stderr, "pnexplore: out of memory while reading the net\n");
        exit(1);
    }
    *cap = new_cap;
    return grown;
}

static char *copy(const char *s) {
    size_t len = strlen(s) + 1;
    char *c = malloc(len);
    if (c == NULL) {
        fprintf(stderr, "pnexplore: out of memory while reading the net\n");
        exit(1);
    }
    return memcpy(c, s, len);
}

/* ------------------------------------------------------------ the index */

static uint64_t mix(uint64_t x) { /* spreads any key over the table */
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    return x ^ (x >> 33);
}

static uint64_t hash_name(const char *name) { /* FNV-1a */
    uint64_t h = 0xCBF29CE484222325ull;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        h = (h ^ *c) * 0x100000001B3ull;
    }
    return h;
}

/* Tells whether the value in a slot whose key matched is the item sought
 * (names compare their text: two names may share a hash). */
typedef bool same_item(const net *n, uint32_t value, const void *item);

/* The slot holding `key` (and the item, if `same` is given), or the empty
 * slot where it would go. */
static uint64_t probe(const net *n, const net_index *ix, uint64_t key, same_item *same,
                      const void *item) {
    uint64_t i = mix(key) & ix->mask;
    while (ix->values[i] != 0) {
        if (ix->keys[i] == key && (same == NULL || same(n, ix->values[i], item))) return i;
        i = (i + 1) & ix->mask;
    }
    return i;
}

/* Room for one more entry: the table doubles at three quarters full. */
static void reserve(net_index *ix) {
    uint64_t slots = ix->values ? ix->mask + 1 : 0;
    if ((ix->count + 1) * 4 <= slots * 3) return;
    uint64_t bigger = slots ? slots * 2 : 64;
    net_index grown = {calloc(bigger, sizeof *grown.keys), calloc(bigger, sizeof *grown.values),
                       bigger - 1, ix->count};
    if (grown.keys == NULL || grown.values == NULL) {
        fprintf(stderr, "pnexplore: out of memory while reading the net\n");
        exit(1);
    }
    for (uint64_t i = 0; i < slots; i++) {
        if (ix->values[i] == 0) continue;
        uint64_t j = mix(ix->keys[i]) & grown.mask;
        while (grown.values[j] != 0) j = (j + 1) & grown.mask;
        grown.keys[j] = ix->keys[i];
        grown.values[j] = ix->values[i];
    }
    free(ix->keys);
    free(ix->values);
    *ix = grown;
}

static void put(net_index *ix, uint64_t slot, uint64_t key, uint32_t value) {
    ix->keys[slot] = key;
    ix->values[slot] = value;
    ix->count++;
}

static void index_free(net_index *ix) {
    free(ix->keys);
    free(ix->values);
}

/* -------------------------------------------------------------- the net */

net *net_new(void) {
    net *n = calloc(1, sizeof *n);
    if (n == NULL) {
        fprintf(stderr, "pnexplore: out of memory\n");
        exit(1);
    }
    return n;
}

void net_free(net *n) {
    if (n == NULL) return;
    for (uint32_t i = 0; i < n->n_places; i++) free(n->place_names[i]);
    for (uint32_t i = 0; i < n->n_transitions; i++) {
        free(n->transitions[i].name);
        free(n->transitions[i].pre);
        free(n->transitions[i].post);
    }
    free(n->place_names);
    free(n->initial);
    free(n->transitions);
    index_free(&n->names);
    index_free(&n->arcs);
    free(n);
}

void net_error(net *n, const char *format, ...) {
    if (n->error[0]) return; /* the first error is the one to fix */
    va_list args;
    va_start(args, format);
    vsnprintf(n->error, sizeof n->error, format, args);
    va_end(args);
}

/* ------------------------------------------------------------ the names */

/* A name's value in the index: place p is 2p + 1, transition t is 2t + 2. */
static const char *named_by(const net *n, uint32_t value) {
    uint32_t i = (value - 1) / 2;
    return value % 2 ? n->place_names[i] : n->transitions[i].name;
}

static bool same_name(const net *n, uint32_t value, const void *name) {
    return strcmp(named_by(n, value), name) == 0;
}

/* The name's value in the index, 0 if no node has it. */
static uint32_t find_name(const net *n, const char *name) {
    if (n->names.values == NULL) return 0;
    return n->names.values[probe(n, &n->names, hash_name(name), same_name, name)];
}

long net_find_place(const net *n, const char *name) {
    uint32_t value = find_name(n, name);
    return value % 2 ? (long)(value - 1) / 2 : -1;
}

long net_find_transition(const net *n, const char *name) {
    uint32_t value = find_name(n, name);
    return value != 0 && value % 2 == 0 ? (long)(value - 2) / 2 : -1;
}

/* Enters a new node's name, or says it is taken. */
static bool claim_name(net *n, const char *name, uint32_t value) {
    reserve(&n->names);
    uint64_t key = hash_name(name);
    uint64_t slot = probe(n, &n->names, key, same_name, name);
    if (n->names.values[slot] != 0) {
        net_error(n, "duplicate id '%s'", name);
        return false;
    }
    put(&n->names, slot, key, value);
    return true;
}

bool net_add_place(net *n, const char *name, long long initial) {
    if (initial < 0 || initial > UINT32_MAX) {
        net_error(n, "place '%s': initial marking %lld is not a token count", name, initial);
        return false;
    }
    if (n->n_places >= INT32_MAX) { /* its index value would not fit */
        net_error(n, "place '%s': more than %d places", name, INT32_MAX);
        return false;
    }
    if (!claim_name(n, name, 2 * n->n_places + 1)) return false;
    if (n->n_places == n->cap_places) {
        uint32_t cap = n->cap_places;
        n->place_names = grow(n->place_names, &cap, sizeof *n->place_names);
        n->initial = grow(n->initial, &n->cap_places, sizeof *n->initial);
    }
    n->place_names[n->n_places] = copy(name);
    n->initial[n->n_places++] = (uint32_t)initial;
    return true;
}

bool net_add_transition(net *n, const char *name) {
    if (n->n_transitions >= INT32_MAX) { /* its index value would not fit */
        net_error(n, "transition '%s': more than %d transitions", name, INT32_MAX);
        return false;
    }
    if (!claim_name(n, name, 2 * n->n_transitions + 2)) return false;
    if (n->n_transitions == n->cap_transitions) {
        n->transitions = grow(n->transitions, &n->cap_transitions, sizeof *n->transitions);
    }
    transition *t = &n->transitions[n->n_transitions++];
    memset(t, 0, sizeof *t);
    t->name = copy(name);
    return true;
}

/* Adds an arc of transition t (to it, or from it if `post`); two arcs the
 * same way between the same nodes add up. */
static bool add(net *n, uint32_t t, uint32_t place, bool post, uint32_t weight) {
    transition *tr = &n->transitions[t];
    arc **arcs = post ? &tr->post : &tr->pre;
    uint32_t *count = post ? &tr->n_post : &tr->n_pre, *cap = post ? &tr->cap_post : &tr->cap_pre;
    uint64_t key = (uint64_t)t << 33 | (uint64_t)place << 1 | post;
    reserve(&n->arcs);
    uint64_t slot = probe(n, &n->arcs, key, NULL, NULL);
    if (n->arcs.values[slot] != 0) {
        arc *same = &(*arcs)[n->arcs.values[slot] - 1];
        if ((uint64_t)same->weight + weight > UINT32_MAX) return false;
        same->weight += weight;
        return true;
    }
    if (*count == *cap) *arcs = grow(*arcs, cap, sizeof **arcs);
    (*arcs)[(*count)++] = (arc){place, weight};
    put(&n->arcs, slot, key, *count);
    return true;
}

bool net_add_arc(net *n, const char *source, const char *target, long long weight) {
    if (weight <= 0 || weight > UINT32_MAX) {
        net_error(n, "arc %s -> %s: weight %lld is not a positive token count", source, target,
                  weight);
        return false;
    }
    uint32_t from = find_name(n, source), to = find_name(n, target);
    if (from == 0 || to == 0) {
        net_error(n, "arc %s -> %s: unknown %s '%s'", source, target,
                  from == 0 ? "source" : "target", from == 0 ? source : target);
        return false;
    }
    if (from % 2 == to % 2) {
        net_error(n, "arc %s -> %s: an arc joins a place and a transition", source, target);
        return false;
    }
    bool post = from % 2 == 0; /* from a transition to a place */
    uint32_t t = ((post ? from : to) - 2) / 2, p = ((post ? to : from) - 1) / 2;
    if (!add(n, t, p, post, (uint32_t)weight)) {
        net_error(n, "arc %s -> %s: its weights add up to more than %u tokens", source, target,
                  UINT32_MAX);
        return false;
    }
    return true;
}

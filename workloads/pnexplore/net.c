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
    free(n);
}

void net_error(net *n, const char *format, ...) {
    if (n->error[0]) return; /* the first error is the one to fix */
    va_list args;
    va_start(args, format);
    vsnprintf(n->error, sizeof n->error, format, args);
    va_end(args);
}

long net_find_place(const net *n, const char *name) {
    for (uint32_t i = 0; i < n->n_places; i++) {
        if (strcmp(n->place_names[i], name) == 0) return i;
    }
    return -1;
}

long net_find_transition(const net *n, const char *name) {
    for (uint32_t i = 0; i < n->n_transitions; i++) {
        if (strcmp(n->transitions[i].name, name) == 0) return i;
    }
    return -1;
}

bool net_add_place(net *n, const char *name, long long initial) {
    if (net_find_place(n, name) >= 0 || net_find_transition(n, name) >= 0) {
        net_error(n, "duplicate id '%s'", name);
        return false;
    }
    if (initial < 0 || initial > UINT32_MAX) {
        net_error(n, "place '%s': initial marking %lld is not a token count", name, initial);
        return false;
    }
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
    if (net_find_place(n, name) >= 0 || net_find_transition(n, name) >= 0) {
        net_error(n, "duplicate id '%s'", name);
        return false;
    }
    if (n->n_transitions == n->cap_transitions) {
        n->transitions = grow(n->transitions, &n->cap_transitions, sizeof *n->transitions);
    }
    transition *t = &n->transitions[n->n_transitions++];
    memset(t, 0, sizeof *t);
    t->name = copy(name);
    return true;
}

static void add(arc **arcs, uint32_t *count, uint32_t *cap, uint32_t place, uint32_t weight) {
    for (uint32_t i = 0; i < *count; i++) {
        if ((*arcs)[i].place == place) { /* two arcs the same way add up */
            (*arcs)[i].weight += weight;
            return;
        }
    }
    if (*count == *cap) *arcs = grow(*arcs, cap, sizeof **arcs);
    (*arcs)[(*count)++] = (arc){place, weight};
}

bool net_add_arc(net *n, const char *source, const char *target, long long weight) {
    if (weight <= 0 || weight > UINT32_MAX) {
        net_error(n, "arc %s -> %s: weight %lld is not a positive token count", source, target,
                  weight);
        return false;
    }
    long p = net_find_place(n, source), t = net_find_transition(n, target);
    if (p >= 0 && t >= 0) {
        transition *tr = &n->transitions[t];
        add(&tr->pre, &tr->n_pre, &tr->cap_pre, (uint32_t)p, (uint32_t)weight);
        return true;
    }
    t = net_find_transition(n, source);
    p = net_find_place(n, target);
    if (p >= 0 && t >= 0) {
        transition *tr = &n->transitions[t];
        add(&tr->post, &tr->n_post, &tr->cap_post, (uint32_t)p, (uint32_t)weight);
        return true;
    }
    if (net_find_place(n, source) < 0 && net_find_transition(n, source) < 0) {
        net_error(n, "arc %s -> %s: unknown source '%s'", source, target, source);
    } else if (net_find_place(n, target) < 0 && net_find_transition(n, target) < 0) {
        net_error(n, "arc %s -> %s: unknown target '%s'", source, target, target);
    } else {
        net_error(n, "arc %s -> %s: an arc joins a place and a transition", source, target);
    }
    return false;
}

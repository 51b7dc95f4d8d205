/* LoLA's net format:
 *   PLACE p1, p2;            (optionally SAFE k: before a list)
 *   MARKING p1: 1, p2: 3;
 *   TRANSITION t CONSUME p1: 1; PRODUCE p2: 1;
 * with { comments }. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"

typedef struct lexer {
    const char *p;
    unsigned line;
    char token[256];
    const char *path;
    char *error;
    size_t error_size;
    bool failed;
} lexer;

static void fail(lexer *lx, const char *message) {
    if (lx->failed) return;
    snprintf(lx->error, lx->error_size, "%s:%u: %s", lx->path, lx->line, message);
    lx->failed = true;
}

/* Reads the next token: a name or number, or one of , ; : */
static bool next(lexer *lx) {
    for (;;) {
        while (isspace((unsigned char)*lx->p)) {
            if (*lx->p == '\n') lx->line++;
            lx->p++;
        }
        if (*lx->p != '{') break;
        while (*lx->p && *lx->p != '}') {
            if (*lx->p == '\n') lx->line++;
            lx->p++;
        }
        if (*lx->p == '}') lx->p++;
    }
    if (*lx->p == '\0') {
        lx->token[0] = '\0';
        return false;
    }
    if (strchr(",;:", *lx->p)) {
        lx->token[0] = *lx->p++;
        lx->token[1] = '\0';
        return true;
    }
    size_t n = 0;
    while (*lx->p && !isspace((unsigned char)*lx->p) && !strchr(",;:{", *lx->p)) {
        if (n == sizeof lx->token - 1) { /* cut short, two names could become one */
            char message[100];
            snprintf(message, sizeof message, "a name or number longer than %zu characters",
                     sizeof lx->token - 1);
            fail(lx, message);
            break;
        }
        lx->token[n++] = *lx->p++;
    }
    lx->token[n] = '\0';
    return true;
}

static bool is(const lexer *lx, const char *word) { return strcmp(lx->token, word) == 0; }

static bool number(lexer *lx, const char *what, long long *out) {
    char *end;
    errno = 0;
    long long value = strtoll(lx->token, &end, 10);
    if (lx->token[0] == '\0' || *end != '\0' || errno != 0) {
        char message[400];
        snprintf(message, sizeof message, "%s: '%s' is not a number", what, lx->token);
        fail(lx, message);
        return false;
    }
    if (value < 0) {
        char message[400];
        snprintf(message, sizeof message, "%s: %lld is negative", what, value);
        fail(lx, message);
        return false;
    }
    *out = value;
    return true;
}

static void net_failed(lexer *lx, net *n) {
    if (n->error[0]) fail(lx, n->error);
}

/* "name: count, name: count ;" with a callback per entry. */
static void entries(lexer *lx, net *n, const char *what, const char *transition, bool consume) {
    next(lx);
    while (!lx->failed && !is(lx, ";")) {
        if (lx->token[0] == '\0' || strchr(",:", lx->token[0])) {
            char message[400];
            snprintf(message, sizeof message, "%s: expected a place name, found '%s'", what,
                     lx->token[0] ? lx->token : "the end of the file");
            fail(lx, message);
            return;
        }
        char name[256];
        snprintf(name, sizeof name, "%s", lx->token);
        long long count = 1;
        next(lx);
        if (is(lx, ":")) {
            next(lx);
            if (!number(lx, what, &count)) return;
            next(lx);
        }
        if (transition == NULL) { /* MARKING */
            long place = net_find_place(n, name);
            if (place < 0) {
                char message[400];
                snprintf(message, sizeof message, "MARKING: unknown place '%s'", name);
                fail(lx, message);
                return;
            }
            n->initial[place] = (uint32_t)count;
        } else if (count > 0) {
            if (consume) {
                net_add_arc(n, name, transition, count);
            } else {
                net_add_arc(n, transition, name, count);
            }
            net_failed(lx, n);
        } else {
            char message[400];
            snprintf(message, sizeof message, "%s: weight 0 for place '%s'", what, name);
            fail(lx, message);
        }
        if (is(lx, ",")) next(lx);
    }
}

/* "CONSUME p: 1, q: 2;" or "PRODUCE ...;" of a transition. */
static bool arc_section(lexer *lx, net *n, const char *transition, const char *keyword) {
    char what[300];
    if (!is(lx, keyword)) {
        snprintf(what, sizeof what, "TRANSITION %s: expected %s, found '%s'", transition, keyword,
                 lx->token);
        fail(lx, what);
        return false;
    }
    snprintf(what, sizeof what, "TRANSITION %s %s", transition, keyword);
    entries(lx, n, what, transition, strcmp(keyword, "CONSUME") == 0);
    next(lx);
    return !lx->failed;
}

net *read_lola(const char *path, const char *text, char *error, size_t error_size) {
    lexer lx = {text, 1, {0}, path, error, error_size, false};
    net *n = net_new();
    bool seen_places = false;
    next(&lx);
    while (!lx.failed && lx.token[0]) {
        if (is(&lx, "PLACE")) {
            seen_places = true;
            next(&lx);
            while (!lx.failed && !is(&lx, ";")) {
                if (is(&lx, "SAFE")) { /* SAFE k: declares a bound, which we do not need */
                    next(&lx);
                    if (!is(&lx, ":")) next(&lx);
                    next(&lx);
                    continue;
                }
                if (lx.token[0] == '\0') {
                    fail(&lx, "PLACE: the list does not end with ';'");
                    break;
                }
                if (!is(&lx, ",")) {
                    net_add_place(n, lx.token, 0);
                    net_failed(&lx, n);
                }
                next(&lx);
            }
            next(&lx);
        } else if (is(&lx, "MARKING")) {
            if (!seen_places) fail(&lx, "MARKING before PLACE");
            entries(&lx, n, "MARKING", NULL, false);
            next(&lx);
        } else if (is(&lx, "TRANSITION")) {
            next(&lx);
            char name[256];
            snprintf(name, sizeof name, "%s", lx.token);
            net_add_transition(n, name);
            net_failed(&lx, n);
            next(&lx);
            while (!lx.failed && (is(&lx, "STRONG") || is(&lx, "WEAK") || is(&lx, "FAIR"))) next(&lx);
            if (!arc_section(&lx, n, name, "CONSUME") || !arc_section(&lx, n, name, "PRODUCE")) {
                break;
            }
        } else {
            char message[400];
            snprintf(message, sizeof message,
                     "expected PLACE, MARKING or TRANSITION, found '%s'", lx.token);
            fail(&lx, message);
        }
    }
    if (!lx.failed && !seen_places) fail(&lx, "no PLACE section");
    if (lx.failed) {
        net_free(n);
        return NULL;
    }
    return n;
}

/* What keeps a name from being one LoLA token (NULL: nothing): the lexer
 * splits at blanks and , ; : and starts a comment at {. */
static const char *lola_flaw(const char *name, bool place) {
    if (name[0] == '\0') return "LoLA cannot carry an empty name";
    for (const char *c = name; *c; c++) {
        if (isspace((unsigned char)*c) || strchr(",;:{", *c)) {
            return "LoLA cannot carry blanks or any of , ; : { in a name";
        }
    }
    if (place && strcmp(name, "SAFE") == 0) return "LoLA reads it as a keyword in a PLACE list";
    return NULL;
}

bool lola_can_carry(const net *n, char *error, size_t error_size) {
    const char *flaw;
    for (uint32_t p = 0; p < n->n_places; p++) {
        if ((flaw = lola_flaw(n->place_names[p], true)) != NULL) {
            snprintf(error, error_size, "place '%s': %s (write --format pnml)", n->place_names[p],
                     flaw);
            return false;
        }
    }
    for (uint32_t t = 0; t < n->n_transitions; t++) {
        if ((flaw = lola_flaw(n->transitions[t].name, false)) != NULL) {
            snprintf(error, error_size, "transition '%s': %s (write --format pnml)",
                     n->transitions[t].name, flaw);
            return false;
        }
    }
    return true;
}

void write_lola(const net *n, FILE *out) {
    fprintf(out, "PLACE\n");
    for (uint32_t p = 0; p < n->n_places; p++) {
        fprintf(out, "  %s%s\n", n->place_names[p], p + 1 < n->n_places ? "," : ";");
    }
    fprintf(out, "\nMARKING\n");
    bool first = true;
    for (uint32_t p = 0; p < n->n_places; p++) {
        if (n->initial[p] == 0) continue;
        fprintf(out, "%s  %s: %u", first ? "" : ",\n", n->place_names[p], n->initial[p]);
        first = false;
    }
    fprintf(out, ";\n");
    for (uint32_t i = 0; i < n->n_transitions; i++) {
        const transition *t = &n->transitions[i];
        fprintf(out, "\nTRANSITION %s\n  CONSUME", t->name);
        for (uint32_t k = 0; k < t->n_pre; k++) {
            fprintf(out, "%s %s: %u", k ? "," : "", n->place_names[t->pre[k].place], t->pre[k].weight);
        }
        fprintf(out, ";\n  PRODUCE");
        for (uint32_t k = 0; k < t->n_post; k++) {
            fprintf(out, "%s %s: %u", k ? "," : "", n->place_names[t->post[k].place],
                    t->post[k].weight);
        }
        fprintf(out, ";\n");
    }
}

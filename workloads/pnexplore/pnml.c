/* PNML place/transition nets, read with a small XML scanner of our own: the
 * contest's files use a narrow part of XML (elements, attributes, text,
 * comments, the five predefined entities), and every mistake must be named
 * with its element and line.  Graphics and tool-specific parts are skipped;
 * coloured (symmetric, high-level) nets are refused. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "formats.h"

#define MAX_DEPTH 64
#define MAX_ATTRS 8

typedef struct attr {
    char name[64];
    char value[256];
} attr;

typedef struct element {
    char name[64];
    attr attrs[MAX_ATTRS];
    int n_attrs;
    unsigned line;
    char text[256]; /* text directly inside, trimmed */
} element;

typedef struct pending_arc {
    char id[256], source[256], target[256];
    long long weight;
    unsigned line;
} pending_arc;

typedef struct reader {
    const char *p;
    unsigned line;
    const char *path;
    char *error;
    size_t error_size;
    bool failed;
    element stack[MAX_DEPTH];
    int depth;
    net *n;
    pending_arc *arcs;
    size_t n_arcs, cap_arcs;
} reader;

static void fail_at(reader *r, unsigned line, const char *format, const char *a, const char *b) {
    if (r->failed) return;
    char message[400];
    snprintf(message, sizeof message, format, a, b);
    snprintf(r->error, r->error_size, "%s:%u: %s", r->path, line, message);
    r->failed = true;
}

static const char *attribute(const element *e, const char *name) {
    for (int i = 0; i < e->n_attrs; i++) {
        if (strcmp(e->attrs[i].name, name) == 0) return e->attrs[i].value;
    }
    return NULL;
}

static void decode_entities(char *s) {
    static const struct {
        const char *entity;
        char c;
    } table[] = {{"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
    char *out = s;
    while (*s) {
        bool replaced = false;
        for (size_t i = 0; i < 5 && *s == '&'; i++) {
            size_t len = strlen(table[i].entity);
            if (strncmp(s, table[i].entity, len) == 0) {
                *out++ = table[i].c;
                s += len;
                replaced = true;
                break;
            }
        }
        if (!replaced) *out++ = *s++;
    }
    *out = '\0';
}

static void copy_bounded(char *dst, size_t cap, const char *src, size_t len) {
    if (len >= cap) len = cap - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

static bool inside(const reader *r, const char *name) {
    for (int i = r->depth - 1; i >= 0; i--) {
        if (strcmp(r->stack[i].name, name) == 0) return true;
    }
    return false;
}

static element *nearest(reader *r, const char *name) {
    for (int i = r->depth - 1; i >= 0; i--) {
        if (strcmp(r->stack[i].name, name) == 0) return &r->stack[i];
    }
    return NULL;
}

static bool parse_count(reader *r, const element *owner, const char *text, long long *out) {
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    while (*end && isspace((unsigned char)*end)) end++;
    if (text[0] == '\0' || *end != '\0' || errno != 0) {
        fail_at(r, owner->line, "<%s>: '%s' is not a number", owner->name, text);
        return false;
    }
    if (value < 0) {
        fail_at(r, owner->line, "<%s>: '%s' is negative", owner->name, text);
        return false;
    }
    *out = value;
    return true;
}

/* An element starts: what it means depends on where it is. */
static void open_element(reader *r, element *e) {
    const char *id = attribute(e, "id");
    if (strcmp(e->name, "net") == 0) {
        const char *type = attribute(e, "type");
        if (type && !strstr(type, "ptnet")) {
            fail_at(r, e->line, "<net type=\"%s\">: coloured nets are not supported%s", type, "");
        }
    } else if (strcmp(e->name, "place") == 0 || strcmp(e->name, "transition") == 0) {
        if (id == NULL) {
            fail_at(r, e->line, "<%s>: no id attribute%s", e->name, "");
            return;
        }
        bool ok = strcmp(e->name, "place") == 0 ? net_add_place(r->n, id, 0)
                                                : net_add_transition(r->n, id);
        if (!ok) fail_at(r, e->line, "<%s>: %s", e->name, r->n->error);
    } else if (strcmp(e->name, "arc") == 0) {
        const char *source = attribute(e, "source"), *target = attribute(e, "target");
        if (source == NULL || target == NULL) {
            fail_at(r, e->line, "<arc id=\"%s\">: no source or target attribute%s", id ? id : "?",
                    "");
            return;
        }
        if (r->n_arcs == r->cap_arcs) {
            r->cap_arcs = r->cap_arcs ? r->cap_arcs * 2 : 64;
            r->arcs = realloc(r->arcs, r->cap_arcs * sizeof *r->arcs);
            if (r->arcs == NULL) {
                fprintf(stderr, "pnexplore: out of memory while reading %s\n", r->path);
                exit(1);
            }
        }
        pending_arc *a = &r->arcs[r->n_arcs++];
        snprintf(a->id, sizeof a->id, "%s", id ? id : "?");
        snprintf(a->source, sizeof a->source, "%s", source);
        snprintf(a->target, sizeof a->target, "%s", target);
        a->weight = 1;
        a->line = e->line;
    } else if (strcmp(e->name, "hlinitialMarking") == 0 || strcmp(e->name, "hlinscription") == 0 ||
               (strcmp(e->name, "type") == 0 && inside(r, "place"))) {
        fail_at(r, e->line, "<%s>: coloured nets are not supported%s", e->name, "");
    }
}

/* An element ends: its text is now complete. */
static void close_element(reader *r, element *e) {
    if (strcmp(e->name, "text") != 0 || inside(r, "toolspecific")) return;
    element *marking = nearest(r, "initialMarking");
    element *inscription = nearest(r, "inscription");
    long long value;
    if (marking) {
        element *place = nearest(r, "place");
        if (place == NULL) return;
        if (!parse_count(r, marking, e->text, &value)) return;
        long index = net_find_place(r->n, attribute(place, "id"));
        if (index >= 0 && value > UINT32_MAX) {
            fail_at(r, marking->line, "<%s>: '%s' is too many tokens", marking->name, e->text);
        } else if (index >= 0) {
            r->n->initial[index] = (uint32_t)value;
        }
    } else if (inscription && nearest(r, "arc") && r->n_arcs > 0) {
        if (!parse_count(r, inscription, e->text, &value)) return;
        r->arcs[r->n_arcs - 1].weight = value;
    }
}

static void scan(reader *r) {
    const char *text_start = NULL;
    while (*r->p && !r->failed) {
        if (*r->p != '<') {
            if (!text_start) text_start = r->p;
            if (*r->p == '\n') r->line++;
            r->p++;
            continue;
        }
        if (text_start && r->depth > 0) { /* text of the innermost open element */
            const char *a = text_start, *b = r->p;
            while (a < b && isspace((unsigned char)*a)) a++;
            while (b > a && isspace((unsigned char)b[-1])) b--;
            element *top = &r->stack[r->depth - 1];
            copy_bounded(top->text, sizeof top->text, a, (size_t)(b - a));
            decode_entities(top->text);
        }
        text_start = NULL;
        const char *close = NULL;
        if (strncmp(r->p, "<!--", 4) == 0) {
            close = strstr(r->p, "-->");
        } else if (strncmp(r->p, "<?", 2) == 0 || strncmp(r->p, "<!", 2) == 0) {
            close = strchr(r->p, '>');
        }
        if (strncmp(r->p, "<!--", 4) == 0 || strncmp(r->p, "<?", 2) == 0 ||
            strncmp(r->p, "<!", 2) == 0) {
            if (close == NULL) {
                fail_at(r, r->line, "malformed XML: a comment or declaration never ends%s%s", "",
                        "");
                return;
            }
            for (const char *c = r->p; c < close; c++) r->line += *c == '\n';
            r->p = close + 1;
            continue;
        }
        bool closing = r->p[1] == '/';
        const char *q = r->p + (closing ? 2 : 1);
        const char *name_start = q;
        while (*q && (isalnum((unsigned char)*q) || strchr("_-.:", *q))) q++;
        if (q == name_start) {
            fail_at(r, r->line, "malformed XML: '<' not followed by an element name%s%s", "", "");
            return;
        }
        element e;
        memset(&e, 0, sizeof e);
        copy_bounded(e.name, sizeof e.name, name_start, (size_t)(q - name_start));
        char *colon = strchr(e.name, ':'); /* namespace prefixes do not matter here */
        if (colon) memmove(e.name, colon + 1, strlen(colon));
        e.line = r->line;
        bool self_closing = false;
        for (;;) {
            while (*q && isspace((unsigned char)*q)) r->line += *q++ == '\n';
            if (*q == '>') {
                q++;
                break;
            }
            if (q[0] == '/' && q[1] == '>') {
                self_closing = true;
                q += 2;
                break;
            }
            const char *an = q;
            while (*q && (isalnum((unsigned char)*q) || strchr("_-.:", *q))) q++;
            if (q == an || *q != '=' || (q[1] != '"' && q[1] != '\'')) {
                fail_at(r, e.line, "malformed XML in <%s>: bad attribute syntax%s", e.name, "");
                return;
            }
            char quote = q[1];
            const char *value = q + 2, *end = strchr(value, quote);
            if (end == NULL) {
                fail_at(r, e.line, "malformed XML in <%s>: an attribute value never ends%s",
                        e.name, "");
                return;
            }
            if (e.n_attrs < MAX_ATTRS) {
                attr *a = &e.attrs[e.n_attrs++];
                copy_bounded(a->name, sizeof a->name, an, (size_t)(q - an));
                copy_bounded(a->value, sizeof a->value, value, (size_t)(end - value));
                decode_entities(a->value);
            }
            for (const char *c = value; c < end; c++) r->line += *c == '\n';
            q = end + 1;
        }
        r->p = q;
        if (closing) {
            if (r->depth == 0 || strcmp(r->stack[r->depth - 1].name, e.name) != 0) {
                fail_at(r, e.line, "malformed XML: </%s> closes <%s>", e.name,
                        r->depth ? r->stack[r->depth - 1].name : "nothing");
                return;
            }
            close_element(r, &r->stack[r->depth - 1]);
            r->depth--;
            continue;
        }
        if (r->depth == MAX_DEPTH) {
            fail_at(r, e.line, "<%s>: elements nested too deeply%s", e.name, "");
            return;
        }
        r->stack[r->depth++] = e;
        if (!inside(r, "graphics") && !inside(r, "toolspecific")) open_element(r, &r->stack[r->depth - 1]);
        if (self_closing) r->depth--;
    }
    if (!r->failed && r->depth > 0) {
        fail_at(r, r->stack[r->depth - 1].line, "malformed XML: <%s> is never closed%s",
                r->stack[r->depth - 1].name, "");
    }
}

net *read_pnml(const char *path, const char *text, char *error, size_t error_size) {
    reader r;
    memset(&r, 0, sizeof r);
    r.p = text;
    r.line = 1;
    r.path = path;
    r.error = error;
    r.error_size = error_size;
    r.n = net_new();
    scan(&r);
    for (size_t i = 0; i < r.n_arcs && !r.failed; i++) {
        pending_arc *a = &r.arcs[i];
        if (!net_add_arc(r.n, a->source, a->target, a->weight)) {
            fail_at(&r, a->line, "<arc id=\"%s\">: %s", a->id, r.n->error);
        }
    }
    if (!r.failed && r.n->n_places == 0) fail_at(&r, r.line, "no <place> in the file%s%s", "", "");
    free(r.arcs);
    if (r.failed) {
        net_free(r.n);
        return NULL;
    }
    return r.n;
}

void write_pnml(const net *n, const char *name, FILE *out) {
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<pnml xmlns=\"http://www.pnml.org/version-2009/grammar/pnml\">\n"
                 "  <net id=\"%s\" type=\"http://www.pnml.org/version-2009/grammar/ptnet\">\n"
                 "    <page id=\"page0\">\n",
            name);
    for (uint32_t p = 0; p < n->n_places; p++) {
        fprintf(out, "      <place id=\"%s\"><name><text>%s</text></name>", n->place_names[p],
                n->place_names[p]);
        if (n->initial[p]) {
            fprintf(out, "<initialMarking><text>%u</text></initialMarking>", n->initial[p]);
        }
        fprintf(out, "</place>\n");
    }
    unsigned arc_id = 0;
    for (uint32_t i = 0; i < n->n_transitions; i++) {
        const transition *t = &n->transitions[i];
        fprintf(out, "      <transition id=\"%s\"><name><text>%s</text></name></transition>\n",
                t->name, t->name);
        for (uint32_t k = 0; k < t->n_pre; k++) {
            fprintf(out, "      <arc id=\"a%u\" source=\"%s\" target=\"%s\"><inscription><text>%u"
                         "</text></inscription></arc>\n",
                    arc_id++, n->place_names[t->pre[k].place], t->name, t->pre[k].weight);
        }
        for (uint32_t k = 0; k < t->n_post; k++) {
            fprintf(out, "      <arc id=\"a%u\" source=\"%s\" target=\"%s\"><inscription><text>%u"
                         "</text></inscription></arc>\n",
                    arc_id++, t->name, n->place_names[t->post[k].place], t->post[k].weight);
        }
    }
    fprintf(out, "    </page>\n  </net>\n</pnml>\n");
}

/* By content: PNML starts with '<' (after blanks), anything else is LoLA. */
net *read_net(const char *path, char *error, size_t error_size) {
    size_t len;
    char *text = cli_read_file(path, &len);
    if (text == NULL) {
        snprintf(error, error_size, "%s: cannot read it (%s)", path, strerror(errno));
        return NULL;
    }
    const char *s = text;
    while (isspace((unsigned char)*s)) s++;
    net *n = *s == '<' ? read_pnml(path, text, error, error_size)
                       : read_lola(path, text, error, error_size);
    free(text);
    return n;
}

/* A thread's current marking (see marking.h). */
#include "marking.h"

#include <stdlib.h>
#include <string.h>

#define HEADER_ROOM 10 /* a sparse record's payload is written first, its header before it */

static void enable(marking *m, uint32_t t) {
    m->enabled_at[t] = m->enabled_count;
    m->enabled[m->enabled_count++] = t;
}

static void disable(marking *m, uint32_t t) {
    uint32_t at = m->enabled_at[t], last = m->enabled[--m->enabled_count];
    m->enabled[at] = last;
    m->enabled_at[last] = at;
}

void marking_free(marking *m) {
    free(m->tokens);
    free(m->missing);
    free(m->enabled);
    free(m->enabled_at);
    free(m->differ);
    free(m->next_differ);
    free(m->next_counts);
    free(m->after);
    free(m->dense);
    memset(m, 0, sizeof *m);
}

bool marking_init(marking *m, const firing *f, const encoding *e) {
    memset(m, 0, sizeof *m);
    m->f = f;
    m->e = e;
    size_t places = (size_t)f->places + 1, transitions = (size_t)f->transitions + 1;
    m->tokens = malloc(places * sizeof *m->tokens);
    m->missing = calloc(transitions, sizeof *m->missing);
    m->enabled = malloc(transitions * sizeof *m->enabled);
    m->enabled_at = malloc(transitions * sizeof *m->enabled_at);
    m->differ = malloc(places * sizeof *m->differ);
    m->next_differ = malloc(places * sizeof *m->next_differ);
    m->next_counts = malloc(places * sizeof *m->next_counts);
    m->after = malloc(places * sizeof *m->after);
    m->dense = malloc(e->longest);
    if (!m->tokens || !m->missing || !m->enabled || !m->enabled_at || !m->differ ||
        !m->next_differ || !m->next_counts || !m->after || !m->dense) {
        marking_free(m);
        return false;
    }
    for (uint32_t p = 0; p < f->places; p++) {
        uint32_t c = m->tokens[p] = f->initial[p];
        m->total += c;
        m->over1 += c > 1;
        m->over255 += c > 255;
        if (c > m->max_in_place) m->max_in_place = c;
    }
    m->max_total = m->total;
    m->differ_listed = true;
    for (uint32_t t = 0; t < f->transitions; t++) {
        for (uint32_t k = f->input_start[t]; k < f->input_start[t + 1]; k++) {
            m->missing[t] += m->tokens[f->inputs[k].index] < f->inputs[k].weight;
        }
        if (m->missing[t] == 0) enable(m, t);
    }
    return true;
}

static encoding_kind dense_kind(uint32_t over1, uint32_t over255) {
    return over1 == 0 ? KIND_DENSE_BITS : over255 == 0 ? KIND_DENSE_BYTES : KIND_DENSE_SHORTS;
}

static size_t dense_length(const encoding *e, encoding_kind kind) {
    return kind == KIND_DENSE_BITS    ? e->bits_bytes
           : kind == KIND_DENSE_BYTES ? e->bytes_header + e->places
                                      : e->shorts_header + 2 * (size_t)e->places;
}

/* Writes place p's count into a dense record of its kind. */
static inline void put_dense(const encoding *e, uint8_t *record, encoding_kind kind, uint32_t p,
                      uint32_t count) {
    if (kind == KIND_DENSE_BITS) {
        uint8_t bit = (uint8_t)(1u << ((p + 1) & 7));
        record[(p + 1) >> 3] = (uint8_t)(count ? record[(p + 1) >> 3] | bit
                                               : record[(p + 1) >> 3] & ~bit);
    } else if (kind == KIND_DENSE_BYTES) {
        record[e->bytes_header + p] = (uint8_t)count;
    } else {
        record[e->shorts_header + 2 * (size_t)p] = (uint8_t)count;
        record[e->shorts_header + 2 * (size_t)p + 1] = (uint8_t)(count >> 8);
    }
}

/* The dense record of kind `kind` of the current tokens. */
static void write_dense(const marking *m, uint8_t *record, encoding_kind kind) {
    const encoding *e = m->e;
    if (kind == KIND_DENSE_BITS) {
        memset(record, 0, e->bits_bytes);
        record[0] = 1;
    } else {
        encoding_header(record, kind, kind == KIND_DENSE_BYTES ? e->places : 2 * (size_t)e->places);
    }
    for (uint32_t p = 0; p < e->places; p++) {
        if (m->tokens[p] || kind != KIND_DENSE_BITS) put_dense(e, record, kind, p, m->tokens[p]);
    }
}

/* Place p gets `count` tokens: the transitions consuming from it are
 * re-tested, the counts of what differs follow, the cached dense record too
 * if it can. */
static void change(marking *m, uint32_t p, uint32_t count) {
    const firing *f = m->f;
    uint32_t old = m->tokens[p], start = f->initial[p];
    for (uint32_t k = f->consumer_start[p]; k < f->consumer_start[p + 1]; k++) {
        uint32_t t = f->consumers[k].index, w = f->consumers[k].weight;
        bool was = old >= w, now = count >= w;
        if (was == now) continue;
        if (now) {
            if (--m->missing[t] == 0) enable(m, t);
        } else if (m->missing[t]++ == 0) {
            disable(m, t);
        }
    }
    m->tokens[p] = count;
    m->total += (uint64_t)count - old;
    m->over1 += (uint32_t)(count > 1) - (uint32_t)(old > 1);
    m->over255 += (uint32_t)(count > 255) - (uint32_t)(old > 255);
    m->differ_count += (uint32_t)(count != start) - (uint32_t)(old != start);
    m->nonflip += (uint32_t)(count != start && (count > 1 || start > 1)) -
                  (uint32_t)(old != start && (old > 1 || start > 1));
    if (m->dense_valid && dense_kind(m->over1, m->over255) == m->dense_kind) {
        put_dense(m->e, m->dense, m->dense_kind, p, count);
    } else {
        m->dense_valid = false;
    }
}

/* The list of differing places, from the dense record when it lapsed. */
static void list_differ(marking *m) {
    if (m->differ_listed) return;
    uint32_t k = encoding_decode(m->e, m->dense, m->differ, m->next_counts);
    (void)k; /* == differ_count */
    m->differ_listed = true;
}

/* From a dense record to another of the same kind: only the places whose
 * bits or bytes differ change, and the list of differing places lapses. */
static void set_dense(marking *m, const uint8_t *record, encoding_kind kind) {
    const encoding *e = m->e;
    if (kind == KIND_DENSE_BITS) {
        for (size_t at = 0; at < e->bits_bytes; at += 8) {
            uint64_t now = 0, was = 0;
            size_t n = e->bits_bytes - at < 8 ? e->bits_bytes - at : 8;
            memcpy(&now, record + at, n);
            memcpy(&was, m->dense + at, n);
            for (uint64_t bits = now ^ was; bits; bits &= bits - 1) {
                uint32_t p = (uint32_t)(at * 8 + (size_t)__builtin_ctzll(bits)) - 1;
                change(m, p, (uint32_t)(now >> ((p + 1) & 63)) & 1);
            }
        }
    } else {
        size_t header = kind == KIND_DENSE_BYTES ? e->bytes_header : e->shorts_header;
        for (uint32_t p = 0; p < e->places; p++) {
            uint32_t count = kind == KIND_DENSE_BYTES
                                 ? record[header + p]
                                 : (uint32_t)(record[header + 2 * (size_t)p] |
                                              record[header + 2 * (size_t)p + 1] << 8);
            if (count != m->tokens[p]) change(m, p, count);
        }
    }
    memcpy(m->dense, record, dense_length(e, kind));
    m->dense_kind = kind;
    m->dense_valid = true;
    m->differ_listed = false;
}

void marking_set(marking *m, const uint8_t *record) {
    encoding_kind kind = encoding_kind_of(record);
    if (kind >= KIND_DENSE_BYTES && m->dense_valid && m->dense_kind == kind) {
        set_dense(m, record, kind);
        return;
    }
    const uint32_t *initial = m->f->initial;
    list_differ(m);
    uint32_t k = encoding_decode(m->e, record, m->next_differ, m->next_counts);
    /* Only places in either list can change: the others hold their initial count. */
    uint32_t i = 0, j = 0, listed = m->differ_count;
    while (i < listed || j < k) {
        uint32_t p;
        uint32_t count;
        if (j == k || (i < listed && m->differ[i] < m->next_differ[j])) {
            p = m->differ[i++];
            count = initial[p];
        } else {
            if (i < listed && m->differ[i] == m->next_differ[j]) i++;
            p = m->next_differ[j];
            count = m->next_counts[j++];
        }
        if (m->tokens[p] != count) change(m, p, count);
    }
    uint32_t *swap = m->differ;
    m->differ = m->next_differ;
    m->next_differ = swap;
    if (kind >= KIND_DENSE_BYTES) { /* a dense record is this marking's dense record */
        memcpy(m->dense, record, dense_length(m->e, kind));
        m->dense_kind = kind;
        m->dense_valid = true;
    }
}

/* The sparse record of the successor (this marking's differing places merged
 * with the transition's effects), if shorter than `limit`: its length, else 0. */
static size_t write_sparse(marking *m, const effect *effects, uint32_t n_effects, bool counts,
                           size_t limit, uint8_t *room, const uint8_t **record) {
    const uint32_t *initial = m->f->initial;
    uint8_t *payload = room + HEADER_ROOM;
    size_t n = 0;
    uint32_t i = 0, j = 0, previous = UINT32_MAX;
    while (i < m->differ_count || j < n_effects) {
        uint32_t p;
        uint64_t count;
        if (j == n_effects || (i < m->differ_count && m->differ[i] < effects[j].place)) {
            p = m->differ[i++];
            count = m->tokens[p];
        } else {
            if (i < m->differ_count && m->differ[i] == effects[j].place) i++;
            p = effects[j].place;
            count = m->after[j++];
        }
        if (count == initial[p]) continue;
        n += leb128_put(payload + n, p - previous - 1);
        previous = p;
        if (counts) n += leb128_put(payload + n, count);
        if (n + 1 >= limit) return 0;
    }
    encoding_kind kind = counts ? KIND_SPARSE_COUNTS : KIND_SPARSE_FLIPS;
    size_t header = leb128_length((uint64_t)n << 3 | (uint64_t)kind << 1);
    if (header + n >= limit) return 0;
    encoding_header(payload - header, kind, n);
    *record = payload - header;
    return header + n;
}

size_t marking_room(const encoding *e) { return e->longest + HEADER_ROOM; }

/* memcpy, without a call for the short records most nets have. */
static inline void copy_record(uint8_t *to, const uint8_t *from, size_t n) {
    if (n < 8 || n > 16) {
        memcpy(to, from, n);
        return;
    }
    uint64_t head, tail;
    memcpy(&head, from, 8);
    memcpy(&tail, from + n - 8, 8);
    memcpy(to, &head, 8);
    memcpy(to + n - 8, &tail, 8);
}

size_t marking_successor(marking *m, uint32_t t, uint8_t *room, const uint8_t **record,
                         uint32_t *overflow) {
    const firing *f = m->f;
    const encoding *e = m->e;
    const effect *effects = NULL;
    uint32_t n_effects = 0;
    if (t != UINT32_MAX) {
        effects = f->effects + f->effect_start[t];
        n_effects = f->effect_start[t + 1] - f->effect_start[t];
    }
    /* What the successor's record depends on, from this marking's and the
     * effects: the places that will differ, then (unless every count stays
     * 0 or 1, as it does in most nets) those above 1 and 255. */
    uint32_t *after = m->after;
    uint32_t differ = m->differ_count, highest = 0;
    int64_t change_total = 0;
    for (uint32_t k = 0; k < n_effects; k++) {
        uint32_t p = effects[k].place, start = f->initial[p], old = m->tokens[p];
        int64_t now = (int64_t)old + effects[k].delta;
        if (now > ENCODING_COUNT_MAX) {
            *overflow = p;
            return 0;
        }
        after[k] = (uint32_t)now;
        differ += (uint32_t)(after[k] != start) - (uint32_t)(old != start);
        if (after[k] > highest) highest = after[k];
        change_total += effects[k].delta;
    }
    if (highest > m->max_in_place) m->max_in_place = highest;
    uint64_t total = m->total + (uint64_t)change_total;
    if (total > m->max_total) m->max_total = total;
    uint32_t nonflip = 0, over1 = 0, over255 = 0;
    if (m->over1 != 0 || highest > 1 || e->big_count != 0) {
        nonflip = m->nonflip;
        over1 = m->over1;
        over255 = m->over255;
        for (uint32_t k = 0; k < n_effects; k++) {
            uint32_t start = f->initial[effects[k].place], old = m->tokens[effects[k].place];
            uint32_t now = after[k];
            nonflip += (uint32_t)(now != start && (now > 1 || start > 1)) -
                       (uint32_t)(old != start && (old > 1 || start > 1));
            over1 += (uint32_t)(now > 1) - (uint32_t)(old > 1);
            over255 += (uint32_t)(now > 255) - (uint32_t)(old > 255);
        }
    }
    encoding_kind kind = dense_kind(over1, over255);
    size_t dense = dense_length(e, kind);
    /* Every sparse entry takes a byte, two with its count, after a header byte. */
    bool counts = nonflip != 0;
    if (1 + (size_t)differ * (counts ? 2 : 1) < dense) {
        list_differ(m);
        size_t length = write_sparse(m, effects, n_effects, counts, dense, room, record);
        if (length) return length;
    }
    uint8_t *out = room + HEADER_ROOM;
    *record = out;
    if (kind != dense_kind(m->over1, m->over255)) {
        write_dense(m, out, kind);
        for (uint32_t k = 0; k < n_effects; k++) put_dense(e, out, kind, effects[k].place, after[k]);
        return dense;
    }
    if (!m->dense_valid || m->dense_kind != kind) {
        write_dense(m, m->dense, kind);
        m->dense_kind = kind;
        m->dense_valid = true;
    }
    copy_record(out, m->dense, dense);
    if (kind == KIND_DENSE_BITS) { /* every effect flips a bit */
        for (uint32_t k = 0; k < n_effects; k++) {
            uint32_t bit = effects[k].place + 1;
            out[bit >> 3] ^= (uint8_t)(1u << (bit & 7));
        }
    } else {
        for (uint32_t k = 0; k < n_effects; k++) put_dense(e, out, kind, effects[k].place, after[k]);
    }
    return dense;
}

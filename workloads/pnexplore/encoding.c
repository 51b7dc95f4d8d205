/* Marking records (see encoding.h). */
#include "encoding.h"

#include <stdlib.h>
#include <string.h>

size_t leb128_length(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t leb128_put(uint8_t *out, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

uint64_t leb128_get(const uint8_t **in) {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = *(*in)++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) return v;
    }
}

size_t encoding_header(uint8_t *out, encoding_kind kind, size_t payload) {
    return leb128_put(out, (uint64_t)payload << 3 | (uint64_t)kind << 1);
}

bool encoding_init(encoding *e, uint32_t places, const uint32_t *initial, uint32_t *too_many) {
    memset(e, 0, sizeof *e);
    e->places = places;
    e->initial = initial;
    e->bits_bytes = ((size_t)places + 1 + 7) / 8;
    e->bytes_header = leb128_length((uint64_t)places << 3 | (uint64_t)KIND_DENSE_BYTES << 1);
    e->shorts_header = leb128_length((uint64_t)places * 2 << 3 | (uint64_t)KIND_DENSE_SHORTS << 1);
    /* A sparse record is written only while shorter than a dense one, which
     * it passes by one entry at most (gap and count: 10 + 3 bytes). */
    e->longest = e->shorts_header + 2 * (size_t)places + 16;
    e->initial_bits = calloc((e->bits_bytes + 7) / 8, 8);
    e->big_initial = malloc(((size_t)places + 1) * sizeof *e->big_initial);
    if (e->initial_bits == NULL || e->big_initial == NULL) {
        encoding_free(e);
        *too_many = UINT32_MAX;
        return false;
    }
    e->initial_bits[0] = 1;
    for (uint32_t p = 0; p < places; p++) {
        if (initial[p] > ENCODING_COUNT_MAX) {
            encoding_free(e);
            *too_many = p;
            return false;
        }
        if (initial[p] == 1) e->initial_bits[(p + 1) >> 3] |= (uint8_t)(1u << ((p + 1) & 7));
        if (initial[p] > 1) e->big_initial[e->big_count++] = p;
    }
    return true;
}

void encoding_free(encoding *e) {
    free(e->initial_bits);
    free(e->big_initial);
    e->initial_bits = NULL;
    e->big_initial = NULL;
}

static uint32_t bit_of(const uint8_t *record, uint32_t p) {
    return (record[(p + 1) >> 3] >> ((p + 1) & 7)) & 1;
}

/* Dense bits: the places whose bit differs from "starts with one token",
 * merged with those that start with more (which always differ). */
static uint32_t decode_bits(const encoding *e, const uint8_t *record, uint32_t *places,
                            uint32_t *counts) {
    uint32_t k = 0, big = 0;
    for (size_t at = 0; at < e->bits_bytes; at += 8) {
        uint64_t word = 0, start;
        memcpy(&word, record + at, e->bits_bytes - at < 8 ? e->bits_bytes - at : 8);
        memcpy(&start, e->initial_bits + at, 8);
        for (uint64_t differ = word ^ start; differ; differ &= differ - 1) {
            uint32_t p = (uint32_t)(at * 8 + (size_t)__builtin_ctzll(differ)) - 1;
            for (; big < e->big_count && e->big_initial[big] < p; big++, k++) {
                places[k] = e->big_initial[big];
                counts[k] = bit_of(record, places[k]);
            }
            if (big < e->big_count && e->big_initial[big] == p) big++;
            places[k] = p;
            counts[k++] = bit_of(record, p);
        }
    }
    for (; big < e->big_count; big++, k++) {
        places[k] = e->big_initial[big];
        counts[k] = bit_of(record, places[k]);
    }
    return k;
}

uint32_t encoding_decode(const encoding *e, const uint8_t *record, uint32_t *places,
                         uint32_t *counts) {
    if (record[0] & 1) return decode_bits(e, record, places, counts);
    const uint8_t *in = record;
    uint64_t h = leb128_get(&in);
    const uint8_t *end = in + (h >> 3);
    encoding_kind kind = (encoding_kind)((h >> 1) & 3);
    uint32_t k = 0;
    if (kind == KIND_SPARSE_FLIPS || kind == KIND_SPARSE_COUNTS) {
        uint32_t p = UINT32_MAX; /* the gap is counted from the place before the first */
        while (in < end) {
            p += (uint32_t)leb128_get(&in) + 1;
            places[k] = p;
            counts[k++] = kind == KIND_SPARSE_FLIPS ? 1 - e->initial[p] : (uint32_t)leb128_get(&in);
        }
        return k;
    }
    for (uint32_t p = 0; p < e->places; p++) {
        uint32_t c = kind == KIND_DENSE_BYTES ? in[p] : (uint32_t)(in[2 * p] | in[2 * p + 1] << 8);
        if (c != e->initial[p]) {
            places[k] = p;
            counts[k++] = c;
        }
    }
    return k;
}

uint64_t encoding_hash(const uint8_t *m, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, m + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    uint64_t w = 0;
    memcpy(&w, m + i, n - i);
    h = (h ^ w) * 0x94D049BB133111EBull;
    return h ^ (h >> 29);
}

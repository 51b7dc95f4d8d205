/* How a marking is stored: in bytes that grow with what differs from the
 * initial marking, or with the places if most differ.
 *
 * A record is one of, whichever is shorter (dense on a tie), so that equal
 * markings have equal bytes:
 * - dense bits (every place holds at most one token): bit 0 of the first
 *   byte is 1, place p is bit p+1; ceil((places+1)/8) bytes.
 * - otherwise a LEB128 header H, even, then H>>3 bytes of payload, the kind
 *   being (H>>1)&3:
 *   0 sparse flips: the places that differ from the initial marking, each as
 *     the gap since the previous one (LEB128), when every such place and its
 *     initial count are 0 or 1 (its count is then the other one);
 *   1 sparse counts: the same with each place's count after its gap;
 *   2 dense bytes: one byte a place; 3 dense shorts: two bytes a place
 *     (little-endian).
 * Counts above 65535 have no encoding: the explorer stops before. */
#ifndef PNEXPLORE_ENCODING_H
#define PNEXPLORE_ENCODING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENCODING_COUNT_MAX 65535u

typedef enum {
    KIND_SPARSE_FLIPS, KIND_SPARSE_COUNTS, KIND_DENSE_BYTES, KIND_DENSE_SHORTS, KIND_DENSE_BITS,
} encoding_kind;

/* What the encodings of one net's markings share. */
typedef struct encoding {
    uint32_t places;
    const uint32_t *initial;
    size_t bits_bytes;         /* a dense-bits record */
    size_t bytes_header;       /* the header of a dense-bytes record */
    size_t shorts_header;      /* the header of a dense-shorts record */
    size_t longest;            /* the longest record there can be, plus room to write one */
    uint8_t *initial_bits;     /* dense bits of "starts with one token", padded to 8 bytes */
    uint32_t *big_initial;     /* the places that start with more than one token, in order */
    uint32_t big_count;
} encoding;

/* False if a place starts with more than ENCODING_COUNT_MAX tokens (its
 * index in *too_many) or memory runs out (*too_many = UINT32_MAX). */
bool encoding_init(encoding *e, uint32_t places, const uint32_t *initial, uint32_t *too_many);
void encoding_free(encoding *e);

size_t leb128_length(uint64_t v);
size_t leb128_put(uint8_t *out, uint64_t v);
uint64_t leb128_get(const uint8_t **in);

/* The length of the record at `record`, from its first bytes. */
static inline size_t encoding_length(const encoding *e, const uint8_t *record) {
    if (record[0] & 1) return e->bits_bytes;
    if (record[0] < 0x80) return 1 + (size_t)(record[0] >> 3); /* a one-byte header */
    const uint8_t *payload = record;
    uint64_t h = leb128_get(&payload);
    return (size_t)(payload - record) + (size_t)(h >> 3);
}
/* The places whose counts differ from the initial marking, in order, with
 * their counts; returns how many. */
uint32_t encoding_decode(const encoding *e, const uint8_t *record, uint32_t *places,
                         uint32_t *counts);
/* The kind of the record at `record`. */
static inline encoding_kind encoding_kind_of(const uint8_t *record) {
    return record[0] & 1 ? KIND_DENSE_BITS : (encoding_kind)((record[0] >> 1) & 3);
}

/* The header of a non-bits record with `payload` bytes; returns its length. */
size_t encoding_header(uint8_t *out, encoding_kind kind, size_t payload);
uint64_t encoding_hash(const uint8_t *record, size_t length);

#endif

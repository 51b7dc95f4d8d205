/* Writes outside a block: one byte flipped 1 byte, 32 bytes or 1 MiB after
 * its end or before its start, then the block freed (where an allocator that
 * guards its headers or checks canaries would notice); and copies with memcpy
 * that run 1 byte, 32 bytes or 1 MiB past either end, checked by nothing but
 * the copy itself (an allocator that interposes memcpy and knows block
 * bounds can stop it; a copy into unmapped memory faults).
 *
 *   hh-probe-overflow --list | NAME SIZE */
#include "probe.h"

#define MiB ((size_t)1 << 20)

/* Flips the byte at OFFSET from the start of a block of SIZE bytes (XOR, so
 * the byte surely changes), then frees the block. */
static void flip_then_free(size_t size, long long offset) {
    char *block = probe_block(size);
    block[offset] ^= 'A';
    probe_free(block);
    probe_not_caught();
}

static void byte_after(size_t size) { flip_then_free(size, (long long)size); }
static void byte_before(size_t size) { flip_then_free(size, -1); }
static void byte_32_after(size_t size) { flip_then_free(size, (long long)size + 31); }
static void byte_32_before(size_t size) { flip_then_free(size, -32); }
static void byte_1mib_after(size_t size) { flip_then_free(size, (long long)(size + MiB - 1)); }
static void byte_1mib_before(size_t size) { flip_then_free(size, -(long long)MiB); }

/* Copies SIZE + EXTRA bytes into a block of SIZE bytes, starting EXTRA
 * bytes before it when BEFORE. */
static void copy_beyond(size_t size, size_t extra, int before) {
    char *block = probe_block(size);
    probe_memcpy(before ? block - extra : block, probe_source(size + extra), size + extra);
    probe_not_caught();
}

static void copy_1_after(size_t size) { copy_beyond(size, 1, 0); }
static void copy_1_before(size_t size) { copy_beyond(size, 1, 1); }
static void copy_32_after(size_t size) { copy_beyond(size, 32, 0); }
static void copy_32_before(size_t size) { copy_beyond(size, 32, 1); }
static void copy_1mib_after(size_t size) { copy_beyond(size, MiB, 0); }
static void copy_1mib_before(size_t size) { copy_beyond(size, MiB, 1); }

static const probe probes[] = {
    {"byte-after", "overflow, then free", true, byte_after},
    {"byte-before", "overflow, then free", true, byte_before},
    {"byte-32-after", "overflow, then free", true, byte_32_after},
    {"byte-32-before", "overflow, then free", true, byte_32_before},
    {"byte-1mib-after", "overflow, then free", true, byte_1mib_after},
    {"byte-1mib-before", "overflow, then free", true, byte_1mib_before},
    {"copy-1-after", "overflow by memcpy", true, copy_1_after},
    {"copy-1-before", "overflow by memcpy", true, copy_1_before},
    {"copy-32-after", "overflow by memcpy", true, copy_32_after},
    {"copy-32-before", "overflow by memcpy", true, copy_32_before},
    {"copy-1mib-after", "overflow by memcpy", true, copy_1mib_after},
    {"copy-1mib-before", "overflow by memcpy", true, copy_1mib_before},
};

int main(int argc, char **argv) { return probe_main(argc, argv, probes, PROBE_COUNT(probes)); }

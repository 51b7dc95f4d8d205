/* Double frees: a block freed twice, at once, after other blocks of its size
 * came and went, between two frees of another block, after its memory was
 * handed out again, and with allocations after the second free (where an
 * allocator that missed it would hand the block out twice).
 *
 *   hh-probe-double-free --list | NAME SIZE */
#include "probe.h"

static void twice(size_t size) {
    void *block = probe_block(size);
    probe_free(block);
    probe_free(block);
    probe_not_caught();
}

static void after_churn(size_t size) {
    void *block = probe_block(size);
    probe_free(block);
    probe_churn(size, 1024);
    probe_free(block);
    probe_not_caught();
}

static void interleaved(size_t size) {
    void *first = probe_block(size);
    void *second = probe_block(size);
    probe_free(first);
    probe_free(second);
    probe_free(first);
    probe_not_caught();
}

/* The block's memory was handed out again before the second free: that free
 * frees another owner's live block (the allocator can tell only by keeping
 * freed addresses out of use for a while). */
static void after_reuse(size_t size) {
    void *block = probe_block(size);
    probe_free(block);
    void *reuse = probe_block(size);
    probe_free(block);
    probe_free(reuse);
    probe_not_caught();
}

static void then_churn(size_t size) {
    void *block = probe_block(size);
    probe_free(block);
    probe_free(block);
    probe_churn(size, 256 * 1024);
    probe_not_caught();
}

static const probe probes[] = {
    {"twice", "double free", true, twice},
    {"after-churn", "double free", true, after_churn},
    {"interleaved", "double free", true, interleaved},
    {"after-reuse", "double free", true, after_reuse},
    {"then-churn", "double free", true, then_churn},
};

int main(int argc, char **argv) { return probe_main(argc, argv, probes, PROBE_COUNT(probes)); }

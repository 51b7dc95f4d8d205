/* Use after free: a freed block written over (alone, and followed by
 * allocations of its size, where an allocator that checks its free lists
 * notices at the next allocation), and a freed block read back (caught when
 * the allocator cleared it on free, or unmapped it so the read faults).
 *
 *   hh-probe-use-after-free --list | NAME SIZE */
#include "probe.h"

static void write_after(size_t size) {
    char *block = probe_block(size);
    probe_free(block);
    probe_memset(block, 'A', size);
    probe_not_caught();
}

static void write_then_churn(size_t size) {
    char *block = probe_block(size);
    probe_free(block);
    probe_memset(block, 'A', size);
    probe_churn(size, 256 * 1024);
    probe_not_caught();
}

static void read_after(size_t size) {
    char *block = probe_block(size);
    probe_memset(block, 'A', size);
    probe_free(block);
    if (!probe_all_zero(block, size)) probe_not_caught();
    probe_caught("the freed block reads as zeros");
}

static const probe probes[] = {
    {"write", "use after free", true, write_after},
    {"write-then-churn", "use after free", true, write_then_churn},
    {"read-cleared", "use after free", true, read_after},
};

int main(int argc, char **argv) { return probe_main(argc, argv, probes, PROBE_COUNT(probes)); }

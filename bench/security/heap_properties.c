/* What the heap is, whatever the program does: can code copied into a block
 * run there (an executable heap), and does a block that replaces a freed one
 * of its size read as zeros (caught) or hold what the freed one held, or the
 * allocator's links (memory not cleared between owners)?
 *
 *   hh-probe-heap-properties --list | NAME SIZE */
#include "probe.h"

static void executable(size_t size) {
#if defined(__x86_64__) || defined(__i386__)
    static const unsigned char return_only[] = {0xc3}; /* ret */
#elif defined(__aarch64__)
    static const unsigned char return_only[] = {0xc0, 0x03, 0x5f, 0xd6}; /* ret */
#else
#error "the executable-heap probe needs a return instruction for this architecture"
#endif
    unsigned char *block = probe_block(size < sizeof return_only ? sizeof return_only : size);
    probe_memcpy(block, return_only, sizeof return_only);
    __builtin___clear_cache((char *)block, (char *)block + sizeof return_only);
    void (*code)(void) = (void (*)(void))(void *)block;
    code();
    probe_not_caught();
}

static void zeroed_on_malloc(size_t size) {
    char *block = probe_block(size);
    probe_memset(block, 'A', size);
    probe_free(block);
    if (!probe_all_zero(probe_block(size), size)) probe_not_caught();
    probe_caught("the block after a freed one reads as zeros");
}

static const probe probes[] = {
    {"executable", "heap properties", true, executable},
    {"zeroed-on-malloc", "heap properties", true, zeroed_on_malloc},
};

int main(int argc, char **argv) { return probe_main(argc, argv, probes, PROBE_COUNT(probes)); }

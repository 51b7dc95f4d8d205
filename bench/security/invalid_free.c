/* Frees of pointers the allocator never handed out: a small constant, a local
 * array, a global one, alloca'd memory, and addresses near a real block (1
 * GiB and 4 KiB past it, 1, 8 and 16 bytes into it).
 *
 *   hh-probe-invalid-free --list | NAME [SIZE] */
#include <alloca.h>

#include "probe.h"

static char global_array[64];

static void low_address(size_t size) {
    (void)size;
    probe_free((void *)1);
    probe_not_caught();
}

static void stack_array(size_t size) {
    (void)size;
    char local[64];
    probe_memset(local, 0, sizeof local);
    probe_free(local);
    probe_not_caught();
}

static void global(size_t size) {
    (void)size;
    probe_free(global_array);
    probe_not_caught();
}

static void on_alloca(size_t size) {
    char *local = alloca(size);
    probe_memset(local, 0, size);
    probe_free(local);
    probe_not_caught();
}

/* A pointer OFFSET bytes from the start of a block of SIZE bytes. */
static void block_plus(size_t size, size_t offset) {
    char *block = probe_block(size);
    probe_free(block + offset);
    probe_not_caught();
}

static void far_past(size_t size) { block_plus(size, (size_t)1 << 30); }
static void near_past(size_t size) { block_plus(size, 4096); }
static void interior_1(size_t size) { block_plus(size, 1); }
static void interior_8(size_t size) { block_plus(size, 8); }
static void interior_16(size_t size) { block_plus(size, 16); }

static const probe probes[] = {
    {"low-address", "invalid free", false, low_address},
    {"stack-array", "invalid free", false, stack_array},
    {"global-array", "invalid free", false, global},
    {"alloca", "invalid free", true, on_alloca},
    {"1gib-past", "invalid free", true, far_past},
    {"4kib-past", "invalid free", true, near_past},
    {"interior-1", "invalid free", true, interior_1},
    {"interior-8", "invalid free", true, interior_8},
    {"interior-16", "invalid free", true, interior_16},
};

int main(int argc, char **argv) { return probe_main(argc, argv, probes, PROBE_COUNT(probes)); }

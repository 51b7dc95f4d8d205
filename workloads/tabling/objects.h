/* The table space's memory, by kind of object: the paper's one data type
 * per page.  Each kind comes from a pool of its own (--alloc pool) or from
 * malloc (--alloc malloc); objects beyond pool sizes from hugeheap's or the
 * system's malloc.  Every allocation is counted in the caller's byte
 * counter, so that abolishing can check it gave everything back.  Tries
 * (trie.c) and tables (table.c) both take their objects from here. */
#ifndef HHTAB_OBJECTS_H
#define HHTAB_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "hugeheap.h"

#define N_CTABLE_SIZES 6 /* child tables up to CTABLE_MIN << 5 slots come from pools */

/* The kinds of object, each with a pool of its own. */
enum {
    K_SG_NODE,
    K_ANS_NODE,
    K_FRAME,
    K_ENTRY,
    K_BUCKET,
    K_CTABLE, /* K_CTABLE + i: child tables of CTABLE_MIN << i slots */
    N_KINDS = K_CTABLE + N_CTABLE_SIZES,
};

typedef struct object_memory {
    bool pools;               /* from pools, else malloc */
    size_t size[N_KINDS];     /* an object's bytes, by kind (set before object_memory_open) */
    hh_pool *pool[N_KINDS];
} object_memory;

/* Makes the pools (if pools); false on no memory. */
bool object_memory_open(object_memory *m);
/* Destroys the pools: every object of them is gone. */
void object_memory_close(object_memory *m);
/* The 64 KiB pages the pools hold. */
size_t object_memory_pages(const object_memory *m);

/* Stops the program with a message: the table space cannot grow. */
_Noreturn void table_out_of_memory(void);

/* An object of a kind, counted in *bytes; stops the program on no memory.
 * Inline: every trie node comes from here. */
static inline void *object_alloc(const object_memory *m, int64_t *bytes, int kind) {
    void *p = m->pools ? hh_pool_alloc(m->pool[kind]) : malloc(m->size[kind]);
    if (p == NULL) table_out_of_memory();
    *bytes += (int64_t)m->size[kind];
    return p;
}

static inline void object_free(const object_memory *m, int64_t *bytes, int kind, void *p) {
    if (m->pools) hh_pool_free(m->pool[kind], p);
    else free(p);
    *bytes -= (int64_t)m->size[kind];
}

/* `size` bytes beyond pool objects (16 KiB). */
void *big_object_alloc(const object_memory *m, int64_t *bytes, size_t size);
void big_object_free(const object_memory *m, int64_t *bytes, void *p, size_t size);

#endif

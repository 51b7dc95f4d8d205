/* The table space's memory by kind of object (see objects.h). */
#include "objects.h"

#include <stdlib.h>
#include <unistd.h>

_Noreturn void table_out_of_memory(void) {
    static const char message[] = "hhtab: out of memory for the tables\n";
    if (write(2, message, sizeof message - 1) < 0) _exit(3);
    _exit(3);
}

bool object_memory_open(object_memory *m) {
    for (int k = 0; k < N_KINDS && m->pools; k++) {
        m->pool[k] = hh_pool_create(m->size[k]);
        if (m->pool[k] == NULL) return false;
    }
    return true;
}

void object_memory_close(object_memory *m) {
    for (int k = 0; k < N_KINDS; k++) {
        if (m->pool[k]) hh_pool_destroy(m->pool[k]);
        m->pool[k] = NULL;
    }
}

size_t object_memory_pages(const object_memory *m) {
    size_t pages = 0;
    for (int k = 0; k < N_KINDS && m->pools; k++) {
        hh_pool_stats st;
        hh_pool_get_stats(m->pool[k], &st);
        pages += st.pages;
    }
    return pages;
}

void *big_object_alloc(const object_memory *m, int64_t *bytes, size_t size) {
    /* Beyond pool objects (16 KiB): hugeheap's or the system's malloc. */
    void *p = m->pools ? hh_malloc(size) : malloc(size);
    if (p == NULL) table_out_of_memory();
    *bytes += (int64_t)size;
    return p;
}

void big_object_free(const object_memory *m, int64_t *bytes, void *p, size_t size) {
    if (m->pools) hh_free(p);
    else free(p);
    *bytes -= (int64_t)size;
}

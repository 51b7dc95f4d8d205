/* libhugeheap: a malloc that backs the heap with 2 MiB transparent huge pages
 * and scales across threads.
 *
 * Most programs need nothing from this header: preload the shared library
 * (LD_PRELOAD=libhugeheap.so) or link the static archive, and every malloc,
 * free, new and delete goes through hugeheap.  The functions below are the
 * same allocator under its own names, for programs that want to call it
 * explicitly next to another malloc, and for tests.
 *
 * Environment (read once, at the first allocation):
 *   HUGEHEAP_THP=on|off|hugetlb  huge pages: transparent (default), none, or
 *                                explicit pages from the kernel's pool,
 *                                falling back to transparent ones when it is
 *                                empty.  GLIBC_THP_ALWAYS=1 means on.
 *   HUGEHEAP_STATS=1             summary on stderr at exit
 *   HUGEHEAP_STATS=json:PATH     one JSON object per process appended to PATH
 *                                (%p in PATH becomes the process id)
 *   HUGEHEAP_RELEASE_DELAY_MS=N  how long empty 2 MiB units wait before they
 *                                go back to the kernel (default 500)
 */
#ifndef HUGEHEAP_H
#define HUGEHEAP_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HUGEHEAP_VERSION "0.1.0"

void *hh_malloc(size_t size);
void hh_free(void *ptr);
void *hh_calloc(size_t count, size_t size);
void *hh_realloc(void *ptr, size_t size);
void *hh_reallocarray(void *ptr, size_t count, size_t size);
void *hh_memalign(size_t alignment, size_t size);
int hh_posix_memalign(void **out, size_t alignment, size_t size);
void *hh_aligned_alloc(size_t alignment, size_t size);
void *hh_valloc(size_t size);
void *hh_pvalloc(size_t size);
size_t hh_usable_size(void *ptr);
void hh_free_sized(void *ptr, size_t size);
void hh_free_aligned_sized(void *ptr, size_t alignment, size_t size);
/* Gives every cached empty 2 MiB unit back to the kernel now; 1 if any. */
int hh_trim(size_t pad);
/* Writes the statistics summary (as HUGEHEAP_STATS=1 does at exit) to fd. */
void hh_print_stats(int fd);
/* True if ptr is a block that hugeheap handed out and has not taken back. */
bool hh_owns(const void *ptr);

/* Same layout as glibc's struct mallinfo2. */
struct hh_mallinfo2 {
    size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
struct hh_mallinfo2 hh_mallinfo2(void);

#ifdef __cplusplus
}
#endif

#endif

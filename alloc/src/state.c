/* The process state every layer reads: the configuration, the secret keys,
 * the reserved range's bounds, and the thread's heap.  Filled once at
 * start-up (init.c, range.c) before anything is handed out; defined here, at
 * the bottom, so that reading it is no call up to the code that fills it. */
#include "internal.h"

hh_config _hh_cfg;
bool _hh_stats_on;
uint64_t _hh_cookie_key;
uintptr_t _hh_list_key;
uintptr_t _hh_free_mark;
#if defined(HH_TESTING)
_Atomic(_hh_test_hook_fn) _hh_test_hook;
#endif

/* The reserved range, set once at start-up (before anything is handed out);
 * a base of 2^63 keeps every pointer out until then. */
uintptr_t _hh_range_base = (uintptr_t)1 << 63;
uintptr_t _hh_range_size;

/* Its free list is always empty, it has no owner and no blocks: every queue
 * of a new heap points here, and so does every slot of the empty heap. */
hh_page _hh_empty_page;
#define EMPTY_PAGES(n) {[0 ...(n)-1] = &_hh_empty_page}
hh_heap _hh_empty_heap = {.direct = EMPTY_PAGES(HH_DIRECT_SLOTS), .queue = EMPTY_PAGES(HH_CLASSES)};
__thread hh_heap *_hh_heap __attribute__((tls_model("initial-exec"))) = &_hh_empty_heap;

/* Pools of fixed-size objects, after the tabling paper's allocator.
 *
 * A pool's pages are 64 KiB, carved from 2 MiB regions of its own (in huge
 * pages once the heap is huge: api_memory.c).
 * Each thread that uses a pool has a `local` for it: the page it allocates
 * from and the other pages it owns.  Owner allocation and free touch only the
 * owner's page (no lock, no atomic); a free by another thread pushes the object
 * on the page's `remote` list with one compare-and-swap and, when that list
 * was empty, raises the owner's `others_have_room` so that the owner looks at
 * its full pages again (as the owner's own frees into them do).  Pages with room and no owner sit on the pool's global
 * list under the pool's lock: a thread whose pages are all full takes one from
 * there before carving a new page, and a thread that exits puts all of its
 * pages there.  A page's lists are those of a small page of the heap, kept
 * and checked by the same code (block_page.h): encoded links, the free mark,
 * the same double-free check. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "block_page.h"
#include "hugeheap.h"
#include "internal.h"
#include "pthread_compat.h"


#define POOL_PAGE ((size_t)64 << 10)
#define POOL_REGION HH_UNIT
#define POOL_SLOTS 1024
#define MAX_OBJECT ((size_t)16 << 10)
#define CARVE_BATCH 32u /* fresh objects a page hands out at a time */

typedef struct pool_local pool_local;

typedef struct pool_page {
    hh_pool *pool;
    _Atomic(pool_local *) owner; /* NULL while on the global list */
    hh_block *free;              /* the owner's (links encoded, as all below: block_page.h) */
    _Atomic(uintptr_t) remote;   /* frees by other threads (the state bits stay NORMAL) */
    _Atomic(uint32_t) carved; /* objects handed out at least once (read by any thread) */
    uint32_t capacity;
    struct pool_page *next;        /* in the owner's list or the global list */
    struct pool_page *next_region; /* first page of each region: the region list */
    bool region_hugetlb;           /* first page of each region: in explicit huge pages */
    char *area;
} pool_page;

struct pool_local {
    hh_pool *pool;
    uint64_t generation; /* the pool's when this was made: stale after destroy */
    pool_page *current;
    pool_page *others;
    _Atomic(uint64_t) allocs, frees;
    _Atomic(bool) others_have_room; /* a free reached a page other than current */
    pool_local *next_in_pool, *next_in_thread;
};

struct hh_pool {
    uint64_t generation; /* unique per creation, across slots */
    bool alive;
    size_t object_size;
    hh_sublock lock;
    pool_page *global;
    pool_page *regions;
    char *region_next, *region_end;
    size_t pages;
    pool_local *locals;
};

static hh_pool pools[POOL_SLOTS]; /* slots guarded by the global lock */
static uint64_t next_generation = 1;
static pthread_key_t exit_key;
static atomic_bool exit_key_ready;
static __thread pool_local **thread_locals __attribute__((tls_model("initial-exec")));
static __thread pool_local *thread_local_list __attribute__((tls_model("initial-exec")));

static void pool_lock(hh_pool *pool) { _hh_sublock_take(&pool->lock); }

static void pool_unlock(hh_pool *pool) { _hh_sublock_give(&pool->lock); }

/* Around fork: every pool lock is held, so that the child finds none taken
 * half-way; pools are visited in slot order, always after the global lock.
 * A prepare handler that runs after ours (registered before it) may use a
 * pool: the forking thread takes its lock again (the sublock's depth). */
void _hh_pools_before_fork(void) {
    for (size_t i = 0; i < POOL_SLOTS; i++) {
        if (pools[i].alive) _hh_sublock_take_for_fork(&pools[i].lock);
    }
}

void _hh_pools_after_fork(bool child) {
    for (size_t i = 0; i < POOL_SLOTS; i++) {
        if (pools[i].alive) _hh_sublock_after_fork(&pools[i].lock, child);
    }
}

static bool local_is_current(const pool_local *local) {
    return local->pool->alive && local->generation == local->pool->generation;
}

/* Thread exit: every page the thread owns goes to its pool's global list. */
static void hand_back_pages(void *list) {
    for (pool_local *l = list; l != NULL; l = l->next_in_thread) {
        hh_pool *pool = l->pool;
        pool_lock(pool);
        if (local_is_current(l)) {
            pool_page *pages[2] = {l->current, l->others};
            for (int i = 0; i < 2; i++) {
                for (pool_page *p = pages[i]; p != NULL;) {
                    pool_page *next = i == 0 ? NULL : p->next;
                    atomic_store_explicit(&p->owner, NULL, memory_order_relaxed);
                    p->next = pool->global;
                    pool->global = p;
                    p = next;
                }
            }
            l->current = l->others = NULL;
        }
        pool_unlock(pool);
    }
    thread_local_list = NULL;
}

HH_API hh_pool *hh_pool_create(size_t object_size) {
    if (object_size == 0 || object_size > MAX_OBJECT) {
        errno = EINVAL;
        return NULL;
    }
    _hh_init();
    if (!atomic_load_explicit(&exit_key_ready, memory_order_acquire)) {
        _hh_lock();
        bool ready = atomic_load_explicit(&exit_key_ready, memory_order_relaxed);
#if defined(HH_SHARED_LIBRARY)
        if (!ready && pthread_key_create == NULL) ready = true; /* no threads to see exit */
#endif
        if (!ready && pthread_key_create(&exit_key, hand_back_pages) == 0) {
            atomic_store_explicit(&exit_key_ready, true, memory_order_release);
        }
        _hh_unlock();
    }
    hh_pool *pool = NULL;
    _hh_lock();
    for (size_t i = 0; i < POOL_SLOTS; i++) {
        if (!pools[i].alive) {
            pool = &pools[i];
            break;
        }
    }
    if (pool != NULL) {
        memset(pool, 0, sizeof *pool);
        pool->generation = next_generation++;
        pool->object_size = _hh_align_up(object_size, 16);
        pool->alive = true;
    }
    _hh_unlock();
    if (pool == NULL) errno = ENOMEM; /* every slot in use */
    return pool;
}

static pool_local *make_local(hh_pool *pool) {
    size_t slot = (size_t)(pool - pools);
    _hh_lock();
    if (thread_locals == NULL) thread_locals = _hh_meta_alloc_locked(POOL_SLOTS * sizeof(pool_local *));
    pool_local *local = thread_locals ? _hh_meta_alloc_locked(sizeof *local) : NULL;
    _hh_unlock();
    if (local == NULL) return NULL;
    memset(local, 0, sizeof *local);
    local->pool = pool;
    local->generation = pool->generation;
    pool_lock(pool);
    local->next_in_pool = pool->locals;
    pool->locals = local;
    pool_unlock(pool);
    local->next_in_thread = thread_local_list;
    thread_local_list = local;
    thread_locals[slot] = local;
    if (atomic_load_explicit(&exit_key_ready, memory_order_acquire)) {
        pthread_setspecific(exit_key, thread_local_list);
    }
    return local;
}

static inline pool_local *local_for(hh_pool *pool) {
    pool_local *local = thread_locals ? thread_locals[pool - pools] : NULL;
    if (HH_LIKELY(local != NULL && local->pool == pool && local->generation == pool->generation)) {
        return local;
    }
    return make_local(pool);
}

/* The page's carved objects, for the checks of block_page.h (any thread). */
static hh_block_area page_blocks(const pool_page *page) {
    size_t size = page->pool->object_size;
    return (hh_block_area){page->area,
                           (size_t)atomic_load_explicit(&page->carved, memory_order_relaxed) * size,
                           size};
}

/* Moves other threads' frees onto the free list: at most `carved` objects
 * can have come back. */
static void collect_remote(pool_page *page) {
    hh_block *head = _hh_blocks_take_remote(&page->remote);
    if (head == NULL) return;
    _hh_blocks_splice(head, page_blocks(page),
                      atomic_load_explicit(&page->carved, memory_order_relaxed), &page->free);
}

#if defined(HH_DEBUG) && HH_DEBUG >= 2
/* The owner's view of a page (HH_ASSERT_EXPENSIVE): no more carved than fit,
 * and its free list no longer than the carved objects, each one of them. */
static bool page_is_valid(const pool_page *page) {
    uint32_t carved = atomic_load_explicit(&page->carved, memory_order_relaxed);
    if (carved > page->capacity || page->area != (const char *)page + _hh_align_up(sizeof *page, 64)) {
        return false;
    }
    bool unused = false;
    return _hh_blocks_count(page_blocks(page), carved, page->free, NULL, &unused) != UINT32_MAX;
}

/* The pool's page count is the pages carved from its regions (pool lock
 * held): every region but the newest whole, the newest up to region_next. */
static bool pool_counts_are_valid(const hh_pool *pool) {
    size_t regions = 0;
    for (const pool_page *r = pool->regions; r != NULL; r = r->next_region) regions++;
    if (regions == 0) return pool->pages == 0;
    size_t in_newest = (size_t)(pool->region_next - (char *)pool->regions) / POOL_PAGE;
    return pool->region_end == (char *)pool->regions + POOL_REGION &&
           pool->pages == (regions - 1) * (POOL_REGION / POOL_PAGE) + in_newest;
}
#endif

/* Gives the page something to hand out if it can. */
static bool refill(pool_page *page) {
    HH_ASSERT_EXPENSIVE(page_is_valid(page));
    if (page->free != NULL) return true;
    collect_remote(page);
    if (page->free != NULL) return true;
    uint32_t carved = atomic_load_explicit(&page->carved, memory_order_relaxed);
    if (carved < page->capacity) {
        /* A batch of fresh objects at once: carving one per call sent every
         * allocation from a fresh page down the slow path. */
        uint32_t n = page->capacity - carved;
        if (n > CARVE_BATCH) n = CARVE_BATCH;
        size_t size = page->pool->object_size;
        page->free = _hh_blocks_carve(page->area + (size_t)carved * size, n, size);
        atomic_store_explicit(&page->carved, carved + n, memory_order_relaxed);
        return true;
    }
    return false;
}

/* A fresh page from the pool's regions (pool lock held). */
static pool_page *carve_page(hh_pool *pool) {
    if (pool->region_next == pool->region_end) {
        bool hugetlb = false;
        char *region = _hh_api_memory_map(POOL_REGION, &hugetlb);
        if (region == NULL) return NULL;
        if (!_hh_granule_reserve(region, POOL_REGION)) {
            _hh_api_memory_unmap(region, POOL_REGION, hugetlb);
            return NULL;
        }
        _hh_granule_set(region, HH_GRANULE_POOL);
        ((pool_page *)region)->next_region = pool->regions;
        ((pool_page *)region)->region_hugetlb = hugetlb;
        pool->regions = (pool_page *)region;
        pool->region_next = region;
        pool->region_end = region + POOL_REGION;
    }
    pool_page *page = (pool_page *)pool->region_next;
    pool->region_next += POOL_PAGE;
    pool_page *keep = page->next_region; /* both set above for a region's first page */
    bool keep_hugetlb = page->region_hugetlb;
    memset(page, 0, sizeof *page);
    page->next_region = keep;
    page->region_hugetlb = keep_hugetlb;
    page->pool = pool;
    page->area = (char *)page + _hh_align_up(sizeof *page, 64);
    page->capacity = (uint32_t)((POOL_PAGE - _hh_align_up(sizeof *page, 64)) / pool->object_size);
    pool->pages++;
    HH_ASSERT_EXPENSIVE(pool_counts_are_valid(pool));
    return page;
}

static void *pop(pool_local *local, pool_page *page) {
    hh_block *block = page->free;
    if (HH_UNLIKELY(!_hh_blocks_take(&page->free, block))) _hh_free_list_corrupted(block);
    _hh_count(&local->allocs, 1);
    return block;
}

static HH_NOINLINE void *alloc_slow(hh_pool *pool, pool_local *local) {
    pool_page *page = local->current;
    if (page != NULL) {
        if (refill(page)) return pop(local, page);
        page->next = local->others; /* full: set aside until objects come back */
        local->others = page;
        local->current = NULL;
    }
    if (atomic_exchange_explicit(&local->others_have_room, false, memory_order_relaxed)) {
        for (pool_page **link = &local->others; *link != NULL; link = &(*link)->next) {
            page = *link;
            collect_remote(page);
            if (page->free != NULL) {
                *link = page->next;
                local->current = page;
                /* Others may have room too: look again when this one is used up. */
                atomic_store_explicit(&local->others_have_room, true, memory_order_relaxed);
                return pop(local, page);
            }
        }
    }
    for (;;) {
        pool_lock(pool);
        page = pool->global;
        if (page != NULL) {
            pool->global = page->next;
        } else {
            page = carve_page(pool);
        }
        if (page != NULL) atomic_store_explicit(&page->owner, local, memory_order_relaxed);
        pool_unlock(pool);
        if (page == NULL) {
            errno = ENOMEM;
            return NULL;
        }
        if (refill(page)) {
            local->current = page;
            return pop(local, page);
        }
        page->next = local->others; /* a full page a finished thread left */
        local->others = page;
    }
}

HH_API void *hh_pool_alloc(hh_pool *pool) {
    pool_local *local = local_for(pool);
    if (HH_UNLIKELY(local == NULL)) {
        errno = ENOMEM;
        return NULL;
    }
    pool_page *page = local->current;
    if (HH_LIKELY(page != NULL && page->free != NULL)) return pop(local, page);
    return alloc_slow(pool, local);
}

HH_API void hh_pool_free(hh_pool *pool, void *object) {
    if (object == NULL) return;
    pool_page *page = (pool_page *)((uintptr_t)object & ~(uintptr_t)(POOL_PAGE - 1));
    if (_hh_granule_kind(object) != HH_GRANULE_POOL || page->pool != pool) {
        _hh_fatal("hh_pool_free(): object not from this pool", object);
    }
    if (!_hh_blocks_hold(page_blocks(page), object)) {
        _hh_fatal("hh_pool_free(): invalid pointer (not the start of an object)", object);
    }
    pool_local *local = local_for(pool);
    hh_block *block = object;
    bool owner = local != NULL && atomic_load_explicit(&page->owner, memory_order_relaxed) == local;
    if (HH_UNLIKELY(block->mark == _hh_free_mark)) {
        _hh_blocks_check_double(page_blocks(page), page->capacity, page->free, NULL, &page->remote,
                                block, owner, "hh_pool_free(): double free detected of");
    }
    if (owner) {
        _hh_blocks_push(&page->free, block);
        if (page != local->current) {
            atomic_store_explicit(&local->others_have_room, true, memory_order_relaxed);
        }
    } else {
        uintptr_t before = _hh_blocks_push_remote(&page->remote, block);
        pool_local *owner = atomic_load_explicit(&page->owner, memory_order_relaxed);
        if ((before & ~HH_PAGE_STATE_MASK) == 0 && owner != NULL) {
            atomic_store_explicit(&owner->others_have_room, true, memory_order_relaxed);
        }
    }
    if (local != NULL) _hh_count(&local->frees, 1);
}

HH_API void hh_pool_destroy(hh_pool *pool) {
    if (pool == NULL) return;
    pool_lock(pool);
    pool_page *region = pool->regions;
    pool->regions = NULL;
    pool->global = NULL;
    pool_unlock(pool);
    while (region != NULL) {
        pool_page *next = region->next_region;
        _hh_granule_set(region, HH_GRANULE_FOREIGN);
        _hh_api_memory_unmap(region, POOL_REGION, region->region_hugetlb);
        region = next;
    }
    _hh_lock();
    pool->alive = false; /* locals of threads still holding it are stale from here */
    pool->generation = 0;
    _hh_unlock();
}

HH_API void hh_pool_get_stats(const hh_pool *pool, hh_pool_stats *stats) {
    hh_pool *p = (hh_pool *)pool;
    uint64_t allocs = 0, frees = 0;
    pool_lock(p);
    for (pool_local *l = p->locals; l != NULL; l = l->next_in_pool) {
        allocs += atomic_load_explicit(&l->allocs, memory_order_relaxed);
        frees += atomic_load_explicit(&l->frees, memory_order_relaxed);
    }
    stats->object_size = p->object_size;
    stats->in_use = (size_t)(allocs - frees);
    stats->pages = p->pages;
    pool_unlock(p);
}

/* Reads the environment once, at the first allocation.
 *
 * The first allocation can come before libc has set `environ` (the dynamic
 * loader allocates while it starts the process), so when `environ` is not
 * there yet we read the process's initial environment from /proc/self/environ
 * with plain system calls: nothing here may allocate. */
#include <stdlib.h>
#include <sys/sysinfo.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* MiB of pages and blocks in use from which the heap is huge.  A higher
 * threshold keeps medium heaps as lean as glibc's but costs them the user
 * time huge pages save (a fifth for ABC's bmc3 on a 200 MiB heap), and every
 * heap that passes it collapses that much memory at once; the sweep is in
 * docs/notebook/2026-11-24-where-the-heap-turns-huge.md. */
#define HUGE_THRESHOLD_MB_DEFAULT 32
/* At most 1/32 of the process's CPU time goes to what huge pages cost beyond
 * small pages (policy.c): a program that gains nothing from them loses about
 * 3%.  A larger share gives heaps built fast their huge pages sooner; the
 * measurements are in
 * docs/notebook/2026-11-27-the-budget-for-huge-pages-where-they-did-not-pay.md. */
#define HUGE_BUDGET_SHARE_DEFAULT 32
#define STRINGIFY_VALUE(x) #x
#define STRINGIFY(x) STRINGIFY_VALUE(x)

extern char **environ;

/* A variable's keyword and the value it stands for. */
typedef struct keyword {
    const char *word;
    int value;
} keyword;

/* The value `word` stands for among `n` keywords; if none, `current` (the
 * default), after `warning` on stderr. */
static int keyword_or_warn(const char *word, const keyword *keywords, size_t n, int current,
                           const char *warning) {
    for (size_t i = 0; i < n; i++) {
        if (strcmp(word, keywords[i].word) == 0) return keywords[i].value;
    }
    _hh_warn(warning);
    return current;
}
#define KEYWORDS(table) table, sizeof table / sizeof table[0]

static bool has_prefix(const char *s, const char *prefix) {
    while (*prefix) {
        if (*s++ != *prefix++) return false;
    }
    return true;
}

/* Variables we care about, copied out of whichever source we read. */
typedef struct env_values {
    char thp[32];
    char glibc_thp_always[8];
    char stats[600];
    char release_delay[32];
    char huge_threshold[32];
    char huge_units[16];
    char huge_budget[16];
    char budget_share[32];
    char growth_heap[8];
    char pool_max[32];
    char small_heaps[16];
    char lending[8];
    char pool_move[8];
    bool small_heaps_set, lending_set, pool_move_set;
    bool thp_set, glibc_thp_set, stats_set, delay_set, threshold_set, units_set, budget_set,
        share_set, growth_set, pool_max_set;
} env_values;

static void copy_value(char *dst, size_t cap, const char *src, size_t len) {
    if (len >= cap) len = cap - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

static void take_entry(env_values *v, const char *entry, size_t len) {
    static const struct {
        const char *prefix;
        size_t offset, cap, flag;
    } known[] = {
        {"HUGEHEAP_THP=", offsetof(env_values, thp), sizeof(((env_values *)0)->thp),
         offsetof(env_values, thp_set)},
        {"GLIBC_THP_ALWAYS=", offsetof(env_values, glibc_thp_always),
         sizeof(((env_values *)0)->glibc_thp_always), offsetof(env_values, glibc_thp_set)},
        {"HUGEHEAP_STATS=", offsetof(env_values, stats), sizeof(((env_values *)0)->stats),
         offsetof(env_values, stats_set)},
        {"HUGEHEAP_RELEASE_DELAY_MS=", offsetof(env_values, release_delay),
         sizeof(((env_values *)0)->release_delay), offsetof(env_values, delay_set)},
        {"HUGEHEAP_HUGE_THRESHOLD_MB=", offsetof(env_values, huge_threshold),
         sizeof(((env_values *)0)->huge_threshold), offsetof(env_values, threshold_set)},
        {"HUGEHEAP_HUGE_UNITS=", offsetof(env_values, huge_units),
         sizeof(((env_values *)0)->huge_units), offsetof(env_values, units_set)},
        {"HUGEHEAP_HUGE_BUDGET=", offsetof(env_values, huge_budget),
         sizeof(((env_values *)0)->huge_budget), offsetof(env_values, budget_set)},
        {"HUGEHEAP_HUGE_BUDGET_SHARE=", offsetof(env_values, budget_share),
         sizeof(((env_values *)0)->budget_share), offsetof(env_values, share_set)},
        {"HUGEHEAP_GROWTH_HEAP=", offsetof(env_values, growth_heap),
         sizeof(((env_values *)0)->growth_heap), offsetof(env_values, growth_set)},
        {"HUGEHEAP_POOL_MAX_MB=", offsetof(env_values, pool_max),
         sizeof(((env_values *)0)->pool_max), offsetof(env_values, pool_max_set)},
        {"HUGEHEAP_SMALL_HEAPS=", offsetof(env_values, small_heaps),
         sizeof(((env_values *)0)->small_heaps), offsetof(env_values, small_heaps_set)},
        {"HUGEHEAP_LENDING=", offsetof(env_values, lending), sizeof(((env_values *)0)->lending),
         offsetof(env_values, lending_set)},
        {"HUGEHEAP_POOL_MOVE=", offsetof(env_values, pool_move),
         sizeof(((env_values *)0)->pool_move), offsetof(env_values, pool_move_set)},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        size_t plen = strlen(known[i].prefix);
        if (len >= plen && has_prefix(entry, known[i].prefix)) {
            copy_value((char *)v + known[i].offset, known[i].cap, entry + plen, len - plen);
            *(bool *)((char *)v + known[i].flag) = true;
        }
    }
}

/* /proc/self/environ, read a piece at a time: entries end with a NUL. */
typedef struct environ_reader {
    env_values *values;
    char entry[700]; /* long entries we do not care about are skipped */
    size_t length;
    bool overflow;
} environ_reader;

static void take_environ_piece(void *arg, const char *piece, size_t n) {
    environ_reader *r = arg;
    for (size_t i = 0; i < n; i++) {
        if (piece[i] == '\0') {
            if (!r->overflow) take_entry(r->values, r->entry, r->length);
            r->length = 0;
            r->overflow = false;
        } else if (r->length < sizeof r->entry) {
            r->entry[r->length++] = piece[i];
        } else {
            r->overflow = true;
        }
    }
}

static void read_environment(env_values *v) {
    char **env = environ;
    if (env != NULL) {
        for (; *env; env++) take_entry(v, *env, strlen(*env));
        return;
    }
    environ_reader reader = {.values = v, .length = 0, .overflow = false};
    _hh_os_read_file("/proc/self/environ", take_environ_piece, &reader);
}

static bool parse_u64(const char *s, uint64_t *out) {
    if (*s == '\0') return false;
    uint64_t x = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        if (x > (UINT64_MAX - 9) / 10) return false;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    *out = x;
    return true;
}

/* A variable's number of MiB (up to 2^40) as bytes in *bytes; otherwise the
 * warning, and *bytes kept. */
static void take_mib(const char *value, uint64_t *bytes, const char *warning) {
    uint64_t mib;
    if (parse_u64(value, &mib) && mib <= ((uint64_t)1 << 40)) {
        *bytes = mib << 20;
    } else {
        _hh_warn(warning);
    }
}

/* The kernel's THP setting (always, madvise or never), or "" where unknown. */
static void read_system_thp(char *out, size_t cap) {
    out[0] = '\0';
    char buf[128];
    size_t n = _hh_os_read_small_file("/sys/kernel/mm/transparent_hugepage/enabled", buf,
                                      sizeof buf - 1);
    if (n == 0) return;
    buf[n] = '\0';
    char *open_bracket = strchr(buf, '['), *close_bracket = open_bracket ? strchr(open_bracket, ']') : NULL;
    if (!open_bracket || !close_bracket) return;
    size_t len = (size_t)(close_bracket - open_bracket - 1);
    if (len >= cap) len = cap - 1;
    memcpy(out, open_bracket + 1, len);
    out[len] = '\0';
}

void _hh_config_read(hh_config *cfg) {
    env_values v;
    memset(&v, 0, sizeof v);
    read_environment(&v);

    cfg->thp = HH_THP_ON;
    cfg->stats_print = false;
    cfg->stats_json_path[0] = '\0';
    cfg->release_delay_ms = 10000;
    cfg->huge_threshold = (uint64_t)HUGE_THRESHOLD_MB_DEFAULT << 20;
    cfg->huge_units_dense = true;
    /* docs/notebook/2026-11-27-the-growth-heap-for-blocks-of-1-16-kib.md */
    cfg->growth_heap = HH_GROWTH_OFF;
    cfg->small_heaps = HH_SMALL_CLASSES; /* glibc_heap.c says why */
    cfg->lending = true;                 /* heap.c's alloc_freed says when */
    cfg->pool_move = true;               /* release.c's move_pool_unit_locked says when */
    cfg->huge_budget = HH_BUDGET_AUTO;
    cfg->huge_budget_share = HUGE_BUDGET_SHARE_DEFAULT;
    cfg->pool_max = UINT64_MAX; /* HUGEHEAP_POOL_MAX_MB: no cap unless asked */
    /* No block can be larger than the machine's memory and swap together. */
    struct sysinfo info;
    cfg->memory_limit = SIZE_MAX;
    if (sysinfo(&info) == 0 && info.mem_unit > 0) {
        uint64_t total = ((uint64_t)info.totalram + info.totalswap) * info.mem_unit;
        if (total > 0 && total < SIZE_MAX) cfg->memory_limit = (size_t)total;
    }

    if (v.thp_set) {
        static const keyword modes[] = {{"on", HH_THP_ON},   {"1", HH_THP_ON},
                                        {"off", HH_THP_OFF}, {"0", HH_THP_OFF},
                                        {"hugetlb", HH_THP_HUGETLB}};
        cfg->thp = (enum hh_thp_mode)keyword_or_warn(
            v.thp, KEYWORDS(modes), cfg->thp,
            "hugeheap: unknown HUGEHEAP_THP value (expected on, off or hugetlb); using on\n");
    } else if (v.glibc_thp_set && strcmp(v.glibc_thp_always, "1") != 0 &&
               strcmp(v.glibc_thp_always, "0") != 0) {
        _hh_warn("hugeheap: unknown GLIBC_THP_ALWAYS value (expected 1); using huge pages\n");
    }
    /* GLIBC_THP_ALWAYS=1 asks for what is already our default: huge pages on. */
    /* Where the administrator set THP to never, no transparent huge page is
     * made (MADV_COLLAPSE would make them all the same); the explicit pool
     * of HUGEHEAP_THP=hugetlb is another matter. */
    read_system_thp(cfg->system_thp, sizeof cfg->system_thp);
    if (cfg->thp == HH_THP_ON && strcmp(cfg->system_thp, "never") == 0) cfg->thp = HH_THP_OFF;

    if (v.stats_set) {
        if (strcmp(v.stats, "1") == 0) {
            cfg->stats_print = true;
        } else if (has_prefix(v.stats, "json:") && v.stats[5] != '\0') {
            copy_value(cfg->stats_json_path, sizeof cfg->stats_json_path, v.stats + 5,
                       strlen(v.stats + 5));
        } else if (strcmp(v.stats, "0") != 0 && v.stats[0] != '\0') {
            _hh_warn("hugeheap: unknown HUGEHEAP_STATS value (expected 1 or json:PATH); "
                    "statistics off\n");
        }
    }

    if (v.delay_set) {
        uint64_t ms;
        if (parse_u64(v.release_delay, &ms)) {
            cfg->release_delay_ms = ms;
        } else {
            _hh_warn("hugeheap: HUGEHEAP_RELEASE_DELAY_MS is not a number of milliseconds; "
                    "using 10000\n");
        }
    }

    if (v.threshold_set) {
        take_mib(v.huge_threshold, &cfg->huge_threshold,
                 "hugeheap: HUGEHEAP_HUGE_THRESHOLD_MB is not a number of MiB; using "
                 STRINGIFY(HUGE_THRESHOLD_MB_DEFAULT) "\n");
    }
    if (v.pool_max_set) {
        take_mib(v.pool_max, &cfg->pool_max,
                 "hugeheap: HUGEHEAP_POOL_MAX_MB is not a number of MiB; no cap on explicit "
                 "huge pages\n");
    }

    if (v.units_set) {
        static const keyword units[] = {{"dense", true}, {"all", false}};
        cfg->huge_units_dense = keyword_or_warn(
            v.huge_units, KEYWORDS(units), cfg->huge_units_dense,
            "hugeheap: unknown HUGEHEAP_HUGE_UNITS value (expected dense or all); using dense\n");
    }

    if (v.growth_set) {
        static const keyword takes[] = {{"big", HH_GROWTH_BIG}, {"on", HH_GROWTH_ALL},
                                        {"1", HH_GROWTH_ALL}, {"off", HH_GROWTH_OFF},
                                        {"0", HH_GROWTH_OFF}};
        cfg->growth_heap = (enum hh_growth_heap)keyword_or_warn(
            v.growth_heap, KEYWORDS(takes), cfg->growth_heap,
            "hugeheap: unknown HUGEHEAP_GROWTH_HEAP value (expected off, big or on); using off\n");
    }

    if (v.small_heaps_set) {
        static const keyword servers[] = {{"classes", HH_SMALL_CLASSES}, {"glibc", HH_SMALL_GLIBC}};
        cfg->small_heaps = (enum hh_small_heaps)keyword_or_warn(
            v.small_heaps, KEYWORDS(servers), cfg->small_heaps,
            "hugeheap: unknown HUGEHEAP_SMALL_HEAPS value (expected classes or glibc); "
            "using classes\n");
    }

    if (v.lending_set) {
        static const keyword lending[] = {{"auto", 1}, {"off", 0}};
        cfg->lending = keyword_or_warn(v.lending, KEYWORDS(lending), cfg->lending,
                                       "hugeheap: unknown HUGEHEAP_LENDING value (expected auto "
                                       "or off); using auto\n") != 0;
    }

    if (v.pool_move_set) {
        static const keyword pool_move[] = {{"auto", 1}, {"off", 0}};
        cfg->pool_move = keyword_or_warn(v.pool_move, KEYWORDS(pool_move), cfg->pool_move,
                                         "hugeheap: unknown HUGEHEAP_POOL_MOVE value (expected "
                                         "auto or off); using auto\n") != 0;
    }

    if (v.budget_set) {
        static const keyword budgets[] = {
            {"auto", HH_BUDGET_AUTO}, {"off", HH_BUDGET_OFF}, {"always", HH_BUDGET_ALWAYS}};
        cfg->huge_budget = (enum hh_huge_budget)keyword_or_warn(
            v.huge_budget, KEYWORDS(budgets), cfg->huge_budget,
            "hugeheap: unknown HUGEHEAP_HUGE_BUDGET value (expected auto, off or always); "
            "using auto\n");
    }

    if (v.share_set) {
        uint64_t share;
        if (parse_u64(v.budget_share, &share) && share >= 1 && share <= 1000000) {
            cfg->huge_budget_share = share;
        } else {
            _hh_warn("hugeheap: HUGEHEAP_HUGE_BUDGET_SHARE is not a whole number from 1 to "
                        "1000000; using " STRINGIFY(HUGE_BUDGET_SHARE_DEFAULT) "\n");
        }
    }
}

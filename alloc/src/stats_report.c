/* The report of what the heap did (the counters it reads are counters.c's),
 * printed at exit (HUGEHEAP_STATS=1) or written as one
 * JSON object per process (HUGEHEAP_STATS=json:PATH, appended; %p in PATH
 * becomes the process id).
 *
 * Besides counts, it says where the memory went at the peak of the memory
 * held: the blocks in use, the free room inside small pages, the empty pages
 * kept for reuse, the free memory the page heap keeps (the release policy's
 * or the holes of a huge page in use), region headers, large blocks and
 * their rounding.  The peak is looked at in detail (the pages walked) each
 * time the memory held passes the last detailed look by 1/32, so the
 * breakdown is of a moment within 3% of the true peak.
 *
 * One list of fields feeds both the text and the JSON.  Formatting is done
 * by hand: stdio may allocate, and this runs while the process is shutting
 * down. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "kind.h"

/* Where the memory held was at its peak (bytes). */
typedef struct breakdown {
    uint64_t held;          /* what the heap held: the sum of the rest */
    uint64_t blocks;        /* small blocks in use (their class sizes) */
    uint64_t small_free;    /* free blocks in small pages in use */
    uint64_t unwritten;     /* parts of small pages not carved yet (held once huge) */
    uint64_t empty_pages;   /* empty small pages kept by threads */
    uint64_t medium;        /* medium blocks (whole pages) */
    uint64_t growth;        /* growth heap blocks in use */
    uint64_t growth_free;   /* the rest of its spans (written ones only while not huge) */
    uint64_t free_kept;     /* free pages holding memory that the release policy keeps */
    uint64_t free_holes;    /* free pages holding memory inside a huge page in use */
    uint64_t untouched;     /* never written parts of huge pages in use */
    uint64_t headers;       /* region headers */
    uint64_t large;         /* large blocks as asked for */
    uint64_t large_rounding;
    uint64_t large_cached;
    uint64_t api;           /* hh_pool and hh_arena memory */
    uint64_t live_blocks;   /* small blocks in use (a count, not in held) */
    uint64_t units_by_use[4]; /* hh_region_usage's (counts, not in held) */
} breakdown;

static breakdown peak_breakdown; /* global lock */
static int64_t peak_looked_at;   /* the held value of peak_breakdown (global lock) */
static int saved_stderr = -1; /* for HUGEHEAP_STATS=1 in programs that close stderr */

/* The owner writes `used` without atomics; a reading that races with it is
 * off by the blocks handed out meanwhile, which a statistic can bear. */
__attribute__((no_sanitize("thread"))) static uint32_t racy_used(const hh_page *page) {
    return *(const volatile uint32_t *)&page->used;
}

/* Walks the regions (global lock held). */
static void look_locked(breakdown *b) {
    memset(b, 0, sizeof *b);
    bool huge = _hh_policy_every_unit_huge();
    uint64_t small_pages = 0;
    for (hh_region *r = _hh_region_first(); r != NULL; r = r->next) {
        for (size_t slot = 0; slot < HH_REGION_SLOTS; slot++) {
            const hh_page *page = _hh_page_of((char *)r + (slot << HH_SPAGE_SHIFT));
            uint32_t span = HH_SHARED_LOAD(page->span);
            if (span == 0) continue;
            uint32_t used_blocks = racy_used(page);
            uint64_t used = (uint64_t)used_blocks * page->block_size;
            uint64_t written = (uint64_t)page->written_pages << HH_OS_PAGE_SHIFT;
            if (used > written) used = written;
            b->blocks += used;
            b->live_blocks += used_blocks;
            b->small_free += written - used;
            b->unwritten += HH_SPAGE - written;
            small_pages++;
        }
    }
    hh_region_usage usage;
    _hh_usage_regions_locked(&usage);
    memcpy(b->units_by_use, usage.units_by_use, sizeof b->units_by_use);
    b->medium = _hh_stats_medium_bytes();
    uint64_t growth_written, growth_spans;
    _hh_growth_usage(&b->growth, &growth_written, &growth_spans);
    uint64_t growth_held = huge ? growth_spans : growth_written;
    b->growth_free = growth_held > b->growth ? growth_held - b->growth : 0;
    uint64_t in_pages = small_pages * HH_SPAGE + b->medium + growth_spans;
    b->empty_pages = usage.used_bytes > in_pages ? usage.used_bytes - in_pages : 0;
    if (!huge) b->unwritten = 0; /* not resident: no part of what is held */
    b->free_kept = usage.purgeable_bytes;
    b->free_holes = usage.dirty_free_bytes > usage.purgeable_bytes
                        ? usage.dirty_free_bytes - usage.purgeable_bytes : 0;
    b->headers = usage.header_bytes;
    uint64_t accounted = usage.used_bytes + usage.dirty_free_bytes + usage.header_bytes;
    if (huge && usage.touched_unit_bytes > accounted) {
        b->untouched = usage.touched_unit_bytes - accounted;
    }
    hh_large_usage large;
    _hh_large_usage(&large);
    b->large = large.requested_bytes;
    b->large_rounding = large.mapped_bytes - large.requested_bytes;
    b->large_cached = large.cached_bytes;
    b->api = _hh_stats_api_bytes();
    b->held = b->blocks + b->small_free + b->unwritten + b->empty_pages + b->medium +
              b->growth + b->growth_free +
              b->free_kept + b->free_holes + b->untouched + b->headers + b->large +
              b->large_rounding + b->large_cached + b->api;
}

void _hh_stats_peak_reached_locked(int64_t held) {
    if (held > peak_looked_at + peak_looked_at / 32) {
        look_locked(&peak_breakdown);
        peak_looked_at = held;
    }
}

int64_t _hh_stats_in_use(void) {
    breakdown b;
    _hh_lock();
    look_locked(&b);
    _hh_unlock();
    return (int64_t)(b.blocks + b.medium + b.growth + b.large);
}

/* ------------------------------------------------------------- readings */

typedef struct memory_reading {
    bool ok;
    uint64_t anonymous_kb, anon_huge_kb;
} memory_reading;

static uint64_t parse_kb(const char *line) {
    uint64_t x = 0;
    while (*line == ' ' || *line == '\t') line++;
    while (*line >= '0' && *line <= '9') x = x * 10 + (uint64_t)(*line++ - '0');
    return x;
}

/* Sums the Anonymous and AnonHugePages lines of an smaps-style file, read a
 * piece at a time and put together a line at a time in a fixed buffer. */
typedef struct smaps_reader {
    memory_reading *reading;
    char line[256];
    size_t length;
} smaps_reader;

static void take_smaps_piece(void *arg, const char *piece, size_t n) {
    smaps_reader *s = arg;
    memory_reading *r = s->reading;
    for (size_t i = 0; i < n; i++) {
        if (piece[i] != '\n') {
            if (s->length < sizeof s->line - 1) s->line[s->length++] = piece[i];
            continue;
        }
        s->line[s->length] = '\0';
        if (strncmp(s->line, "Anonymous:", 10) == 0) r->anonymous_kb += parse_kb(s->line + 10);
        if (strncmp(s->line, "AnonHugePages:", 14) == 0) r->anon_huge_kb += parse_kb(s->line + 14);
        s->length = 0;
    }
}

static bool read_smaps(const char *path, memory_reading *r) {
    smaps_reader reader = {.reading = r, .length = 0};
    if (!_hh_os_read_file(path, take_smaps_piece, &reader)) return false;
    r->ok = true;
    return true;
}

static memory_reading read_memory(void) {
    memory_reading r = {false, 0, 0};
    if (!read_smaps("/proc/self/smaps_rollup", &r)) read_smaps("/proc/self/smaps", &r);
    return r;
}

static const char *mode_name(void) {
    switch (_hh_cfg.thp) {
    case HH_THP_OFF: return "off";
    case HH_THP_HUGETLB: return "hugetlb";
    default: return "on";
    }
}

/* --------------------------------------------------------------- fields */

enum kind { BYTES, COUNT, RATIO, WORD };

typedef struct field {
    const char *key;   /* the JSON key */
    const char *label; /* the text's words; NULL: JSON only */
    enum kind kind;
    uint64_t value;    /* RATIO: thousandths, or UINT64_MAX for unknown */
    const char *word;  /* WORD */
} field;

#define MAX_FIELDS 64

typedef struct snapshot {
    field fields[MAX_FIELDS];
    size_t count;
} snapshot;

static void add(snapshot *s, const char *key, const char *label, enum kind kind, uint64_t value) {
    if (s->count < MAX_FIELDS) s->fields[s->count++] = (field){key, label, kind, value, NULL};
}

static void add_word(snapshot *s, const char *key, const char *label, const char *word) {
    if (s->count < MAX_FIELDS) s->fields[s->count++] = (field){key, label, WORD, 0, word};
}

#define LOAD(x) atomic_load_explicit(&_hh_gstats.x, memory_order_relaxed)

static void take_snapshot(snapshot *s) {
    s->count = 0;
    hh_heap_stats heaps;
    uint64_t threads;
    _hh_heap_stats_sum(&heaps, &threads);
    breakdown now;
    _hh_lock();
    look_locked(&now);
    breakdown peak = peak_breakdown;
    _hh_unlock();
    memory_reading memory = read_memory();

    uint64_t small_allocs = atomic_load_explicit(&heaps.allocs, memory_order_relaxed);
    /* Every block handed out and not in use now was freed (at exit, exact). */
    uint64_t small_frees = small_allocs > now.live_blocks ? small_allocs - now.live_blocks : 0;
    uint64_t growth_allocs = atomic_load_explicit(&heaps.growth_allocs, memory_order_relaxed);
    uint64_t growth_frees = atomic_load_explicit(&heaps.growth_frees, memory_order_relaxed);
    uint64_t allocs = small_allocs + growth_allocs + LOAD(medium_allocs) + LOAD(large_allocs);
    uint64_t frees = small_frees + growth_frees + LOAD(medium_frees) + LOAD(large_frees);

    add_word(s, "mode", "mode", mode_name());
    add_word(s, "system_thp", "system THP", _hh_cfg.system_thp[0] ? _hh_cfg.system_thp : "unknown");
    add(s, "mapped_bytes", "held now", BYTES, (uint64_t)LOAD(mapped));
    add(s, "mapped_peak_bytes", "held at peak", BYTES, (uint64_t)LOAD(mapped_peak));
    add(s, "in_use_peak_bytes", "in blocks at that peak", BYTES,
        peak.blocks + peak.medium + peak.growth + peak.large);
    add(s, "peak_blocks_bytes", "  small blocks", BYTES, peak.blocks);
    add(s, "peak_small_free_bytes", "  free room in small pages", BYTES, peak.small_free);
    add(s, "peak_unwritten_bytes", "  small pages not carved yet", BYTES, peak.unwritten);
    add(s, "peak_empty_pages_bytes", "  empty small pages kept", BYTES, peak.empty_pages);
    add(s, "peak_medium_bytes", "  medium blocks", BYTES, peak.medium);
    add(s, "peak_growth_bytes", "  blocks in the growth heap", BYTES, peak.growth);
    add(s, "peak_growth_free_bytes", "  free room in the growth heap", BYTES, peak.growth_free);
    add(s, "peak_free_kept_bytes", "  free memory kept (release policy)", BYTES, peak.free_kept);
    add(s, "peak_free_holes_bytes", "  free memory in huge pages in use", BYTES, peak.free_holes);
    add(s, "peak_untouched_bytes", "  unwritten parts of huge pages", BYTES, peak.untouched);
    add(s, "peak_headers_bytes", "  region headers", BYTES, peak.headers);
    add(s, "peak_large_bytes", "  large blocks", BYTES, peak.large);
    add(s, "peak_large_rounding_bytes", "  large block rounding", BYTES, peak.large_rounding);
    add(s, "peak_large_cached_bytes", "  large blocks cached", BYTES, peak.large_cached);
    add(s, "peak_api_bytes", "  pools and arenas", BYTES, peak.api);
    add(s, "peak_units_mostly_used", "2 MiB units at that peak by pages in use: 3/4 or more", COUNT,
        peak.units_by_use[3]);
    add(s, "peak_units_half_used", "  1/2 to 3/4", COUNT, peak.units_by_use[2]);
    add(s, "peak_units_quarter_used", "  1/4 to 1/2", COUNT, peak.units_by_use[1]);
    add(s, "peak_units_little_used", "  under 1/4", COUNT, peak.units_by_use[0]);
    add(s, "allocs", "allocations", COUNT, allocs);
    add(s, "frees", "frees", COUNT, frees);
    add(s, "remote_frees", "  from other threads", COUNT,
        atomic_load_explicit(&heaps.remote_frees, memory_order_relaxed));
    add(s, "lent_allocs", "  from a larger class's freed blocks (lending)", COUNT,
        atomic_load_explicit(&heaps.lent, memory_order_relaxed));
    add(s, "reallocs", "reallocs", COUNT, atomic_load_explicit(&heaps.reallocs, memory_order_relaxed));
    add(s, "growth_allocs", "growth heap blocks", COUNT, growth_allocs);
    add(s, "medium_allocs", "medium blocks", COUNT, LOAD(medium_allocs));
    add(s, "large_allocs", "large blocks", COUNT, LOAD(large_allocs));
    add(s, "large_frees", NULL, COUNT, LOAD(large_frees));
    add(s, "mremap_moves", "mremap moves", COUNT,
        atomic_load_explicit(&heaps.mremap_moves, memory_order_relaxed));
    add(s, "mremap_in_place", NULL, COUNT,
        atomic_load_explicit(&heaps.mremap_in_place, memory_order_relaxed));
    add(s, "threads", "threads", COUNT, threads);
    add(s, "glibc_blocks", "blocks glibc made while the heap was small", COUNT,
        _hh_glibc_blocks_served());
    add(s, "glibc_live_bytes", "  bytes of them live", BYTES, _hh_glibc_live_bytes());
    add(s, "regions_made", "regions", COUNT, LOAD(regions_made));
    add(s, "units_released", "2 MiB units given back", COUNT, LOAD(units_released));
    add(s, "units_refaulted", "  and needed again", COUNT, LOAD(units_refaulted));
    add(s, "bytes_released", "bytes given back", BYTES, LOAD(bytes_released));
    add(s, "slack_bytes_released", "  as free memory beyond a sixteenth of the demand", BYTES,
        LOAD(slack_bytes_released));
    add(s, "units_split", "  huge pages split for it", COUNT, LOAD(units_split));
    add(s, "pool_units_moved", "  pool pages moved into 4 KiB pages for it", COUNT,
        LOAD(pool_units_moved));
    add(s, "blocks_shut", "freed blocks shut (PROT_NONE)", COUNT, LOAD(blocks_shut));
    add(s, "units_promoted", "units collapsed into huge pages", COUNT, LOAD(units_promoted));
    add(s, "units_into_pool", "  of them moved into pool pages once written", COUNT,
        LOAD(units_into_pool));
    add(s, "units_populated", "units made huge before the program's first touch", COUNT,
        LOAD(units_populated));
    add(s, "huge_unit_cost_us", "  microseconds each (collapsed or populated), on average",
        COUNT, _hh_policy_unit_cost_ns() / 1000);
    add(s, "huge_cost_ms", "  ms of it beyond 4 KiB pages' cost (the budget's)", COUNT,
        LOAD(huge_cost_ns) / 1000000);
    add(s, "huge_dearest_cost_us", "  microseconds of it in the dearest make", COUNT,
        _hh_policy_dearest_cost_ns() / 1000);
    add(s, "huge_deferred", "  times the budget said wait", COUNT, LOAD(huge_deferred));
    add(s, "hugetlb_fallbacks", NULL, COUNT, LOAD(hugetlb_fallbacks));
    add(s, "hugetlb_capped", NULL, COUNT, LOAD(hugetlb_capped));
    add(s, "hugetlb_bytes", NULL, BYTES, LOAD(hugetlb_bytes));
    bool ok = memory.ok;
    add(s, "anonymous_bytes", "anonymous memory", ok ? BYTES : RATIO,
        ok ? memory.anonymous_kb * 1024 : UINT64_MAX);
    add(s, "anon_huge_bytes", "  in huge pages", ok ? BYTES : RATIO,
        ok ? memory.anon_huge_kb * 1024 : UINT64_MAX);
    uint64_t share = UINT64_MAX;
    if (ok) {
        uint64_t den = memory.anonymous_kb, num = memory.anon_huge_kb;
        share = den ? (num * 1000 + den / 2) / den : 0;
        if (share > 1000) share = 1000;
    }
    add(s, "huge_share", "  huge-page share", RATIO, share);
}

/* ------------------------------------------------------------ formatting */

typedef struct text {
    char buf[6144];
    size_t len;
} text;

static void put(text *t, const char *s) {
    while (*s && t->len < sizeof t->buf - 1) t->buf[t->len++] = *s++;
}

static void put_u64(text *t, uint64_t x) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + x % 10);
        x /= 10;
    } while (x);
    while (n > 0 && t->len < sizeof t->buf - 1) t->buf[t->len++] = digits[--n];
}

/* Thousandths as 0.123. */
static void put_ratio(text *t, uint64_t milli) {
    put_u64(t, milli / 1000);
    put(t, ".");
    char frac[4] = {(char)('0' + milli % 1000 / 100), (char)('0' + milli % 100 / 10),
                    (char)('0' + milli % 10), 0};
    put(t, frac);
}

static void put_mib(text *t, uint64_t bytes) {
    put_u64(t, bytes >> 20);
    put(t, ".");
    put_u64(t, (bytes & ((1 << 20) - 1)) * 10 >> 20);
    put(t, " MiB");
}

static void format_json(text *t, const snapshot *s) {
    put(t, "{\"pid\":");
    put_u64(t, (uint64_t)getpid());
    for (size_t i = 0; i < s->count; i++) {
        const field *f = &s->fields[i];
        put(t, ",\"");
        put(t, f->key);
        put(t, "\":");
        if (f->kind == WORD) {
            put(t, "\"");
            put(t, f->word);
            put(t, "\"");
        } else if (f->kind == RATIO && f->value == UINT64_MAX) {
            put(t, "null");
        } else if (f->kind == RATIO) {
            put_ratio(t, f->value);
        } else {
            put_u64(t, f->value);
        }
    }
    put(t, "}\n");
}

static void format_text(text *t, const snapshot *s) {
    put(t, "hugeheap: pid ");
    put_u64(t, (uint64_t)getpid());
    put(t, "\n");
    for (size_t i = 0; i < s->count; i++) {
        const field *f = &s->fields[i];
        if (f->label == NULL) continue;
        if (f->kind == BYTES && f->value == 0 && f->label[0] == ' ') continue; /* empty parts */
        put(t, "hugeheap:   ");
        put(t, f->label);
        put(t, " ");
        if (f->kind == WORD) {
            put(t, f->word);
        } else if (f->kind == RATIO && f->value == UINT64_MAX) {
            put(t, "unknown");
        } else if (f->kind == RATIO) {
            put_ratio(t, f->value);
        } else if (f->kind == BYTES) {
            put_mib(t, f->value);
        } else {
            put_u64(t, f->value);
        }
        put(t, "\n");
    }
}

static bool write_all(int fd, const text *t) {
    size_t done = 0;
    while (done < t->len) {
        ssize_t n = write(fd, t->buf + done, t->len - done);
        if (n <= 0) return false;
        done += (size_t)n;
    }
    return true;
}

/* Expands %p in the configured path to the process id. */
static void json_path(char *out, size_t cap) {
    text t;
    t.len = 0;
    for (const char *p = _hh_cfg.stats_json_path; *p; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            put_u64(&t, (uint64_t)getpid());
            p++;
        } else {
            char one[2] = {*p, 0};
            put(&t, one);
        }
    }
    size_t len = t.len < cap - 1 ? t.len : cap - 1;
    memcpy(out, t.buf, len);
    out[len] = '\0';
}

void _hh_stats_print(int fd) {
    snapshot s;
    take_snapshot(&s);
    text t;
    t.len = 0;
    format_text(&t, &s);
    write_all(fd, &t);
}

/* HUGEHEAP_STATS writes (its summary, or why the json file cannot be
 * written) to the stderr the program started with, even if it closed its own
 * (sort and ls do): kept aside at start-up. */
void _hh_stats_keep_stderr(void) {
    if (_hh_stats_on && saved_stderr < 0) saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 100);
}

static void write_to_stderr(const text *t) {
    if (!write_all(saved_stderr >= 0 ? saved_stderr : STDERR_FILENO, t)) write_all(STDERR_FILENO, t);
}

static void report_stats_at_exit(void) {
    if (!_hh_stats_on) return;
    snapshot s;
    take_snapshot(&s);
    text t;
    if (_hh_cfg.stats_print) {
        t.len = 0;
        format_text(&t, &s);
        write_to_stderr(&t);
    }
    if (_hh_cfg.stats_json_path[0] != '\0') {
        char path[600];
        json_path(path, sizeof path);
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            t.len = 0;
            put(&t, "hugeheap: cannot open the HUGEHEAP_STATS json file for writing: ");
            put(&t, path);
            put(&t, "\n");
            write_to_stderr(&t);
            return;
        }
        t.len = 0;
        format_json(&t, &s);
        write_all(fd, &t); /* one write of one line: appends from processes do not mix */
        close(fd);
    }
}

__attribute__((destructor)) static void report_at_exit(void) { report_stats_at_exit(); }

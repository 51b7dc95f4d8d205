/* What the heap did, printed at exit (HUGEHEAP_STATS=1) or written as one
 * JSON object per process (HUGEHEAP_STATS=json:PATH, appended; %p in PATH
 * becomes the process id).  Formatting is done by hand: stdio may allocate,
 * and this runs while the process is shutting down. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

hh_global_stats _hh_gstats;

/* Adds to a counter and raises its high-water mark. */
void _hh_counter_add(_Atomic(int64_t) *now, _Atomic(int64_t) *peak, int64_t delta) {
    int64_t value = atomic_fetch_add_explicit(now, delta, memory_order_relaxed) + delta;
    int64_t high = atomic_load_explicit(peak, memory_order_relaxed);
    while (value > high && !atomic_compare_exchange_weak_explicit(peak, &high, value,
                                                                  memory_order_relaxed,
                                                                  memory_order_relaxed)) {
    }
}

void _hh_stats_in_use(int64_t delta) {
    _hh_counter_add(&_hh_gstats.in_use, &_hh_gstats.in_use_peak, delta);
}

void _hh_stats_count_alloc(hh_heap *heap, size_t bytes) {
    if (heap != NULL) heap->stats.allocs++;
    _hh_stats_in_use((int64_t)bytes);
}

void *_hh_page_pop_finish(hh_heap *heap, hh_page *page, hh_block *block, bool zero) {
    if (zero) {
        if (page->free_is_zero) {
            block->next = NULL; /* the link is the only word ever written */
        } else {
            memset(block, 0, page->block_size);
        }
    }
    if (HH_UNLIKELY(_hh_stats_on)) _hh_stats_count_alloc(heap, page->block_size);
    return block;
}

void _hh_free_local_counted(hh_heap *heap, hh_page *page, hh_block *block) {
    heap->stats.frees++;
    _hh_stats_in_use(-(int64_t)page->block_size);
    _hh_free_local(heap, page, block);
}

/* ------------------------------------------------------------ formatting */

typedef struct text {
    char buf[3072];
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

static void put_i64(text *t, int64_t x) {
    if (x < 0) {
        put(t, "-");
        put_u64(t, (uint64_t)(-x));
    } else {
        put_u64(t, (uint64_t)x);
    }
}

/* A ratio in [0,1] with three decimals. */
static void put_ratio(text *t, uint64_t num, uint64_t den) {
    uint64_t milli = den ? (num * 1000 + den / 2) / den : 0;
    if (milli > 1000) milli = 1000;
    put_u64(t, milli / 1000);
    put(t, ".");
    char frac[4] = {(char)('0' + milli % 1000 / 100), (char)('0' + milli % 100 / 10),
                    (char)('0' + milli % 10), 0};
    put(t, frac);
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
 * line at a time through a fixed buffer. */
static bool read_smaps(const char *path, memory_reading *r) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[4096], line[256];
    size_t ll = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (ll < sizeof line - 1) line[ll++] = buf[i];
                continue;
            }
            line[ll] = '\0';
            if (strncmp(line, "Anonymous:", 10) == 0) r->anonymous_kb += parse_kb(line + 10);
            if (strncmp(line, "AnonHugePages:", 14) == 0) r->anon_huge_kb += parse_kb(line + 14);
            ll = 0;
        }
    }
    close(fd);
    r->ok = true;
    return true;
}

static memory_reading read_memory(void) {
    memory_reading r = {false, 0, 0};
    if (!read_smaps("/proc/self/smaps_rollup", &r)) read_smaps("/proc/self/smaps", &r);
    return r;
}

static void read_system_thp(char *out, size_t cap) {
    out[0] = '\0';
    int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = '\0';
    char *open_bracket = strchr(buf, '['), *close_bracket = open_bracket ? strchr(open_bracket, ']') : NULL;
    if (!open_bracket || !close_bracket) return;
    size_t len = (size_t)(close_bracket - open_bracket - 1);
    if (len >= cap) len = cap - 1;
    memcpy(out, open_bracket + 1, len);
    out[len] = '\0';
}

static const char *mode_name(void) {
    switch (_hh_cfg.thp) {
    case HH_THP_OFF: return "off";
    case HH_THP_HUGETLB: return "hugetlb";
    default: return "on";
    }
}

#define LOAD(x) atomic_load_explicit(&_hh_gstats.x, memory_order_relaxed)

typedef struct snapshot {
    hh_heap_stats heaps;
    uint64_t allocs, frees; /* small and large, local and remote */
    uint64_t threads;
    memory_reading memory;
    char system_thp[16];
} snapshot;

static void take_snapshot(snapshot *s) {
    _hh_heap_stats_sum(&s->heaps, &s->threads);
    s->allocs = s->heaps.allocs + LOAD(large_allocs);
    s->frees = s->heaps.frees + s->heaps.remote_frees + LOAD(large_frees);
    s->memory = read_memory();
    read_system_thp(s->system_thp, sizeof s->system_thp);
}

static void format_json(text *t, const snapshot *s) {
    put(t, "{\"pid\":");
    put_u64(t, (uint64_t)getpid());
    put(t, ",\"mode\":\"");
    put(t, mode_name());
    put(t, "\",\"system_thp\":\"");
    put(t, s->system_thp);
    put(t, "\",\"mapped_bytes\":");
    put_i64(t, LOAD(mapped));
    put(t, ",\"mapped_peak_bytes\":");
    put_i64(t, LOAD(mapped_peak));
    put(t, ",\"in_use_bytes\":");
    put_i64(t, LOAD(in_use));
    put(t, ",\"in_use_peak_bytes\":");
    put_i64(t, LOAD(in_use_peak));
    put(t, ",\"allocs\":");
    put_u64(t, s->allocs);
    put(t, ",\"frees\":");
    put_u64(t, s->frees);
    put(t, ",\"remote_frees\":");
    put_u64(t, s->heaps.remote_frees);
    put(t, ",\"reallocs\":");
    put_u64(t, s->heaps.reallocs);
    put(t, ",\"large_allocs\":");
    put_u64(t, LOAD(large_allocs));
    put(t, ",\"large_frees\":");
    put_u64(t, LOAD(large_frees));
    put(t, ",\"segments_promoted\":");
    put_u64(t, LOAD(segments_promoted));
    put(t, ",\"mremap_moves\":");
    put_u64(t, s->heaps.mremap_moves);
    put(t, ",\"mremap_in_place\":");
    put_u64(t, s->heaps.mremap_in_place);
    put(t, ",\"segments_made\":");
    put_u64(t, LOAD(segments_made));
    put(t, ",\"segments_released\":");
    put_u64(t, LOAD(segments_released));
    put(t, ",\"hugetlb_fallbacks\":");
    put_u64(t, LOAD(hugetlb_fallbacks));
    put(t, ",\"threads\":");
    put_u64(t, s->threads);
    if (s->memory.ok) {
        put(t, ",\"anonymous_bytes\":");
        put_u64(t, s->memory.anonymous_kb * 1024);
        put(t, ",\"anon_huge_bytes\":");
        put_u64(t, s->memory.anon_huge_kb * 1024);
        put(t, ",\"huge_share\":");
        put_ratio(t, s->memory.anon_huge_kb, s->memory.anonymous_kb);
    } else {
        put(t, ",\"anonymous_bytes\":null,\"anon_huge_bytes\":null,\"huge_share\":null");
    }
    put(t, "}\n");
}

static void put_mib(text *t, int64_t bytes) {
    put_i64(t, bytes / (1 << 20));
    put(t, ".");
    put_u64(t, (uint64_t)((bytes < 0 ? -bytes : bytes) % (1 << 20)) * 10 / (1 << 20));
    put(t, " MiB");
}

static void format_text(text *t, const snapshot *s) {
    put(t, "hugeheap: pid ");
    put_u64(t, (uint64_t)getpid());
    put(t, ", mode ");
    put(t, mode_name());
    put(t, " (system THP: ");
    put(t, s->system_thp[0] ? s->system_thp : "unknown");
    put(t, ")\nhugeheap:   mapped ");
    put_mib(t, LOAD(mapped));
    put(t, " now, ");
    put_mib(t, LOAD(mapped_peak));
    put(t, " at peak; in use at peak ");
    put_mib(t, LOAD(in_use_peak));
    put(t, "\nhugeheap:   allocations ");
    put_u64(t, s->allocs);
    put(t, ", frees ");
    put_u64(t, s->frees);
    put(t, " (");
    put_u64(t, s->heaps.remote_frees);
    put(t, " from other threads), reallocs ");
    put_u64(t, s->heaps.reallocs);
    put(t, ", large ");
    put_u64(t, LOAD(large_allocs));
    put(t, ", mremap moves ");
    put_u64(t, s->heaps.mremap_moves);
    put(t, ", threads ");
    put_u64(t, s->threads);
    put(t, "\nhugeheap:   anonymous memory ");
    if (s->memory.ok) {
        put_mib(t, (int64_t)s->memory.anonymous_kb * 1024);
        put(t, ", in huge pages ");
        put_mib(t, (int64_t)s->memory.anon_huge_kb * 1024);
        put(t, " (share ");
        put_ratio(t, s->memory.anon_huge_kb, s->memory.anonymous_kb);
        put(t, ")\n");
    } else {
        put(t, "unknown (no /proc/self/smaps_rollup)\n");
    }
}

static void write_all(int fd, const text *t) {
    size_t done = 0;
    while (done < t->len) {
        ssize_t n = write(fd, t->buf + done, t->len - done);
        if (n <= 0) return;
        done += (size_t)n;
    }
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

void _hh_stats_report_at_exit(void) {
    if (!_hh_stats_on) return;
    snapshot s;
    take_snapshot(&s);
    text t;
    if (_hh_cfg.stats_print) {
        t.len = 0;
        format_text(&t, &s);
        write_all(STDERR_FILENO, &t);
    }
    if (_hh_cfg.stats_json_path[0] != '\0') {
        char path[600];
        json_path(path, sizeof path);
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            _hh_warn("hugeheap: cannot open the HUGEHEAP_STATS json file for writing\n");
            return;
        }
        t.len = 0;
        format_json(&t, &s);
        write_all(fd, &t); /* one write of one line: appends from processes do not mix */
        close(fd);
    }
}

__attribute__((destructor)) static void report_at_exit(void) { _hh_stats_report_at_exit(); }

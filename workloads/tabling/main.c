/* hhtab: multithreaded tabled evaluation of logic programs, its tables on
 * hugeheap pools (the tabling paper's system).
 *
 *   hhtab run FILE --query GOAL [--query GOAL ...] [--threads N] [--design ns|ss|fs]
 *                  [--alloc pool|malloc] [--repeat K] [--json]
 *
 * With several --query options, thread i runs the (i mod n)-th; thread 0's
 * solutions are printed.
 *   hhtab gen path btree|pyramid|cycle|grid N --recursion left|right|double [-o FILE]
 *   hhtab gen fib|nrev|shuttle|pingpong|recognize|loop|chain|joins|mondial N [-o FILE] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gen.h"
#include "program.h"
#include "run.h"

static int usage(void) {
    fprintf(stderr,
            "usage: hhtab run FILE --query GOAL [--query GOAL ...] [--threads N] [--design ns|ss|fs] "
            "[--alloc pool|malloc] [--repeat K] [--json]\n"
            "       hhtab gen path btree|pyramid|cycle|grid N --recursion left|right|double "
            "[-o FILE]\n"
            "       hhtab gen fib|nrev|shuttle|pingpong|recognize|loop|chain|joins|mondial N "
            "[-o FILE]\n");
    return 2;
}

static int bad_value(const char *option, const char *value, const char *expected) {
    return cli_bad_value("hhtab", option, value, expected);
}

static int generate(int argc, char **argv) {
    /* gen path SHAPE N --recursion R, or gen FAMILY N */
    bool paths = argc >= 3 && strcmp(argv[2], "path") == 0;
    int first_option = paths ? 5 : 4;
    if (argc < first_option) return usage();
    const char *shape = argv[first_option - 2];
    unsigned long min, max;
    if (paths && !gen_shape_range(shape, &min, &max)) {
        return bad_value("gen path", shape, "a shape (btree, pyramid, cycle or grid)");
    }
    if (!paths && !gen_family_range(shape, &min, &max)) {
        char expected[160];
        snprintf(expected, sizeof expected, "a program family (path, %s)", gen_family_names());
        return bad_value("gen", shape, expected);
    }
    unsigned long long n;
    if (!cli_whole_number(argv[first_option - 1], min, max, &n)) {
        char expected[96];
        snprintf(expected, sizeof expected, "a %s size from %lu to %lu", shape, min, max);
        return bad_value("N", argv[first_option - 1], expected);
    }
    static const char *const RECURSIONS[] = {"left", "right", "double", NULL};
    const char *path = NULL;
    int recursion = paths ? -1 : REC_LEFT;
    /* --recursion is a path program's only. */
    const cli_option table[] = {
        {.name = "--recursion", .kind = CLI_CHOICE, .target = &recursion, .choices = RECURSIONS},
        {.name = "-o", .kind = CLI_TEXT, .target = &path},
        {0},
    };
    int mistake = cli_parse_options(&(cli_command){"hhtab", "gen", usage},
                                    paths ? table : table + 1, argc, argv, first_option);
    if (mistake) return mistake;
    if (recursion < 0) {
        fprintf(stderr, "hhtab gen: --recursion left|right|double is required\n");
        return 2;
    }
    FILE *out = path ? fopen(path, "w") : stdout;
    if (out == NULL) {
        fprintf(stderr, "hhtab gen: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    if (paths) gen_path(out, shape, (unsigned long)n, (gen_recursion)recursion);
    else gen_family(out, shape, (unsigned long)n);
    int failed = ferror(out);
    if (path) failed |= fclose(out) != 0;
    else failed |= fflush(out) != 0;
    if (failed) {
        fprintf(stderr, "hhtab gen: writing %s failed\n", path ? path : "standard output");
        return 1;
    }
    return 0;
}

/* VmHWM of this process: its peak resident memory. */
static unsigned long long peak_rss_bytes(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) break;
    }
    fclose(f);
    return kb * 1024;
}

static const char *const DESIGNS[] = {"ns", "ss", "fs", NULL};
static const char *const ALLOCS[] = {"pool", "malloc", NULL};

/* Derivations of answers already in the tables: every thread's own in NS
 * and SS (each derives them all); with FS threads share the work, so all
 * threads' together. */
static unsigned long long repeated(const run_options *o, const run_result *r) {
    if (o->design != DESIGN_FS) return r->repeated[0];
    unsigned long long sum = 0;
    for (unsigned i = 0; i < o->threads; i++) sum += r->repeated[i];
    return sum;
}

static void print_depth(const char *name, uint64_t min, uint64_t sum, uint64_t n, uint64_t max) {
    printf("\"%s\":[%llu,%.3f,%llu]", name, (unsigned long long)min,
           n ? (double)sum / (double)n : 0.0, (unsigned long long)max);
}

static void print_json(const run_options *o, const run_result *r) {
    const table_stats *st = &r->stats;
    printf("{\"answers\":%llu,\"calls\":%llu,\"unique\":%llu,\"repeated\":%llu,"
           "\"subgoal_trie_nodes\":%llu,\"answer_trie_nodes\":%llu,",
           (unsigned long long)r->answers, (unsigned long long)st->calls,
           (unsigned long long)st->unique, repeated(o, r),
           (unsigned long long)st->subgoal_nodes, (unsigned long long)st->answer_nodes);
    print_depth("subgoal_trie_depth", st->subgoal_depth_min, st->subgoal_depth_sum, st->calls,
                st->subgoal_depth_max);
    putchar(',');
    print_depth("answer_trie_depth", st->answer_depth_min, st->answer_depth_sum, st->unique,
                st->answer_depth_max);
    printf(",\"seconds\":[");
    for (unsigned i = 0; i < o->repeat; i++) printf("%s%.6f", i ? "," : "", r->seconds[i]);
    printf("],\"table_bytes\":%lld,\"pool_bytes\":%llu,\"peak_rss_bytes\":%llu,\"threads\":%u,"
           "\"design\":\"%s\",\"alloc\":\"%s\",\"repeated_per_thread\":[",
           (long long)r->table_bytes, (unsigned long long)r->pool_pages << 16, peak_rss_bytes(),
           o->threads, DESIGNS[o->design], ALLOCS[o->alloc]);
    for (unsigned i = 0; i < o->threads; i++) {
        printf("%s%llu", i ? "," : "", (unsigned long long)r->repeated[i]);
    }
    printf("],\"inserted_per_thread\":[");
    for (unsigned i = 0; i < o->threads; i++) {
        printf("%s%llu", i ? "," : "", (unsigned long long)r->inserted[i]);
    }
    printf("],\"wait_cycles\":%llu}\n", (unsigned long long)r->wait_cycles);
}

static void print_summary(const run_options *o, const run_result *r) {
    const table_stats *st = &r->stats;
    printf("%% answers %llu\n%% calls %llu, subgoal trie nodes %llu\n"
           "%% unique answers %llu, repeated %llu, answer trie nodes %llu\n",
           (unsigned long long)r->answers, (unsigned long long)st->calls,
           (unsigned long long)st->subgoal_nodes, (unsigned long long)st->unique,
           repeated(o, r), (unsigned long long)st->answer_nodes);
    printf("%% seconds");
    for (unsigned i = 0; i < o->repeat; i++) printf(" %.3f", r->seconds[i]);
    printf("\n%% %u thread%s, design %s, alloc %s, table %.1f MiB, peak RSS %.1f MiB\n", o->threads,
           o->threads == 1 ? "" : "s", DESIGNS[o->design], ALLOCS[o->alloc],
           (double)r->table_bytes / 1048576.0, (double)peak_rss_bytes() / 1048576.0);
}

/* The --query options, in order (each one adds a goal). */
typedef struct goal_list {
    const char **goals;
    unsigned n;
} goal_list;

static bool add_goal(const char *value, void *target) {
    goal_list *list = target;
    list->goals[list->n++] = value;
    return true;
}

static int run_program(int argc, char **argv) {
    if (argc < 3) return usage();
    const char *goal_texts[argc];
    goal_list goals = {.goals = goal_texts};
    bool json = false;
    unsigned long long threads = 1, repeat = 1;
    int design = DESIGN_FS, alloc = ALLOC_POOL;
    const cli_option table[] = {
        {.name = "--json", .kind = CLI_FLAG, .target = &json},
        {.name = "--query", .kind = CLI_CUSTOM, .target = &goals, .read = add_goal},
        {.name = "--threads", .kind = CLI_NUMBER, .target = &threads, .min = 1, .max = 1024,
         .expected = "a thread count (1-1024)"},
        {.name = "--design", .kind = CLI_CHOICE, .target = &design, .choices = DESIGNS},
        {.name = "--alloc", .kind = CLI_CHOICE, .target = &alloc, .choices = ALLOCS},
        {.name = "--repeat", .kind = CLI_NUMBER, .target = &repeat, .min = 1, .max = 1000,
         .expected = "a repetition count (1-1000)"},
        {0},
    };
    int mistake = cli_parse_options(&(cli_command){"hhtab", "run", usage}, table, argc, argv, 3);
    if (mistake) return mistake;
    unsigned ngoals = goals.n;
    run_options o = {.threads = (unsigned)threads, .design = (table_design)design,
                     .alloc = (table_alloc)alloc, .repeat = (unsigned)repeat};
    if (ngoals == 0) {
        fprintf(stderr, "hhtab run: --query GOAL is required (for example --query 'path(X,Y)')\n");
        return 2;
    }
    char error[1024];
    program *prog = program_read(argv[2], error, sizeof error);
    query *queries = calloc(ngoals, sizeof *queries);
    bool ok = prog != NULL && queries != NULL;
    if (prog != NULL && queries == NULL) snprintf(error, sizeof error, "out of memory");
    for (unsigned i = 0; ok && i < ngoals; i++) {
        ok = query_parse(prog, goals.goals[i], &queries[i], error, sizeof error);
    }
    if (!ok) {
        fprintf(stderr, "hhtab: %s\n", error);
        free(queries);
        program_free(prog);
        return 2;
    }
    o.queries = queries;
    o.nqueries = ngoals;
    o.keep_solutions = !json;
    run_result r;
    if (!run_query(prog, &o, &r, error, sizeof error)) {
        fprintf(stderr, "hhtab: %s\n", error);
        run_result_free(&r);
        free(queries);
        program_free(prog);
        return 3;
    }
    if (json) {
        print_json(&o, &r);
    } else {
        fwrite(r.solutions.s ? r.solutions.s : "", 1, r.solutions.len, stdout);
        print_summary(&o, &r);
    }
    run_result_free(&r);
    free(queries);
    program_free(prog);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "hhtab: writing the answers failed\n");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "gen") == 0) return generate(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "run") == 0) return run_program(argc, argv);
    return usage();
}

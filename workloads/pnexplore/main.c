/* pnexplore: a parallel Petri-net state-space explorer on hugeheap arenas
 * and pools.
 *
 *   pnexplore gen MODEL N [--format pnml|lola] [-o FILE]
 *       (MODEL: philosophers, sharedmemory, tokenring, kanban, referendum,
 *       dekker; serversandclients takes N as SxC)
 *   pnexplore convert NET [--format pnml|lola] [-o FILE]
 *   pnexplore explore NET [--threads N] [--check full|deadlock]
 *                         [--store shared|buckets:B] [--alloc arena|pool|malloc]
 *                         [--max-states M] [--memory MIB] [--json] [--mcc]
 *
 * NET: a PNML or LoLA file, or a folder holding model.pnml (the Model
 * Checking Contest's layout).  --memory MIB: how far the state table may
 * grow, in MiB (default 4096).  --mcc: the contest's StateSpace answer lines
 * instead of the summary. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "escape.h"
#include "explore.h"
#include "formats.h"
#include "models.h"

static int usage(void) {
    fprintf(stderr,
            "usage: pnexplore gen philosophers|sharedmemory|tokenring|kanban|referendum|dekker N "
            "| serversandclients SxC "
            "[--format pnml|lola] [-o FILE]\n"
            "       pnexplore convert NET [--format pnml|lola] [-o FILE]\n"
            "       pnexplore explore NET [--threads N] [--check full|deadlock] "
            "[--store shared|buckets:B] [--alloc arena|pool|malloc] [--max-states M] "
            "[--memory MIB] [--json] [--mcc]\n");
    return 2;
}

static const char *const FORMATS[] = {"pnml", "lola", NULL};

/* Where and how gen and convert write a net: --format and -o. */
typedef struct output_options {
    int format; /* an index into FORMATS */
    const char *path;
} output_options;

/* Reads the options from argv[first] on; 0, or the exit code of a mistake. */
static int parse_output_options(const char *command, int argc, char **argv, int first,
                                output_options *out) {
    *out = (output_options){0, NULL};
    const cli_option table[] = {
        {.name = "--format", .kind = CLI_CHOICE, .target = &out->format, .choices = FORMATS},
        {.name = "-o", .kind = CLI_TEXT, .target = &out->path},
        {0},
    };
    return cli_parse_options(&(cli_command){"pnexplore", command, usage}, table, argc, argv,
                             first);
}

/* Writes the net as the options say (PNML under the net id `name`), or
 * nothing if the format cannot carry its names; frees it; returns the exit
 * code. */
static int write_net(const char *command, net *n, const char *name, const output_options *o) {
    bool lola = strcmp(FORMATS[o->format], "lola") == 0;
    char error[512];
    if (lola ? !lola_can_carry(n, error, sizeof error)
             : !pnml_can_carry(n, name, error, sizeof error)) {
        fprintf(stderr, "pnexplore %s: %s\n", command, error);
        net_free(n);
        return 2;
    }
    FILE *out = o->path ? fopen(o->path, "w") : stdout;
    if (out == NULL) {
        fprintf(stderr, "pnexplore %s: cannot write %s: %s\n", command, o->path, strerror(errno));
        net_free(n);
        return 1;
    }
    if (lola) {
        write_lola(n, out);
    } else {
        write_pnml(n, name, out);
    }
    int failed = ferror(out);
    if (o->path) failed |= fclose(out) != 0;
    net_free(n);
    if (failed) {
        fprintf(stderr, "pnexplore %s: writing %s failed\n", command,
                o->path ? o->path : "standard output");
        return 1;
    }
    return 0;
}

static int generate(int argc, char **argv) {
    if (argc < 4) return usage();
    output_options output;
    int mistake = parse_output_options("gen", argc, argv, 4, &output);
    if (mistake) return mistake;
    char error[512];
    net *n = model_generate(argv[2], argv[3], error, sizeof error);
    if (n == NULL) {
        fprintf(stderr, "pnexplore gen: %s\n", error);
        return 2;
    }
    char name[128];
    snprintf(name, sizeof name, "%s-%s", argv[2], argv[3]);
    return write_net("gen", n, name, &output);
}

/* A net file in the other format (or the same one, written anew). */
static int convert(int argc, char **argv) {
    if (argc < 3) return usage();
    output_options output;
    int mistake = parse_output_options("convert", argc, argv, 3, &output);
    if (mistake) return mistake;
    char error[600];
    net *n = read_net(argv[2], error, sizeof error);
    if (n == NULL) {
        fprintf(stderr, "pnexplore: %s\n", error);
        return 2;
    }
    /* The net id: the file's name without its directory and extension. */
    const char *slash = strrchr(argv[2], '/'), *base = slash ? slash + 1 : argv[2];
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(base, "."), base);
    return write_net("convert", n, name[0] ? name : "net", &output);
}

/* The Model Checking Contest's answer to its StateSpace examination, or
 * that it cannot (the reason goes to standard error). */
static void print_mcc(const explore_result *r, unsigned threads) {
    if (!r->complete) {
        printf("CANNOT_COMPUTE\n");
        return;
    }
    const char *techniques = threads > 1 ? "EXPLICIT STATE_COMPRESSION PARALLEL_PROCESSING"
                                         : "EXPLICIT STATE_COMPRESSION SEQUENTIAL_PROCESSING";
    printf("STATE_SPACE STATES %llu TECHNIQUES %s\n", (unsigned long long)r->states, techniques);
    printf("STATE_SPACE TRANSITIONS %llu TECHNIQUES %s\n", (unsigned long long)r->edges,
           techniques);
    printf("STATE_SPACE MAX_TOKEN_PER_MARKING %llu TECHNIQUES %s\n",
           (unsigned long long)r->max_tokens_per_marking, techniques);
    printf("STATE_SPACE MAX_TOKEN_IN_PLACE %u TECHNIQUES %s\n", r->max_tokens_in_place,
           techniques);
}

static void print_json(const net *n, const explore_options *opt, const explore_result *r) {
    double rate = r->seconds > 0 ? (double)r->states / r->seconds : 0;
    printf("{\"states\":%llu,\"edges\":%llu,\"deadlocks\":%llu,\"seconds\":%.6f,"
           "\"states_per_second\":%.1f,\"bytes_per_state\":%.2f,\"marking_bytes\":%.2f,"
           "\"safe\":%s,\"max_tokens_in_place\":%u,\"max_tokens_per_marking\":%llu,"
           "\"threads\":%u,\"complete\":%s,\"stopped\":",
           (unsigned long long)r->states, (unsigned long long)r->edges,
           (unsigned long long)r->deadlocks, r->seconds, rate, r->bytes_per_state,
           r->marking_bytes, r->max_tokens_in_place <= 1 ? "true" : "false",
           r->max_tokens_in_place, (unsigned long long)r->max_tokens_per_marking, opt->threads,
           r->complete ? "true" : "false");
    write_json_string(stdout, r->stopped);
    if (opt->stop_at_deadlock) {
        printf(",\"deadlock\":%s,\"witness\":[", r->found_deadlock ? "true" : "false");
        for (size_t i = 0; i < r->witness_length; i++) {
            if (i) putchar(',');
            write_json_string(stdout, n->transitions[r->witness[i]].name);
        }
        printf("]");
    }
    printf("}\n");
}

static void print_summary(const net *n, const explore_options *opt, const explore_result *r) {
    double rate = r->seconds > 0 ? (double)r->states / r->seconds : 0;
    printf("states %llu\nedges %llu\ndeadlocks %llu\nseconds %.3f\nstates/s %.0f\n"
           "bytes/state %.2f (markings %.2f bytes on average)\n"
           "max tokens %u in a place, %llu in a marking\nthreads %u\n",
           (unsigned long long)r->states, (unsigned long long)r->edges,
           (unsigned long long)r->deadlocks, r->seconds, rate, r->bytes_per_state,
           r->marking_bytes, r->max_tokens_in_place, (unsigned long long)r->max_tokens_per_marking,
           opt->threads);
    if (!opt->stop_at_deadlock) return;
    if (r->found_deadlock) {
        printf("deadlock after %zu firings:", r->witness_length);
        for (size_t i = 0; i < r->witness_length; i++) printf(" %s", n->transitions[r->witness[i]].name);
        printf("\n");
    } else if (r->complete) {
        printf("no deadlock\n");
    }
}

/* --store shared|buckets:B into the explore options. */
static bool read_store(const char *value, void *target) {
    explore_options *opt = target;
    unsigned long long buckets;
    if (strcmp(value, "shared") == 0) {
        opt->store = STORE_SHARED;
    } else if (strncmp(value, "buckets:", 8) == 0 &&
               cli_whole_number(value + 8, 1, 1u << 20, &buckets)) {
        opt->store = STORE_BUCKETS;
        opt->buckets = (unsigned)buckets;
    } else {
        return false;
    }
    return true;
}

static int run_explore(int argc, char **argv) {
    if (argc < 3) return usage();
    static const char *const CHECKS[] = {"full", "deadlock", NULL};
    static const char *const ALLOCS[] = {"arena", "pool", "malloc", NULL};
    explore_options opt = {1, false, STORE_SHARED, 0, ALLOC_ARENA, 0, (size_t)4 << 30};
    unsigned long long threads = 1, max_states = 0, memory_mib = 4096;
    int check = 0, alloc = ALLOC_ARENA;
    bool json = false, mcc = false;
    const cli_option table[] = {
        {.name = "--json", .kind = CLI_FLAG, .target = &json},
        {.name = "--mcc", .kind = CLI_FLAG, .target = &mcc},
        {.name = "--threads", .kind = CLI_NUMBER, .target = &threads, .min = 1, .max = 1024,
         .expected = "a thread count (1-1024)"},
        {.name = "--check", .kind = CLI_CHOICE, .target = &check, .choices = CHECKS},
        {.name = "--store", .kind = CLI_CUSTOM, .target = &opt, .read = read_store,
         .expected = "shared or buckets:B (B from 1 to 1048576)"},
        {.name = "--alloc", .kind = CLI_CHOICE, .target = &alloc, .choices = ALLOCS},
        {.name = "--max-states", .kind = CLI_NUMBER, .target = &max_states, .min = 1,
         .max = UINT64_MAX, .expected = "a positive count"},
        {.name = "--memory", .kind = CLI_NUMBER, .target = &memory_mib, .min = 1,
         .max = 1u << 30, .expected = "a size in MiB"},
        {0},
    };
    int mistake = cli_parse_options(&(cli_command){"pnexplore", "explore", usage}, table, argc,
                                    argv, 3);
    if (mistake) return mistake;
    opt.threads = (unsigned)threads;
    opt.stop_at_deadlock = check == 1;
    opt.alloc = (alloc_kind)alloc;
    opt.max_states = max_states;
    opt.memory_budget = (size_t)memory_mib << 20;
    if (mcc && (json || opt.stop_at_deadlock)) {
        fprintf(stderr, "pnexplore: --mcc answers the contest's StateSpace examination: it goes "
                        "with neither --json nor --check deadlock\n");
        return 2;
    }
    char error[600];
    net *n = read_net(argv[2], error, sizeof error);
    if (n == NULL) {
        fprintf(stderr, "pnexplore: %s\n", error);
        return 2;
    }
    explore_result r;
    explore_outcome outcome = explore(n, &opt, &r);
    if (outcome != EXPLORE_STARTED) { /* nothing explored: no counts to show */
        fprintf(stderr, "pnexplore: %s\n", r.stopped);
        net_free(n);
        return outcome == EXPLORE_REFUSED ? 2 : 1;
    }
    if (mcc) {
        print_mcc(&r, opt.threads);
    } else if (json) {
        print_json(n, &opt, &r);
    } else {
        print_summary(n, &opt, &r);
    }
    if (!r.complete && !(opt.stop_at_deadlock && r.found_deadlock)) {
        fprintf(stderr, "pnexplore: stopped early: %s%s\n", r.stopped,
                mcc ? "" : "; the counts above are those so far");
    }
    free(r.witness);
    net_free(n);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "pnexplore: writing the results failed\n");
        return 1;
    }
    return r.complete || (opt.stop_at_deadlock && r.found_deadlock) ? 0 : 3;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "gen") == 0) return generate(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "convert") == 0) return convert(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "explore") == 0) return run_explore(argc, argv);
    return usage();
}

/* pnexplore: a parallel Petri-net state-space explorer on hugeheap arenas
 * and pools.
 *
 *   pnexplore gen MODEL N [--format pnml|lola] [-o FILE]
 *   pnexplore convert NET [--format pnml|lola] [-o FILE]
 *   pnexplore explore NET [--threads N] [--check full|deadlock]
 *                         [--store shared|buckets:B] [--alloc arena|pool|malloc]
 *                         [--max-states M] [--memory MIB] [--json]
 *
 * --memory MIB: how far the state table may grow, in MiB (default 4096). */
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
            "usage: pnexplore gen philosophers|sharedmemory|tokenring|kanban N "
            "[--format pnml|lola] [-o FILE]\n"
            "       pnexplore convert NET [--format pnml|lola] [-o FILE]\n"
            "       pnexplore explore NET [--threads N] [--check full|deadlock] "
            "[--store shared|buckets:B] [--alloc arena|pool|malloc] [--max-states M] "
            "[--memory MIB] [--json]\n");
    return 2;
}

static int bad_value(const char *option, const char *value, const char *expected) {
    return cli_bad_value("pnexplore", option, value, expected);
}

/* Where and how gen and convert write a net: --format and -o. */
typedef struct output_options {
    const char *format, *path;
} output_options;

/* Reads the options from argv[first] on; 0, or the exit code of a mistake. */
static int parse_output_options(const char *command, int argc, char **argv, int first,
                                output_options *out) {
    *out = (output_options){"pnml", NULL};
    for (int i = first; i < argc; i++) {
        if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
            out->format = argv[++i];
            if (strcmp(out->format, "pnml") != 0 && strcmp(out->format, "lola") != 0) {
                return bad_value("--format", out->format, "pnml or lola");
            }
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            out->path = argv[++i];
        } else {
            fprintf(stderr, "pnexplore %s: unknown option '%s'\n", command, argv[i]);
            return usage();
        }
    }
    return 0;
}

/* Writes the net as the options say (PNML under the net id `name`), or
 * nothing if the format cannot carry its names; frees it; returns the exit
 * code. */
static int write_net(const char *command, net *n, const char *name, const output_options *o) {
    bool lola = strcmp(o->format, "lola") == 0;
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
    unsigned long long size;
    if (!cli_whole_number(argv[3], 1, 10000, &size)) return bad_value("N", argv[3], "a size from 1 to 10000");
    output_options output;
    int mistake = parse_output_options("gen", argc, argv, 4, &output);
    if (mistake) return mistake;
    char error[512];
    net *n = model_generate(argv[2], (unsigned)size, error, sizeof error);
    if (n == NULL) {
        fprintf(stderr, "pnexplore gen: %s\n", error);
        return 2;
    }
    char name[128];
    snprintf(name, sizeof name, "%s-%llu", argv[2], size);
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

static int run_explore(int argc, char **argv) {
    if (argc < 3) return usage();
    explore_options opt = {1, false, STORE_SHARED, 0, ALLOC_ARENA, 0, (size_t)4 << 30};
    bool json = false;
    for (int i = 3; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long x;
        if (strcmp(o, "--json") == 0) {
            json = true;
            continue;
        }
        if (v == NULL) {
            fprintf(stderr, "pnexplore: %s needs a value\n", o);
            return 2;
        }
        i++;
        if (strcmp(o, "--threads") == 0) {
            if (!cli_whole_number(v, 1, 1024, &x)) return bad_value(o, v, "a thread count (1-1024)");
            opt.threads = (unsigned)x;
        } else if (strcmp(o, "--check") == 0) {
            if (strcmp(v, "full") == 0) {
                opt.stop_at_deadlock = false;
            } else if (strcmp(v, "deadlock") == 0) {
                opt.stop_at_deadlock = true;
            } else {
                return bad_value(o, v, "full or deadlock");
            }
        } else if (strcmp(o, "--store") == 0) {
            if (strcmp(v, "shared") == 0) {
                opt.store = STORE_SHARED;
            } else if (strncmp(v, "buckets:", 8) == 0 && cli_whole_number(v + 8, 1, 1u << 20, &x)) {
                opt.store = STORE_BUCKETS;
                opt.buckets = (unsigned)x;
            } else {
                return bad_value(o, v, "shared or buckets:B (B from 1 to 1048576)");
            }
        } else if (strcmp(o, "--alloc") == 0) {
            if (strcmp(v, "arena") == 0) {
                opt.alloc = ALLOC_ARENA;
            } else if (strcmp(v, "pool") == 0) {
                opt.alloc = ALLOC_POOL;
            } else if (strcmp(v, "malloc") == 0) {
                opt.alloc = ALLOC_MALLOC;
            } else {
                return bad_value(o, v, "arena, pool or malloc");
            }
        } else if (strcmp(o, "--max-states") == 0) {
            if (!cli_whole_number(v, 1, UINT64_MAX, &x)) return bad_value(o, v, "a positive count");
            opt.max_states = x;
        } else if (strcmp(o, "--memory") == 0) {
            if (!cli_whole_number(v, 1, 1u << 30, &x)) return bad_value(o, v, "a size in MiB");
            opt.memory_budget = (size_t)x << 20;
        } else {
            fprintf(stderr, "pnexplore explore: unknown option '%s'\n", o);
            return usage();
        }
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
    double rate = r.seconds > 0 ? (double)r.states / r.seconds : 0;
    if (json) {
        printf("{\"states\":%llu,\"edges\":%llu,\"deadlocks\":%llu,\"seconds\":%.6f,"
               "\"states_per_second\":%.1f,\"bytes_per_state\":%.2f,\"marking_bytes\":%zu,"
               "\"safe\":%s,\"threads\":%u,\"complete\":%s,\"stopped\":",
               (unsigned long long)r.states, (unsigned long long)r.edges,
               (unsigned long long)r.deadlocks, r.seconds, rate, r.bytes_per_state,
               r.marking_bytes, r.safe ? "true" : "false", opt.threads,
               r.complete ? "true" : "false");
        write_json_string(stdout, r.stopped);
        if (opt.stop_at_deadlock) {
            printf(",\"deadlock\":%s,\"witness\":[", r.found_deadlock ? "true" : "false");
            for (size_t i = 0; i < r.witness_length; i++) {
                if (i) putchar(',');
                write_json_string(stdout, n->transitions[r.witness[i]].name);
            }
            printf("]");
        }
        printf("}\n");
    } else {
        printf("states %llu\nedges %llu\ndeadlocks %llu\nseconds %.3f\nstates/s %.0f\n"
               "bytes/state %.2f (marking %zu bytes, %s)\nthreads %u\n",
               (unsigned long long)r.states, (unsigned long long)r.edges,
               (unsigned long long)r.deadlocks, r.seconds, rate, r.bytes_per_state,
               r.marking_bytes, r.safe ? "1-safe: one bit per place" : "16-bit counters",
               opt.threads);
        if (opt.stop_at_deadlock) {
            if (r.found_deadlock) {
                printf("deadlock after %zu firings:", r.witness_length);
                for (size_t i = 0; i < r.witness_length; i++) {
                    printf(" %s", n->transitions[r.witness[i]].name);
                }
                printf("\n");
            } else if (r.complete) {
                printf("no deadlock\n");
            }
        }
    }
    if (!r.complete && !(opt.stop_at_deadlock && r.found_deadlock)) {
        fprintf(stderr, "pnexplore: stopped early: %s; the counts above are those so far\n",
                r.stopped);
    }
    free(r.witness);
    net_free(n);
    return r.complete || (opt.stop_at_deadlock && r.found_deadlock) ? 0 : 3;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "gen") == 0) return generate(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "convert") == 0) return convert(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "explore") == 0) return run_explore(argc, argv);
    return usage();
}

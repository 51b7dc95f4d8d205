/* hh-randksat: uniform random k-SAT in DIMACS CNF, reproducible from a seed.
 *
 *   hh-randksat VARIABLES CLAUSES [K [SEED]] > instance.cnf
 *
 * Each clause has K distinct variables with random signs.  At 3 clauses per
 * variable random 3-SAT is satisfiable and easy to solve, yet a million
 * variables give solvers heaps of several hundred MiB: the instances the
 * huge-page papers measure TLB effects on. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng;

static uint64_t next_random(void) { /* splitmix64 */
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int parse_count(const char *text, const char *what, uint64_t min, uint64_t max,
                       uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || text[0] == '-' || value < min || value > max) {
        fprintf(stderr, "hh-randksat: %s must be a whole number from %" PRIu64 " to %" PRIu64
                        ", not '%s'\n", what, min, max, text);
        return 0;
    }
    *out = value;
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: hh-randksat VARIABLES CLAUSES [K [SEED]]\n");
        return 2;
    }
    uint64_t vars, clauses, k = 3, seed = 1;
    if (!parse_count(argv[1], "VARIABLES", 1, 2000000000, &vars) ||
        !parse_count(argv[2], "CLAUSES", 0, 4000000000u, &clauses) ||
        (argc > 3 && !parse_count(argv[3], "K", 1, 64, &k)) ||
        (argc > 4 && !parse_count(argv[4], "SEED", 0, UINT64_MAX, &seed))) {
        return 2;
    }
    if (k > vars) {
        fprintf(stderr, "hh-randksat: K (%" PRIu64 ") cannot exceed VARIABLES (%" PRIu64 ")\n", k,
                vars);
        return 2;
    }
    rng = seed;
    static char buffer[1 << 16];
    setvbuf(stdout, buffer, _IOFBF, sizeof buffer);
    printf("c random %" PRIu64 "-SAT, seed %" PRIu64 "\np cnf %" PRIu64 " %" PRIu64 "\n", k, seed,
           vars, clauses);
    int64_t clause[64];
    for (uint64_t c = 0; c < clauses; c++) {
        for (uint64_t i = 0; i < k; i++) {
            int64_t v;
            int fresh;
            do { /* distinct variables within a clause */
                v = (int64_t)(next_random() % vars) + 1;
                fresh = 1;
                for (uint64_t j = 0; j < i; j++) fresh &= clause[j] != v && clause[j] != -v;
            } while (!fresh);
            clause[i] = (next_random() & 1) ? v : -v;
            printf("%" PRId64 " ", clause[i]);
        }
        fputs("0\n", stdout);
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "hh-randksat: cannot write the instance: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

/* The scalable models of the Model Checking Contest that the tests count:
 *   philosophers N  3^N states, 7N*3^(N-2) edges, 2 deadlocks
 *   sharedmemory N  3^(N-1)*(N^2-N+3) states
 *   tokenring N     Dijkstra's self-stabilising ring of N+1 machines with N+1
 *                   states each, started with machine i in state i (166 states
 *                   for N=5)
 *   kanban N        Ciardo's four-cell Kanban, N cards a cell (160, 4600,
 *                   58400, 454475 states for N=1..4)
 * and three families whose counts are known by construction, written after
 * the contest's models of those names to give nets of many places:
 *   referendum N    a start that opens N ballots, each voted yes or no:
 *                   3^N+1 states
 *   dekker N        N processes that raise a flag, enter when every other
 *                   flag is down, or back off while another is up:
 *                   2^(N-1)*(N+2) states
 *   serversandclients SxC  one connection at a time: a server is chosen,
 *                   accepts one of C clients, replies, closes: S*C+2S+1
 *                   states on S*C+4S+C+1 places (400x160: 65,761 places,
 *                   128,800 transitions, 64,801 states) */
#include "models.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

#define NAME(buf, ...) (snprintf(buf, sizeof buf, __VA_ARGS__), buf)

static void arcs(net *n, const char *t, const char *const *in, const char *const *out) {
    for (; in && *in; in++) net_add_arc(n, *in, t, 1);
    for (; out && *out; out++) net_add_arc(n, t, *out, 1);
}

static void philosophers(net *n, unsigned size) {
    char a[64], b[64], c[64], d[64], t[64];
    for (unsigned i = 0; i < size; i++) {
        net_add_place(n, NAME(a, "Think_%u", i), 1);
        net_add_place(n, NAME(a, "Fork_%u", i), 1);
        net_add_place(n, NAME(a, "Catch1_%u", i), 0);
        net_add_place(n, NAME(a, "Catch2_%u", i), 0);
        net_add_place(n, NAME(a, "Eat_%u", i), 0);
    }
    for (unsigned i = 0; i < size; i++) {
        unsigned r = (i + 1) % size;
        NAME(a, "Think_%u", i);
        NAME(b, "Fork_%u", i);
        NAME(c, "Fork_%u", r);
        net_add_transition(n, NAME(t, "TakeLeft_%u", i));
        arcs(n, t, (const char *[]){a, b, NULL}, (const char *[]){NAME(d, "Catch1_%u", i), NULL});
        net_add_transition(n, NAME(t, "TakeRight_%u", i));
        arcs(n, t, (const char *[]){a, c, NULL}, (const char *[]){NAME(d, "Catch2_%u", i), NULL});
        net_add_transition(n, NAME(t, "ThenRight_%u", i));
        arcs(n, t, (const char *[]){NAME(d, "Catch1_%u", i), c, NULL},
             (const char *[]){NAME(a, "Eat_%u", i), NULL});
        net_add_transition(n, NAME(t, "ThenLeft_%u", i));
        arcs(n, t, (const char *[]){NAME(d, "Catch2_%u", i), b, NULL},
             (const char *[]){a, NULL});
        NAME(a, "Think_%u", i);
        net_add_transition(n, NAME(t, "Release_%u", i));
        arcs(n, t, (const char *[]){NAME(d, "Eat_%u", i), NULL}, (const char *[]){a, b, c, NULL});
    }
}

static void sharedmemory(net *n, unsigned size) {
    char a[64], m[64], q[64], o[64], x[64], t[64];
    net_add_place(n, "Ext_Bus", 1);
    for (unsigned p = 0; p < size; p++) {
        net_add_place(n, NAME(a, "Active_%u", p), 1);
        net_add_place(n, NAME(a, "Queue_%u", p), 0);
        net_add_place(n, NAME(a, "OwnMemAcc_%u", p), 0);
        net_add_place(n, NAME(a, "Memory_%u", p), 1); /* free for external access */
        for (unsigned k = 0; k < size; k++) {
            if (k != p) net_add_place(n, NAME(a, "Ext_Mem_Acc_%u_%u", p, k), 0);
        }
    }
    for (unsigned p = 0; p < size; p++) {
        NAME(a, "Active_%u", p);
        NAME(q, "Queue_%u", p);
        NAME(o, "OwnMemAcc_%u", p);
        net_add_transition(n, NAME(t, "Begin_Own_Acc_%u", p));
        arcs(n, t, (const char *[]){a, NULL}, (const char *[]){o, NULL});
        net_add_transition(n, NAME(t, "End_Own_Acc_%u", p));
        arcs(n, t, (const char *[]){o, NULL}, (const char *[]){a, NULL});
        net_add_transition(n, NAME(t, "Req_Ext_Acc_%u", p));
        arcs(n, t, (const char *[]){a, NULL}, (const char *[]){q, NULL});
        for (unsigned k = 0; k < size; k++) {
            if (k == p) continue;
            NAME(m, "Memory_%u", k);
            NAME(x, "Ext_Mem_Acc_%u_%u", p, k);
            net_add_transition(n, NAME(t, "Begin_Ext_Acc_%u_%u", p, k));
            arcs(n, t, (const char *[]){q, "Ext_Bus", m, NULL}, (const char *[]){x, NULL});
            net_add_transition(n, NAME(t, "End_Ext_Acc_%u_%u", p, k));
            arcs(n, t, (const char *[]){x, NULL}, (const char *[]){a, "Ext_Bus", m, NULL});
        }
    }
}

static void tokenring(net *n, unsigned size) {
    unsigned machines = size + 1, values = size + 1;
    char s[64], u[64], v[64], w[64], t[64];
    for (unsigned i = 0; i < machines; i++) {
        for (unsigned k = 0; k < values; k++) net_add_place(n, NAME(s, "State_%u_%u", i, k), k == i);
    }
    /* Machine 0 moves when it equals the last machine; machine i > 0 copies
     * machine i-1 when they differ.  The other machine is read, not taken. */
    for (unsigned k = 0; k < values; k++) {
        NAME(s, "State_0_%u", k);
        NAME(u, "State_%u_%u", machines - 1, k);
        net_add_transition(n, NAME(t, "Step_0_%u", k));
        arcs(n, t, (const char *[]){s, u, NULL},
             (const char *[]){NAME(v, "State_0_%u", (k + 1) % values), u, NULL});
    }
    for (unsigned i = 1; i < machines; i++) {
        for (unsigned own = 0; own < values; own++) {
            for (unsigned left = 0; left < values; left++) {
                if (own == left) continue;
                NAME(s, "State_%u_%u", i, own);
                NAME(u, "State_%u_%u", i - 1, left);
                net_add_transition(n, NAME(t, "Copy_%u_%u_%u", i, own, left));
                arcs(n, t, (const char *[]){s, u, NULL},
                     (const char *[]){NAME(w, "State_%u_%u", i, left), u, NULL});
            }
        }
    }
}

static void kanban(net *n, unsigned size) {
    char a[64], b[64], c[64], t[64];
    for (unsigned cell = 1; cell <= 4; cell++) {
        net_add_place(n, NAME(a, "Pm%u", cell), 0);
        net_add_place(n, NAME(a, "Pback%u", cell), 0);
        net_add_place(n, NAME(a, "Pkan%u", cell), size);
        net_add_place(n, NAME(a, "Pout%u", cell), 0);
    }
    net_add_transition(n, "tin1");
    arcs(n, "tin1", (const char *[]){"Pkan1", NULL}, (const char *[]){"Pm1", NULL});
    for (unsigned cell = 1; cell <= 4; cell++) {
        NAME(a, "Pm%u", cell);
        NAME(b, "Pback%u", cell);
        NAME(c, "Pout%u", cell);
        net_add_transition(n, NAME(t, "tredo%u", cell));
        arcs(n, t, (const char *[]){a, NULL}, (const char *[]){b, NULL});
        net_add_transition(n, NAME(t, "tback%u", cell));
        arcs(n, t, (const char *[]){b, NULL}, (const char *[]){a, NULL});
        net_add_transition(n, NAME(t, "tok%u", cell));
        arcs(n, t, (const char *[]){a, NULL}, (const char *[]){c, NULL});
    }
    net_add_transition(n, "tsynch1_23");
    arcs(n, "tsynch1_23", (const char *[]){"Pout1", "Pkan2", "Pkan3", NULL},
         (const char *[]){"Pkan1", "Pm2", "Pm3", NULL});
    net_add_transition(n, "tsynch4_23");
    arcs(n, "tsynch4_23", (const char *[]){"Pout2", "Pout3", "Pkan4", NULL},
         (const char *[]){"Pkan2", "Pkan3", "Pm4", NULL});
    net_add_transition(n, "tout4");
    arcs(n, "tout4", (const char *[]){"Pout4", NULL}, (const char *[]){"Pkan4", NULL});
}

static void referendum(net *n, unsigned voters) {
    char v[64], t[64], y[64], o[64];
    net_add_place(n, "ready", 1);
    net_add_transition(n, "start");
    net_add_arc(n, "ready", "start", 1);
    for (unsigned i = 0; i < voters; i++) {
        net_add_place(n, NAME(v, "voting_%u", i), 0);
        net_add_place(n, NAME(y, "voted_yes_%u", i), 0);
        net_add_place(n, NAME(o, "voted_no_%u", i), 0);
        net_add_arc(n, "start", v, 1);
        net_add_transition(n, NAME(t, "yes_%u", i));
        arcs(n, t, (const char *[]){v, NULL}, (const char *[]){y, NULL});
        net_add_transition(n, NAME(t, "no_%u", i));
        arcs(n, t, (const char *[]){v, NULL}, (const char *[]){o, NULL});
    }
}

/* Flags are read by taking and giving back; a flag down is a place of its
 * own, so that "every other flag is down" is a test of tokens. */
static void dekker(net *n, unsigned processes) {
    char idle[64], trying[64], critical[64], up[64], down[64], other[64], t[64];
    for (unsigned i = 0; i < processes; i++) {
        net_add_place(n, NAME(idle, "idle_%u", i), 1);
        net_add_place(n, NAME(trying, "trying_%u", i), 0);
        net_add_place(n, NAME(critical, "critical_%u", i), 0);
        net_add_place(n, NAME(up, "flag_up_%u", i), 0);
        net_add_place(n, NAME(down, "flag_down_%u", i), 1);
    }
    for (unsigned i = 0; i < processes; i++) {
        NAME(idle, "idle_%u", i);
        NAME(trying, "trying_%u", i);
        NAME(critical, "critical_%u", i);
        NAME(up, "flag_up_%u", i);
        NAME(down, "flag_down_%u", i);
        net_add_transition(n, NAME(t, "raise_%u", i));
        arcs(n, t, (const char *[]){idle, down, NULL}, (const char *[]){trying, up, NULL});
        net_add_transition(n, NAME(t, "enter_%u", i));
        arcs(n, t, (const char *[]){trying, NULL}, (const char *[]){critical, NULL});
        for (unsigned j = 0; j < processes; j++) {
            if (j != i) arcs(n, t, (const char *[]){NAME(other, "flag_down_%u", j), NULL},
                             (const char *[]){other, NULL});
        }
        net_add_transition(n, NAME(t, "exit_%u", i));
        arcs(n, t, (const char *[]){critical, up, NULL}, (const char *[]){idle, down, NULL});
        for (unsigned j = 0; j < processes; j++) {
            if (j == i) continue;
            net_add_transition(n, NAME(t, "back_off_%u_%u", i, j));
            arcs(n, t, (const char *[]){trying, up, NAME(other, "flag_up_%u", j), NULL},
                 (const char *[]){idle, down, other, NULL});
        }
    }
}

/* The servers' places first, then the clients', then one per pair. */
static void serversandclients(net *n, unsigned servers, unsigned clients) {
    char free_[64], accepting[64], replying[64], busy[64], client[64], serving[64], t[64];
    net_add_place(n, "idle", 1);
    for (unsigned s = 0; s < servers; s++) {
        net_add_place(n, NAME(free_, "free_%u", s), 1);
        net_add_place(n, NAME(accepting, "accepting_%u", s), 0);
        net_add_place(n, NAME(replying, "replying_%u", s), 0);
        net_add_place(n, NAME(busy, "busy_%u", s), 0);
    }
    for (unsigned c = 0; c < clients; c++) net_add_place(n, NAME(client, "client_%u", c), 1);
    for (unsigned s = 0; s < servers; s++) {
        for (unsigned c = 0; c < clients; c++) {
            net_add_place(n, NAME(serving, "serving_%u_%u", s, c), 0);
        }
    }
    for (unsigned s = 0; s < servers; s++) {
        NAME(free_, "free_%u", s);
        NAME(accepting, "accepting_%u", s);
        NAME(replying, "replying_%u", s);
        NAME(busy, "busy_%u", s);
        net_add_transition(n, NAME(t, "connect_%u", s));
        arcs(n, t, (const char *[]){"idle", free_, NULL}, (const char *[]){accepting, busy, NULL});
        for (unsigned c = 0; c < clients; c++) {
            NAME(client, "client_%u", c);
            NAME(serving, "serving_%u_%u", s, c);
            net_add_transition(n, NAME(t, "accept_%u_%u", s, c));
            arcs(n, t, (const char *[]){accepting, client, NULL}, (const char *[]){serving, NULL});
            net_add_transition(n, NAME(t, "respond_%u_%u", s, c));
            arcs(n, t, (const char *[]){serving, NULL}, (const char *[]){replying, client, NULL});
        }
        net_add_transition(n, NAME(t, "close_%u", s));
        arcs(n, t, (const char *[]){replying, busy, NULL}, (const char *[]){"idle", free_, NULL});
    }
}

/* A size from 1 to `max`, or SxC for the two-parameter family. */
static bool one_size(const char *text, unsigned min, unsigned max, unsigned *out) {
    unsigned long long v;
    if (!cli_whole_number(text, min, max, &v)) return false;
    *out = (unsigned)v;
    return true;
}

static bool two_sizes(const char *text, unsigned *servers, unsigned *clients) {
    char first[16];
    const char *x = strchr(text, 'x');
    if (x == NULL || (size_t)(x - text) >= sizeof first) return false;
    snprintf(first, sizeof first, "%.*s", (int)(x - text), text);
    return one_size(first, 1, 1000, servers) && one_size(x + 1, 1, 1000, clients);
}

net *model_generate(const char *name, const char *size, char *error, size_t error_size) {
    static const struct {
        const char *name;
        void (*build)(net *, unsigned);
        unsigned min, max;
    } models[] = {{"philosophers", philosophers, 2, 10000}, {"sharedmemory", sharedmemory, 1, 10000},
                  {"tokenring", tokenring, 1, 10000},       {"kanban", kanban, 1, 10000},
                  {"referendum", referendum, 1, 10000},     {"dekker", dekker, 2, 1000}};
    net *n = NULL;
    if (strcmp(name, "serversandclients") == 0) {
        unsigned servers, clients;
        if (!two_sizes(size, &servers, &clients)) {
            snprintf(error, error_size, "serversandclients needs a size SxC (servers and clients, "
                     "each from 1 to 1000), not '%.40s'", size);
            return NULL;
        }
        n = net_new();
        serversandclients(n, servers, clients);
    }
    for (size_t i = 0; n == NULL && i < sizeof models / sizeof models[0]; i++) {
        if (strcmp(models[i].name, name) != 0) continue;
        unsigned count;
        if (!one_size(size, models[i].min, models[i].max, &count)) {
            snprintf(error, error_size, "%s needs a size from %u to %u, not '%.40s'", name,
                     models[i].min, models[i].max, size);
            return NULL;
        }
        n = net_new();
        models[i].build(n, count);
    }
    if (n != NULL) {
        if (n->error[0]) { /* a bug in a generator, not the user's mistake */
            snprintf(error, error_size, "generator %s: %s", name, n->error);
            net_free(n);
            return NULL;
        }
        return n;
    }
    snprintf(error, error_size,
             "unknown model '%s' (known: philosophers, sharedmemory, tokenring, kanban, "
             "referendum, dekker, serversandclients)", name);
    return NULL;
}

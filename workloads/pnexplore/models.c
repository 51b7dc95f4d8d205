/* The scalable models of the Model Checking Contest that the tests count:
 *   philosophers N  3^N states, 7N*3^(N-2) edges, 2 deadlocks
 *   sharedmemory N  3^(N-1)*(N^2-N+3) states
 *   tokenring N     Dijkstra's self-stabilising ring of N+1 machines with N+1
 *                   states each, started with machine i in state i (166 states
 *                   for N=5)
 *   kanban N        Ciardo's four-cell Kanban, N cards a cell (160, 4600,
 *                   58400, 454475 states for N=1..4) */
#include "models.h"

#include <stdio.h>
#include <string.h>

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

net *model_generate(const char *name, unsigned size, char *error, size_t error_size) {
    static const struct {
        const char *name;
        void (*build)(net *, unsigned);
        unsigned min;
    } models[] = {{"philosophers", philosophers, 2}, {"sharedmemory", sharedmemory, 1},
                  {"tokenring", tokenring, 1}, {"kanban", kanban, 1}};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        if (strcmp(models[i].name, name) != 0) continue;
        if (size < models[i].min || size > 10000) {
            snprintf(error, error_size, "%s needs a size from %u to 10000, not %u", name,
                     models[i].min, size);
            return NULL;
        }
        net *n = net_new();
        models[i].build(n, size);
        if (n->error[0]) { /* a bug in a generator, not the user's mistake */
            snprintf(error, error_size, "generator %s: %s", name, n->error);
            net_free(n);
            return NULL;
        }
        return n;
    }
    snprintf(error, error_size,
             "unknown model '%s' (known: philosophers, sharedmemory, tokenring, kanban)", name);
    return NULL;
}

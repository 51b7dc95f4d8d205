/* One thread's tabled evaluation of a query: SLG resolution with local
 * scheduling over the shared or private tables of a table space. */
#ifndef HHTAB_ENGINE_H
#define HHTAB_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "hugeheap.h"

#include "program.h"
#include "table.h"

typedef struct engine engine;

/* Called once per solution of the query with the query's variables as
 * canonical terms (VAR(k): the solution's k-th distinct unbound variable);
 * their compounds last until the call returns. */
typedef void (*solution_fn)(void *ctx, const term *values, uint32_t n);

/* The memory an engine works in: its term heap and its consumers' arena.
 * Made before a run's clock starts and kept across runs (an engine resets
 * them), so that no run pays for mapping them and touching their huge
 * pages the first time.  One engine at a time uses them. */
typedef struct engine_memory {
    hh_arena *heap, *consumers;
} engine_memory;

/* False on no memory (destroy what was made all the same). */
bool engine_memory_create(engine_memory *m);
void engine_memory_destroy(engine_memory *m);

/* stack_floor: the lowest address this thread's C stack may reach; deeper
 * evaluation stops the program with a message instead of overflowing. */
engine *engine_new(const program *prog, tablespace *ts, unsigned thread, const char *stack_floor,
                   engine_memory *memory);
/* Frees the engine; its memory stays for the next. */
void engine_free(engine *e);
/* Runs the query to the end; emit may be NULL. */
void engine_query(engine *e, const query *q, solution_fn emit, void *ctx);
uint64_t engine_solutions(const engine *e);
table_thread *engine_counts(engine *e);

#endif

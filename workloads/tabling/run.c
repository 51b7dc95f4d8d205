/* Threads and repetitions.  Each repetition starts its threads afresh (a
 * thread that exits hands its pool pages back, as in the paper), times them
 * from the start until the last one's query ended, lets thread 0 read the
 * pools' pages, then every thread abolishes what is private to it and the
 * main thread the shared rest, the walks that free thread 0's view of the
 * tables counting it on the way. */
#include "run.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"

#define THREAD_STACK ((size_t)256 << 20)
#define STACK_MARGIN ((size_t)1 << 20) /* kept free below the deepest frame */

typedef struct shared_run shared_run;

typedef struct worker {
    shared_run *s;
    unsigned index;
    pthread_t thread;
    struct timespec end;
    uint64_t solutions;
    table_thread counts;
    int64_t bytes_at_end;
} worker;

struct shared_run {
    const program *prog;
    const run_options *o;
    tablespace *ts;
    pthread_barrier_t ended, read;
    run_result *r;
    engine_memory *memory; /* [thread], kept across runs */
    bool keep; /* thread 0 keeps its solutions as text */
};

static void keep_solution(void *ctx, const term *values, uint32_t n) {
    shared_run *s = ctx;
    (void)n;
    if (!write_solution(s->prog, &s->o->queries[0], values, &s->r->solutions)) {
        table_out_of_memory();
    }
}

static void *work(void *arg) {
    worker *w = arg;
    shared_run *s = w->s;
    const char *floor = (const char *)__builtin_frame_address(0) - (THREAD_STACK - STACK_MARGIN);
    engine *e = engine_new(s->prog, s->ts, w->index, floor, &s->memory[w->index]);
    if (e == NULL) table_out_of_memory();
    bool keep = w->index == 0 && s->keep;
    engine_query(e, &s->o->queries[w->index % s->o->nqueries], keep ? keep_solution : NULL, s);
    clock_gettime(CLOCK_MONOTONIC, &w->end);
    table_thread_done(s->ts, w->index);
    w->solutions = engine_solutions(e);
    table_thread *c = engine_counts(e);
    w->bytes_at_end = c->bytes;
    pthread_barrier_wait(&s->ended);
    if (w->index == 0) {
        table_memory_report mem;
        table_memory(s->ts, &mem);
        s->r->pool_pages = mem.pool_pages;
    }
    pthread_barrier_wait(&s->read);
    table_abolish_private(s->ts, w->index, c, w->index == 0 ? &s->r->stats : NULL);
    w->counts = *c;
    engine_free(e);
    return NULL;
}

static void free_engine_memory(engine_memory *memory, unsigned threads) {
    for (unsigned i = 0; memory != NULL && i < threads; i++) engine_memory_destroy(&memory[i]);
    free(memory);
}

static double seconds_between(const struct timespec *a, const struct timespec *b) {
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

bool run_query(const program *prog, const run_options *o, run_result *r, char *error,
               size_t error_size) {
    memset(r, 0, sizeof *r);
    r->repeated = calloc(o->threads, sizeof *r->repeated);
    r->inserted = calloc(o->threads, sizeof *r->inserted);
    r->seconds = calloc(o->repeat, sizeof *r->seconds);
    worker *workers = calloc(o->threads, sizeof *workers);
    tablespace *ts = tablespace_new(prog, o->design, o->alloc, o->threads);
    /* The engines' memory is made (and its first pages touched) here, before
     * the first run's clock starts. */
    engine_memory *memory = calloc(o->threads, sizeof *memory);
    bool made = memory != NULL;
    for (unsigned i = 0; made && i < o->threads; i++) made = engine_memory_create(&memory[i]);
    if (!r->repeated || !r->inserted || !r->seconds || !workers || !ts || !made) {
        snprintf(error, error_size, "out of memory");
        free(workers);
        tablespace_free(ts);
        free_engine_memory(memory, o->threads);
        return false;
    }
    shared_run s = {.prog = prog, .o = o, .ts = ts, .r = r, .memory = memory};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, THREAD_STACK);
    bool ok = true;
    table_thread main_counts = {0};
    for (unsigned rep = 0; rep < o->repeat && ok; rep++) {
        s.keep = o->keep_solutions && rep + 1 == o->repeat;
        pthread_barrier_init(&s.ended, NULL, o->threads);
        pthread_barrier_init(&s.read, NULL, o->threads);
        table_run_start(ts);
        memset(&r->stats, 0, sizeof r->stats);
        struct timespec start;
        clock_gettime(CLOCK_MONOTONIC, &start);
        unsigned started = 0;
        for (; started < o->threads; started++) {
            workers[started] = (worker){.s = &s, .index = started};
            worker *w = &workers[started];
            if (pthread_create(&w->thread, &attr, work, w) != 0) break;
        }
        if (started < o->threads) {
            /* The barriers wait for every thread: without all of them, stop. */
            fprintf(stderr, "hhtab: could not start thread %u of %u\n", started + 1, o->threads);
            exit(3);
        }
        struct timespec last = start;
        for (unsigned i = 0; i < o->threads; i++) {
            pthread_join(workers[i].thread, NULL);
            if (seconds_between(&last, &workers[i].end) > 0) last = workers[i].end;
        }
        table_abolish_shared(ts, &main_counts, &r->stats);
        pthread_barrier_destroy(&s.ended);
        pthread_barrier_destroy(&s.read);
        r->seconds[rep] = seconds_between(&start, &last);
        r->answers = workers[0].solutions;
        r->table_bytes = 0;
        r->wait_cycles = 0;
        int64_t left = main_counts.bytes;
        for (unsigned i = 0; i < o->threads; i++) {
            r->repeated[i] = workers[i].counts.repeated;
            r->inserted[i] = workers[i].counts.inserted;
            r->wait_cycles += workers[i].counts.wait_cycles;
            r->table_bytes += workers[i].bytes_at_end;
            left += workers[i].counts.bytes;
            /* Threads that ran the same query found the same solutions. */
            const worker *first = &workers[i % o->nqueries];
            if (workers[i].solutions != first->solutions) {
                snprintf(error, error_size,
                         "internal error: thread %u found %llu solutions, thread %u %llu", i,
                         (unsigned long long)workers[i].solutions, first->index,
                         (unsigned long long)first->solutions);
                ok = false;
            }
        }
        main_counts.bytes = 0;
        if (ok && left != 0) {
            snprintf(error, error_size, "internal error: abolishing the tables left %lld bytes",
                     (long long)left);
            ok = false;
        }
    }
    pthread_attr_destroy(&attr);
    free(workers);
    tablespace_free(ts);
    free_engine_memory(memory, o->threads);
    return ok;
}

void run_result_free(run_result *r) {
    free(r->repeated);
    free(r->inserted);
    free(r->seconds);
    free(r->solutions.s);
}

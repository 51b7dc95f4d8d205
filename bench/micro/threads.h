/* Threads for the microbenchmarks: COUNT threads run one function at once,
 * each on its own element of an array of arguments, and the caller waits for
 * them all. */
#ifndef HH_MICRO_THREADS_H
#define HH_MICRO_THREADS_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs BODY on COUNT threads, thread i with ARGS + i * SIZE (an array of
 * COUNT elements of SIZE bytes), and returns when all have ended; exits 1
 * naming PROGRAM if a thread cannot be started. */
static inline void micro_run_threads(const char *program, long count, void *(*body)(void *),
                                     void *args, size_t size) {
    pthread_t *ids = calloc((size_t)count, sizeof *ids);
    for (long i = 0; i < count; i++) {
        if (pthread_create(&ids[i], NULL, body, (char *)args + (size_t)i * size) != 0) {
            fprintf(stderr, "%s: cannot start thread %ld of %ld\n", program, i + 1, count);
            exit(1);
        }
    }
    for (long i = 0; i < count; i++) pthread_join(ids[i], NULL);
    free(ids);
}

#endif

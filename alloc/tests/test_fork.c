/* fork() in a threaded program: while other threads allocate and free, the
 * main thread forks; parent and child both keep working, the child also with
 * threads of its own and with blocks the parent's threads own. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "hugeheap.h"

static atomic_bool stop;
static hh_pool *pool; /* pools have locks of their own: fork must not leave one taken */

static void *churn(void *arg) {
    (void)arg;
    void *keep[64] = {0};
    unsigned i = 0;
    while (!atomic_load(&stop)) {
        unsigned slot = i % 64;
        free(keep[slot]);
        keep[slot] = malloc(16 + (i * 37) % 5000);
        memset(keep[slot], 1, 16);
        if (i % 3 == 0) { /* the growth heap has a lock of its own too */
            keep[slot] = realloc(keep[slot], 16 + (i * 53) % 9000);
        }
        if (i % 1000 == 0) {
            void *big = malloc(3 << 20); /* large blocks take the global lock */
            free(big);
        }
        if (i % 64 == 0) { /* and new pool pages take the pool's */
            void *objects[300];
            for (int k = 0; k < 300; k++) objects[k] = hh_pool_alloc(pool);
            for (int k = 0; k < 300; k++) hh_pool_free(pool, objects[k]);
        }
        i++;
    }
    for (int k = 0; k < 64; k++) free(keep[k]);
    return NULL;
}

static void *child_worker(void *arg) {
    char **shared = arg;
    for (int i = 0; i < 10000; i++) free(malloc(100 + (size_t)i % 900));
    free(shared[1]); /* a parent-era block, freed by a thread of the child */
    return NULL;
}

static int run_child(char **from_parent) {
    int ok = 1;
    for (int i = 0; i < 4; i++) ok &= strcmp(from_parent[i], "before fork") == 0;
    pthread_t t;
    if (pthread_create(&t, NULL, child_worker, from_parent) != 0) return 2;
    for (int i = 0; i < 20000; i++) {
        char *p = malloc(32 + (size_t)i % 2000);
        if (!p || !hh_owns(p)) ok = 0;
        p = realloc(p, 100 + (size_t)i % 3000);
        if (!p || !hh_owns(p)) ok = 0;
        free(p);
        void *object = hh_pool_alloc(pool);
        if (object == NULL) ok = 0;
        hh_pool_free(pool, object);
    }
    pthread_join(t, NULL);
    free(from_parent[0]);
    free(from_parent[3]);
    return ok ? 0 : 1;
}

int main(void) {
    pool = hh_pool_create(24);
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) pthread_create(&threads[i], NULL, churn, NULL);
    int children_ok = 1;
    for (int round = 0; round < 40; round++) {
        char *from_parent[4];
        for (int i = 0; i < 4; i++) from_parent[i] = strdup("before fork");
        from_parent[3] = realloc(from_parent[3], 300); /* a block of the growth heap */
        pid_t pid = fork();
        if (pid == 0) _exit(run_child(from_parent));
        CHECK(pid > 0);
        int status = 0;
        waitpid(pid, &status, 0);
        children_ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
        for (int i = 0; i < 4; i++) free(from_parent[i]);
        void *after = malloc(1000);
        CHECK(after != NULL && hh_owns(after));
        free(after);
    }
    atomic_store(&stop, true);
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    hh_pool_destroy(pool);
    CHECK(children_ok);
    return check_summary();
}

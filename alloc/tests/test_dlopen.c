/* A program that knows nothing of hugeheap, run with it preloaded: a plugin
 * loaded with dlopen allocates and frees through it too, blocks cross the
 * boundary both ways, and the plugin can be unloaded and loaded again. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int main(int argc, char **argv) {
    if (argc < 2) SKIP("usage: test_dlopen PLUGIN.so");
    bool (*owns)(const void *) = (bool (*)(const void *))dlsym(RTLD_DEFAULT, "hh_owns");
    if (owns == NULL) {
        printf("hugeheap is not preloaded (LD_PRELOAD=libhugeheap.so)\n");
        return 1;
    }
    for (int round = 0; round < 3; round++) {
        void *plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        CHECK(plugin != NULL);
        if (plugin == NULL) break;
        char *(*make)(const char *) = (char *(*)(const char *))dlsym(plugin, "plugin_make");
        void (*take)(char *) = (void (*)(char *))dlsym(plugin, "plugin_take");
        int (*churn)(int) = (int (*)(int))dlsym(plugin, "plugin_churn");
        CHECK(make && take && churn);
        char *made = make("made in the plugin");
        CHECK(owns(made) && strcmp(made, "made in the plugin") == 0);
        free(made);
        char *given = strdup("made in the program");
        CHECK(owns(given));
        take(given);
        CHECK(churn(50000) == 0);
        CHECK(dlclose(plugin) == 0);
    }
    return check_summary();
}

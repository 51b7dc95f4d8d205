/* The plugin of test_dlopen: allocates, frees, and frees what it is given. */
#include <stdlib.h>
#include <string.h>

char *plugin_make(const char *text) { return strdup(text); }

void plugin_take(char *block) { free(block); }

int plugin_churn(int rounds) {
    void *slots[128] = {0};
    for (int i = 0; i < rounds; i++) {
        free(slots[i % 128]);
        slots[i % 128] = malloc((size_t)(i * 7919) % 20000 + 1);
        if (slots[i % 128] == NULL) return 1;
    }
    for (int i = 0; i < 128; i++) free(slots[i]);
    return 0;
}

/* Reading a net file: the whole file into memory, then the reader its
 * content asks for (PNML or LoLA). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"

/* By content: PNML starts with '<' (after blanks), anything else is LoLA. */
net *read_net(const char *path, char *error, size_t error_size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(error, error_size, "%s: cannot read it (%s)", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    size_t got;
    while (text && (got = fread(text + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) text = realloc(text, cap *= 2);
    }
    fclose(f);
    if (text == NULL) {
        snprintf(error, error_size, "%s: out of memory", path);
        return NULL;
    }
    text[len] = '\0';
    const char *s = text;
    while (isspace((unsigned char)*s)) s++;
    net *n = *s == '<' ? read_pnml(path, text, error, error_size)
                       : read_lola(path, text, error, error_size);
    free(text);
    return n;
}

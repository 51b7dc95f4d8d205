/* Reading a net file: the whole file into memory, then the reader its
 * content asks for (PNML or LoLA). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"

/* The whole file, NUL-terminated; NULL with the reason in `error`. */
static char *read_whole(const char *path, char *error, size_t error_size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(error, error_size, "%s: cannot read it (%s)", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0, got;
    char *text = malloc(cap);
    while (text != NULL && (got = fread(text + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 < cap) continue;
        char *grown = realloc(text, cap *= 2);
        if (grown == NULL) free(text);
        text = grown;
    }
    /* A directory opens but does not read (EISDIR): that is the message. */
    int failure = text == NULL ? ENOMEM : ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    if (failure) {
        snprintf(error, error_size, "%s: cannot read it (%s)", path, strerror(failure));
        free(text);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

/* By content: PNML starts with '<' (after blanks), anything else is LoLA. */
net *read_net(const char *path, char *error, size_t error_size) {
    char *text = read_whole(path, error, error_size);
    if (text == NULL) return NULL;
    const char *s = text;
    while (isspace((unsigned char)*s)) s++;
    net *n = *s == '<' ? read_pnml(path, text, error, error_size)
                       : read_lola(path, text, error, error_size);
    free(text);
    return n;
}

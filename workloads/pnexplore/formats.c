/* Reading a net file: the whole file into memory, then the reader its
 * content asks for (PNML or LoLA). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "formats.h"

/* By content: PNML starts with '<' (after blanks), anything else is LoLA.  A
 * folder is read as the contest lays out a model: its model.pnml. */
net *read_net(const char *path, char *error, size_t error_size) {
    struct stat st;
    char inside[4096];
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(inside, sizeof inside, "%s%smodel.pnml", path,
                 path[0] && path[strlen(path) - 1] == '/' ? "" : "/");
        path = inside;
    }
    size_t len;
    char *text = cli_read_file(path, &len, error, error_size);
    if (text == NULL) return NULL;
    const char *s = text;
    while (isspace((unsigned char)*s)) s++;
    net *n = *s == '<' ? read_pnml(path, text, error, error_size)
                       : read_lola(path, text, error, error_size);
    free(text);
    return n;
}

/* Nets on disk: PNML place/transition nets (as the Model Checking Contest
 * ships them) and LoLA's text format.  Readers return NULL and put a message
 * naming the file, the line and the element in `error`. */
#ifndef PNEXPLORE_FORMATS_H
#define PNEXPLORE_FORMATS_H

#include <stdio.h>

#include "net.h"

/* A net file, or a folder's model.pnml (the contest's layout). */
net *read_net(const char *path, char *error, size_t error_size);
net *read_lola(const char *path, const char *text, char *error, size_t error_size);
net *read_pnml(const char *path, const char *text, char *error, size_t error_size);
/* Whether every name can be written in the format (PNML: also the net id
 * `name`); false with a message naming the first that cannot.  The writers
 * trust a net that passed. */
bool lola_can_carry(const net *n, char *error, size_t error_size);
bool pnml_can_carry(const net *n, const char *name, char *error, size_t error_size);
void write_lola(const net *n, FILE *out);
void write_pnml(const net *n, const char *name, FILE *out);

#endif

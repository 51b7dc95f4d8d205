/* The contest's scalable models, built by name and size (models.c). */
#ifndef PNEXPLORE_MODELS_H
#define PNEXPLORE_MODELS_H

#include "net.h"

/* The model `name` of `size` (a number, or SxC for serversandclients); NULL
 * with the reason in `error` for an unknown model or a bad size. */
net *model_generate(const char *name, const char *size, char *error, size_t error_size);

#endif

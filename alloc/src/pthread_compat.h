/* The shared library must load on glibc 2.17: bind the pthread functions it
 * uses to their oldest symbol versions (glibc 2.34 moved them into libc under
 * a new version), and weakly, since before 2.34 they live in libpthread, which
 * a single-threaded program may not load.  Callers check pthread_key_create
 * for NULL before using any of them. */
#ifndef HUGEHEAP_PTHREAD_COMPAT_H
#define HUGEHEAP_PTHREAD_COMPAT_H

#include <pthread.h>

#if defined(HH_SHARED_LIBRARY)
#if defined(__x86_64__)
#define HH_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define HH_GLIBC_BASE "GLIBC_2.17"
#endif
#ifdef HH_GLIBC_BASE
__asm__(".symver pthread_key_create,pthread_key_create@" HH_GLIBC_BASE);
__asm__(".symver pthread_setspecific,pthread_setspecific@" HH_GLIBC_BASE);
#endif
#pragma weak pthread_key_create
#pragma weak pthread_setspecific
#endif

#endif

/* The C++ allocation operators, defined by the library itself under their
 * Itanium C++ ABI names (as mimalloc, jemalloc and tcmalloc define them): a
 * C++ program's new and delete reach the fast paths directly instead of
 * through libstdc++'s operators and a call of malloc, and a sized delete has
 * its size checked against the block (a delete that does not match its new
 * stops the program, as a double free does).
 *
 * Only where the names are known (LP64: size_t is unsigned long, mangled
 * `m`) and only in the shared library, the one preloaded; a static link
 * keeps the C++ runtime's operators, which call our malloc anyway.
 *
 * A program may replace some operators itself.  The standard defines the
 * other forms by a few base ones (new[] calls new, a sized or nothrow delete
 * calls the plain one, delete[] calls delete, the aligned forms likewise),
 * and libstdc++'s forms make those calls: a program that replaces only new
 * and delete gets its own memory from new[] and gives it back by a sized
 * delete.  So do ours: when any base form is not ours (the dynamic linker
 * bound its name to the program's or another library's definition), each
 * other form of ours calls the form it is defined by, by name.  This file is
 * compiled with -fsemantic-interposition, so that those calls, and the
 * addresses compared to find out, go where the dynamic linker bound the
 * names rather than straight to our definitions.
 *
 * When an allocation fails, new does what the standard asks: it calls the
 * program's new_handler and tries again while there is one, then throws
 * std::bad_alloc (the nothrow forms return NULL).  C cannot throw or catch:
 * the C++ runtime's own functions do it (std::get_new_handler and
 * std::__throw_bad_alloc, referenced weakly: a program without libstdc++
 * calls no operator new).  This file is compiled with -fexceptions so that
 * what they throw passes through our frames.  One difference from
 * libstdc++: an exception thrown inside a nothrow new (by a new_handler, or
 * by a replaced new it calls) leaves it, where libstdc++ catches it and
 * returns NULL; C cannot catch.  mimalloc's C operators share it. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "fastpath.h"
#include "hugeheap.h"
#include "internal.h"

#if defined(HH_SHARED_LIBRARY) && !defined(HH_NO_OVERRIDE) && defined(__LP64__)

typedef struct nothrow_tag nothrow_tag; /* std::nothrow_t, only ever passed by reference */
typedef void (*new_handler)(void);

/* std::get_new_handler() and std::__throw_bad_alloc(), from libstdc++. */
extern new_handler _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

/* A block for new: alignment 0 is malloc's, any other memalign's (a power
 * of two; anything else is undefined in C++). */
static inline __attribute__((always_inline)) void *new_block(size_t size, size_t alignment) {
    return alignment != 0 ? hh_memalign(alignment, size) : _hh_alloc(size, false);
}

/* A new that found no memory: the program's handler, as long as it sets one,
 * and allocation again; then std::bad_alloc, or NULL where nothrow. */
static HH_NOINLINE void *new_failed(size_t size, size_t alignment, bool nothrow) {
    for (;;) {
        new_handler handler = _ZSt15get_new_handlerv != NULL ? _ZSt15get_new_handlerv() : NULL;
        if (handler == NULL) break;
        handler();
        void *p = new_block(size, alignment);
        if (p != NULL) return p;
    }
    if (nothrow) return NULL;
    if (_ZSt17__throw_bad_allocv != NULL) _ZSt17__throw_bad_allocv();
    _hh_fatal("operator new: out of memory, and no C++ runtime to throw std::bad_alloc;"
              " bytes asked for (hex):",
              (const void *)(uintptr_t)size);
}

/* What every form of new does with what it is asked for. */
static inline __attribute__((always_inline)) void *new_or_fail(size_t size, size_t alignment,
                                                              bool nothrow) {
    void *p = new_block(size, alignment);
    return HH_LIKELY(p != NULL) ? p : new_failed(size, alignment, nothrow);
}

/* ------------------------------------------------------- the base forms */

/* operator new(std::size_t) */
HH_API void *_Znwm(size_t size) {
    return new_or_fail(size, 0, false);
}

/* operator new[](std::size_t) */
HH_API void *_Znam(size_t size);

/* operator new(std::size_t, std::align_val_t), and new[] */
HH_API void *_ZnwmSt11align_val_t(size_t size, size_t alignment) {
    return new_or_fail(size, alignment, false);
}
HH_API void *_ZnamSt11align_val_t(size_t size, size_t alignment);

/* operator delete(void *), and delete[] */
HH_API void _ZdlPv(void *p) { _hh_free_fast(p, 0); }
HH_API void _ZdaPv(void *p);

/* operator delete(void *, std::align_val_t), and delete[] */
HH_API void _ZdlPvSt11align_val_t(void *p, size_t alignment) {
    (void)alignment;
    _hh_free_fast(p, 0);
}
HH_API void _ZdaPvSt11align_val_t(void *p, size_t alignment);

/* -------------------------------------- whether the program replaced any */

/* Our own addresses of the forms others are defined by (static aliases: the
 * dynamic linker cannot rebind these names). */
#define HH_OWN(name) __attribute__((alias(#name)))
static void *own_Znwm(size_t) HH_OWN(_Znwm);
static void *own_Znam(size_t) HH_OWN(_Znam);
static void *own_ZnwmSt11align_val_t(size_t, size_t) HH_OWN(_ZnwmSt11align_val_t);
static void *own_ZnamSt11align_val_t(size_t, size_t) HH_OWN(_ZnamSt11align_val_t);
static void own_ZdlPv(void *) HH_OWN(_ZdlPv);
static void own_ZdaPv(void *) HH_OWN(_ZdaPv);
static void own_ZdlPvSt11align_val_t(void *, size_t) HH_OWN(_ZdlPvSt11align_val_t);
static void own_ZdaPvSt11align_val_t(void *, size_t) HH_OWN(_ZdaPvSt11align_val_t);

enum { NOT_LOOKED, ALL_OURS, SOME_REPLACED };
static _Atomic(int) replacement = NOT_LOOKED;

/* Whether the other forms must call the base forms by name.  Looked up at
 * the first call (the dynamic linker has bound the names by then; our
 * constructor may run after the C++ runtime's, which allocates); every thread
 * finds the same answer, so a race is harmless. */
static HH_NOINLINE bool look_for_replacements(void) {
    bool ours = &_Znwm == &own_Znwm && &_Znam == &own_Znam &&
                &_ZnwmSt11align_val_t == &own_ZnwmSt11align_val_t &&
                &_ZnamSt11align_val_t == &own_ZnamSt11align_val_t && &_ZdlPv == &own_ZdlPv &&
                &_ZdaPv == &own_ZdaPv && &_ZdlPvSt11align_val_t == &own_ZdlPvSt11align_val_t &&
                &_ZdaPvSt11align_val_t == &own_ZdaPvSt11align_val_t;
    atomic_store_explicit(&replacement, ours ? ALL_OURS : SOME_REPLACED, memory_order_relaxed);
    return !ours;
}

static inline __attribute__((always_inline)) bool replaced(void) {
    int state = atomic_load_explicit(&replacement, memory_order_relaxed);
    if (HH_LIKELY(state == ALL_OURS)) return false;
    return state == SOME_REPLACED || look_for_replacements();
}

/* ----------------------------------------------------- the other forms */

HH_API void *_Znam(size_t size) {
    if (HH_UNLIKELY(replaced())) return _Znwm(size);
    return new_or_fail(size, 0, false);
}

HH_API void *_ZnamSt11align_val_t(size_t size, size_t alignment) {
    if (HH_UNLIKELY(replaced())) return _ZnwmSt11align_val_t(size, alignment);
    return new_or_fail(size, alignment, false);
}

/* operator new(std::size_t, const std::nothrow_t &), and new[] */
HH_API void *_ZnwmRKSt9nothrow_t(size_t size, const nothrow_tag *tag) {
    (void)tag;
    if (HH_UNLIKELY(replaced())) return _Znwm(size);
    return new_or_fail(size, 0, true);
}
HH_API void *_ZnamRKSt9nothrow_t(size_t size, const nothrow_tag *tag) {
    (void)tag;
    if (HH_UNLIKELY(replaced())) return _Znam(size);
    return new_or_fail(size, 0, true);
}

/* operator new(std::size_t, std::align_val_t, const std::nothrow_t &), and new[] */
HH_API void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t alignment,
                                                const nothrow_tag *tag) {
    (void)tag;
    if (HH_UNLIKELY(replaced())) return _ZnwmSt11align_val_t(size, alignment);
    return new_or_fail(size, alignment, true);
}
HH_API void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t alignment,
                                                const nothrow_tag *tag) {
    (void)tag;
    if (HH_UNLIKELY(replaced())) return _ZnamSt11align_val_t(size, alignment);
    return new_or_fail(size, alignment, true);
}

HH_API void _ZdaPv(void *p) {
    if (HH_UNLIKELY(replaced())) {
        _ZdlPv(p);
        return;
    }
    _hh_free_fast(p, 0);
}

HH_API void _ZdaPvSt11align_val_t(void *p, size_t alignment) {
    if (HH_UNLIKELY(replaced())) {
        _ZdlPvSt11align_val_t(p, alignment);
        return;
    }
    _hh_free_fast(p, 0);
}

/* operator delete(void *, const std::nothrow_t &), and delete[] and the
 * aligned forms */
HH_API void _ZdlPvRKSt9nothrow_t(void *p, const nothrow_tag *tag) {
    (void)tag;
    _ZdlPv(p);
}
HH_API void _ZdaPvRKSt9nothrow_t(void *p, const nothrow_tag *tag) {
    (void)tag;
    _ZdaPv(p);
}
HH_API void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t alignment, const nothrow_tag *tag) {
    (void)tag;
    _ZdlPvSt11align_val_t(p, alignment);
}
HH_API void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t alignment, const nothrow_tag *tag) {
    (void)tag;
    _ZdaPvSt11align_val_t(p, alignment);
}

/* operator delete(void *, std::size_t), and delete[] and the aligned forms:
 * the size is the one new was asked for, checked against the block. */
HH_API void _ZdlPvm(void *p, size_t size) {
    if (HH_UNLIKELY(replaced())) {
        _ZdlPv(p);
        return;
    }
    _hh_free_fast(p, size);
}
HH_API void _ZdaPvm(void *p, size_t size) {
    if (HH_UNLIKELY(replaced())) {
        _ZdaPv(p);
        return;
    }
    _hh_free_fast(p, size);
}
HH_API void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t alignment) {
    if (HH_UNLIKELY(replaced())) {
        _ZdlPvSt11align_val_t(p, alignment);
        return;
    }
    _hh_free_fast(p, size);
}
HH_API void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t alignment) {
    if (HH_UNLIKELY(replaced())) {
        _ZdaPvSt11align_val_t(p, alignment);
        return;
    }
    _hh_free_fast(p, size);
}

#endif

/* Integer arithmetic of is/2 and the comparisons: SWI-Prolog's functions
 * over hhtab's 61-bit integers, each overflow, division by zero or
 * non-integer result a stop with the goal's place (exit code 3). */
#include "arith.h"

#include <stdarg.h>
#include <stdio.h>

static _Noreturn void runtime_error(const evaluation *ev, const literal *l, const char *what) {
    char message[512];
    snprintf(message, sizeof message, "%s:%u:%u: %s", ev->prog->name, l->line, l->column, what);
    stop_evaluation(message);
}

static _Noreturn void arithmetic_error(const evaluation *ev, const literal *l, const char *format,
                                       ...) __attribute__((format(printf, 3, 4)));
static _Noreturn void arithmetic_error(const evaluation *ev, const literal *l, const char *format,
                                       ...) {
    char what[400];
    va_list ap;
    va_start(ap, format);
    vsnprintf(what, sizeof what, format, ap);
    va_end(ap);
    runtime_error(ev, l, what);
}

static int64_t checked(const evaluation *ev, const literal *l, bool overflow, int64_t v) {
    if (overflow || v < -INT_LIMIT || v >= INT_LIMIT) {
        arithmetic_error(ev, l, "integer overflow (hhtab's integers have 61 bits and a sign)");
    }
    return v;
}

static int64_t power(const evaluation *ev, const literal *l, int64_t base, int64_t exp) {
    if (exp < 0) {
        if (base == 1) return 1;
        if (base == -1) return exp % 2 ? -1 : 1;
        arithmetic_error(ev, l, "%lld^%lld is not an integer (hhtab has integers only)",
                         (long long)base, (long long)exp);
    }
    int64_t result = 1, product;
    while (exp > 0) {
        if (exp & 1) {
            bool overflow = __builtin_mul_overflow(result, base, &product);
            result = checked(ev, l, overflow, product);
        }
        exp >>= 1;
        if (exp > 0) {
            bool overflow = __builtin_mul_overflow(base, base, &product);
            base = checked(ev, l, overflow, product);
        }
    }
    return result;
}

/* The integer value of an arithmetic expression of env. */
int64_t eval(const evaluation *ev, const term *env, term t, const literal *l) {
    t = deref(env, t);
    if (is_int(t)) return int_value(t);
    if (is_ref(t)) arithmetic_error(ev, l, "arguments are not sufficiently instantiated");
    if (is_atom(t)) {
        text name = {0};
        write_term(ev->prog, t, NULL, &name);
        arithmetic_error(ev, l, "%s is not a number or an arithmetic function of hhtab",
                         name.s ? name.s : "an atom");
    }
    const compound *c = term_compound(t);
    if (c->functor < F_FIRST_ARITH || c->functor >= N_FIXED_FUNCTORS ||
        ev->prog->functors[c->functor].arity != c->arity) {
        const functor_def *f = &ev->prog->functors[c->functor];
        arithmetic_error(ev, l, "%s/%u is not an arithmetic function of hhtab",
                         ev->prog->atom_names[f->name], f->arity);
    }
    check_stack(ev->th);
    int64_t a = eval(ev, env, c->args[0], l), b = c->arity > 1 ? eval(ev, env, c->args[1], l) : 0;
    int64_t r = 0;
    bool overflow;
    switch (c->functor) {
    case F_ADD:
        overflow = __builtin_add_overflow(a, b, &r);
        return checked(ev, l, overflow, r);
    case F_SUB:
        overflow = __builtin_sub_overflow(a, b, &r);
        return checked(ev, l, overflow, r);
    case F_MUL:
        overflow = __builtin_mul_overflow(a, b, &r);
        return checked(ev, l, overflow, r);
    case F_NEG: return checked(ev, l, false, -a);
    case F_PLUS: return a;
    case F_ABS: return checked(ev, l, false, a < 0 ? -a : a);
    case F_SIGN: return (a > 0) - (a < 0);
    case F_MIN: return a < b ? a : b;
    case F_MAX: return a > b ? a : b;
    case F_BIT_AND: return a & b;
    case F_BIT_OR: return a | b;
    case F_XOR: return a ^ b;
    case F_BIT_NOT: return ~a;
    case F_POWER:
    case F_STAR_POWER: return power(ev, l, a, b);
    case F_MSB:
        if (a <= 0) arithmetic_error(ev, l, "msb(%lld): not a positive integer", (long long)a);
        return 63 - __builtin_clzll((unsigned long long)a);
    case F_SHIFT_LEFT:
    case F_SHIFT_RIGHT: {
        int64_t by = c->functor == F_SHIFT_LEFT ? b : -b; /* left by `by` bits */
        if (a == 0) return 0;
        if (by <= 0) return -by >= 63 ? (a < 0 ? -1 : 0) : a >> -by;
        if (by >= 62) return checked(ev, l, true, 0);
        overflow = __builtin_mul_overflow(a, (int64_t)1 << by, &r);
        return checked(ev, l, overflow, r);
    }
    case F_GCD: {
        int64_t x = a < 0 ? -a : a, y = b < 0 ? -b : b;
        while (y != 0) {
            int64_t z = x % y;
            x = y;
            y = z;
        }
        return checked(ev, l, false, x);
    }
    default: break;
    }
    /* Divisions */
    if (b == 0) arithmetic_error(ev, l, "division by zero");
    switch (c->functor) {
    case F_INT_DIV: return checked(ev, l, false, a / b);
    case F_REM: return a % b;
    case F_MOD: {
        int64_t m = a % b;
        return m != 0 && (m < 0) != (b < 0) ? m + b : m;
    }
    case F_FLOOR_DIV: {
        int64_t q = a / b;
        return checked(ev, l, false, a % b != 0 && (a < 0) != (b < 0) ? q - 1 : q);
    }
    case F_DIV:
        if (a % b != 0) {
            arithmetic_error(ev, l, "%lld/%lld is not an integer (hhtab has integers only; use //)",
                             (long long)a, (long long)b);
        }
        return checked(ev, l, false, a / b);
    default: break;
    }
    arithmetic_error(ev, l, "internal error: arithmetic function %u", c->functor);
}


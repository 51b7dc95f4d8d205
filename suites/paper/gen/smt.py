#!/usr/bin/env python3
"""SMT-LIB 2 problems for suites/paper/smt.toml, on standard output.

    smt.py factor BITS SEED       QF_BV: x * y = N with 1 < x, y, N the product of two
                                  random primes of BITS/2 bits (sat), or a prime (unsat,
                                  when SEED is odd); the multiplier bit-blasts to a large
                                  SAT problem
    smt.py chain STEPS SEED       QF_BV: invert STEPS rounds of a 64-bit xorshift-multiply
                                  hash (one solution: sat); a multiplier per round
    smt.py precedence JOBS SEED   QF_LIA: start times of JOBS jobs under random
                                  precedences and the tightest deadline (sat)
"""

import random
import sys


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def prime(bits: int, rng: random.Random) -> int:
    while True:
        candidate = rng.getrandbits(bits) | (1 << (bits - 1)) | 1
        if is_prime(candidate):
            return candidate


def factor(bits: int, seed: int) -> str:
    rng = random.Random(seed)
    n = prime(bits, rng) if seed % 2 else prime(bits // 2, rng) * prime(bits - bits // 2, rng)
    width = bits + 1  # x * y computed without overflow: both factors below N
    return f"""(set-logic QF_BV)
(declare-fun x () (_ BitVec {width}))
(declare-fun y () (_ BitVec {width}))
(assert (bvult (_ bv1 {width}) x))
(assert (bvult (_ bv1 {width}) y))
(assert (bvult x (_ bv{n} {width})))
(assert (bvult y (_ bv{n} {width})))
(assert (= ((_ zero_extend {width}) (_ bv{n} {width}))
           (bvmul ((_ zero_extend {width}) x) ((_ zero_extend {width}) y))))
(check-sat)
(exit)
"""


def chain(steps: int, seed: int) -> str:
    """x_(i+1) = (x_i xor x_i >> 17) * odd_i + k_i (mod 2^64) from an unknown x_0
    to a known end: each step is a bijection, so there is one solution, and
    the solver must invert a multiplier and a shift per step."""
    rng = random.Random(seed)
    mask = (1 << 64) - 1
    factors = [rng.getrandbits(64) | 1 for _ in range(steps)]
    addends = [rng.getrandbits(64) for _ in range(steps)]
    x = rng.getrandbits(64)
    for factor, addend in zip(factors, addends, strict=True):
        x = ((x ^ (x >> 17)) * factor + addend) & mask
    lines = ["(set-logic QF_BV)", "(declare-fun x0 () (_ BitVec 64))"]
    for i, (factor, addend) in enumerate(zip(factors, addends, strict=True)):
        lines.append(f"(define-fun x{i + 1} () (_ BitVec 64) (bvadd (bvmul (bvxor x{i} "
                     f"(bvlshr x{i} (_ bv17 64))) (_ bv{factor} 64)) (_ bv{addend} 64)))")
    lines.append(f"(assert (= x{steps} (_ bv{x} 64)))")
    lines += ["(check-sat)", "(exit)"]
    return "\n".join(lines) + "\n"


def precedence(jobs: int, seed: int) -> str:
    """QF_LIA: start times of jobs with random precedences (each job after up to
    three earlier ones) and a deadline of exactly the longest path: sat, with
    the critical jobs' starts forced."""
    rng = random.Random(seed)
    length = [rng.randint(1, 100) for _ in range(jobs)]
    before = [rng.sample(range(j), min(j, 3)) for j in range(jobs)]
    finish = []
    for j in range(jobs):
        start = max((finish[i] for i in before[j]), default=0)
        finish.append(start + length[j])
    lines = ["(set-logic QF_LIA)"]
    lines += [f"(declare-fun s{j} () Int)" for j in range(jobs)]
    for j in range(jobs):
        lines.append(f"(assert (and (>= s{j} 0) (<= (+ s{j} {length[j]}) {max(finish)})))")
        lines += [f"(assert (>= s{j} (+ s{i} {length[i]})))" for i in before[j]]
    lines += ["(check-sat)", "(exit)"]
    return "\n".join(lines) + "\n"


PROBLEMS = {"factor": (factor, 2), "chain": (chain, 2), "precedence": (precedence, 2)}


def main() -> int:
    words = sys.argv[1:]
    if words and words[0] in PROBLEMS and len(words) == 1 + PROBLEMS[words[0]][1] and \
            all(w.isdigit() for w in words[1:]):
        make, _ = PROBLEMS[words[0]]
        sys.stdout.write(make(*(int(w) for w in words[1:])))
        return 0
    print("usage: smt.py factor BITS SEED | chain STEPS SEED | precedence JOBS SEED",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

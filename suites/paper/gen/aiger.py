#!/usr/bin/env python3
"""Sequential circuits with one safety property each, for
suites/paper/hwmc.toml, written to standard output in binary AIGER (the
format of the hardware model checking competitions; the property is the
circuit's one output, which must never be 1). Every design's shortest
counterexample is known by construction: the output can first be 1 in frame
DEPTH (frame 0 is the reset state), so a bounded model checker must find a
counterexample there, and with DEPTH beyond its bound must find none.

    aiger.py counter COUNTERS WIDTH DEPTH
        COUNTERS counters of WIDTH bits (address generators, say), counter i
        adding 2i+1 when the one enable input is 1; bad when each shows the
        value DEPTH steps give it.
    aiger.py shift STAGES WIDTH DEPTH
        a delay line of STAGES stages of WIDTH-bit words that all move one
        stage on when the `shift` input is 1, and a counter of the shifts;
        bad when the DEPTH-th shift brings a fixed non-zero word out of the
        last stage (DEPTH >= STAGES).
    aiger.py fifo ENTRIES WIDTH DEPTH
        a FIFO of ENTRIES (a power of two) words of WIDTH bits; a checker
        compares each word it delivers with the word stored. The bug: the
        DEPTH-th word pushed is marked corrupt, and the output stage
        delivers a corrupt word with every bit flipped.
    aiger.py arbiter CLIENTS DEPTH
        a round-robin arbiter among CLIENTS clients (a power of two): the
        turn passes on when the client whose turn it is does not request.
        The bug: a watchdog that, once clients have been kept waiting in
        DEPTH cycles, grants the first waiting one beside the holder; bad
        when two clients are granted at once.

DEPTH `safe` (counter, arbiter) makes the property hold: the counters stop
one step short of the values the property looks for, the arbiter has no
watchdog.
Sizes and the memory a model checker needs for them: suites/paper/hwmc.toml.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

FALSE, TRUE = 0, 1
Word = list[int]  # literals, least significant bit first


class Circuit:
    """An and-inverter graph under construction: literals are 2*variable +
    negated, as in AIGER; gates are hashed, so that none is made twice.
    Inputs, latches and gates may be made in any order: writing numbers
    them as AIGER wants (inputs, then latches, then gates in the order made,
    which is an order in which every gate comes after its operands)."""

    def __init__(self) -> None:
        self.variables = 0
        self.inputs: list[int] = []  # variables
        self.latches: dict[int, tuple[int, bool]] = {}  # variable: (next literal, reset to 1)
        self.gates: dict[int, tuple[int, int]] = {}  # variable: operands
        self.known: dict[tuple[int, int], int] = {}
        self.bad = FALSE

    def _variable(self) -> int:
        self.variables += 1
        return self.variables

    def input(self) -> int:
        variable = self._variable()
        self.inputs.append(variable)
        return 2 * variable

    def latch(self, reset: bool = False) -> int:
        """A latch's current value; its next value is set later with update.
        A latch reset to 1 is stored inverted in a latch reset to 0 (the
        AIGER reset value all readers know)."""
        variable = self._variable()
        self.latches[variable] = (FALSE, reset)
        return 2 * variable + reset

    def update(self, latch: int, value: int) -> None:
        reset = self.latches[latch // 2][1]
        assert latch & 1 == reset, "not a latch's literal"
        self.latches[latch // 2] = (value ^ reset, reset)

    def and_(self, a: int, b: int) -> int:
        if a < b:
            a, b = b, a
        if b == FALSE or a == b ^ 1:
            return FALSE
        if b == TRUE or a == b:
            return a
        found = self.known.get((a, b))
        if found is None:
            found = 2 * self._variable()
            self.gates[found // 2] = (a, b)
            self.known[(a, b)] = found
        return found

    def or_(self, a: int, b: int) -> int:
        return self.and_(a ^ 1, b ^ 1) ^ 1

    def xor(self, a: int, b: int) -> int:
        return self.or_(self.and_(a, b ^ 1), self.and_(a ^ 1, b))

    def mux(self, select: int, then: int, otherwise: int) -> int:
        return self.or_(self.and_(select, then), self.and_(select ^ 1, otherwise))

    def all_of(self, literals: Sequence[int]) -> int:
        return _tree(self.and_, list(literals), TRUE)

    def any_of(self, literals: Sequence[int]) -> int:
        return _tree(self.or_, list(literals), FALSE)

    def equals(self, word: Word, value: int) -> int:
        """1 when word shows value (bits of value beyond the word: never)."""
        if value >> len(word):
            return FALSE
        return self.all_of([bit if value >> i & 1 else bit ^ 1 for i, bit in enumerate(word)])

    def increment(self, word: Word, carry: int) -> Word:
        """word + carry, wrapping around."""
        result = []
        for bit in word:
            result.append(self.xor(bit, carry))
            carry = self.and_(bit, carry)
        return result

    def add(self, word: Word, other: Word) -> Word:
        """word + other, wrapping around."""
        result = []
        carry = FALSE
        for a, b in zip(word, other, strict=True):
            half = self.xor(a, b)
            result.append(self.xor(half, carry))
            carry = self.or_(self.and_(a, b), self.and_(half, carry))
        return result

    def decrement(self, word: Word, borrow: int) -> Word:
        result = []
        for bit in word:
            result.append(self.xor(bit, borrow))
            borrow = self.and_(bit ^ 1, borrow)
        return result

    def select(self, choice: int, then: Word, otherwise: Word) -> Word:
        return [self.mux(choice, a, b) for a, b in zip(then, otherwise, strict=True)]

    def write(self, out: Callable[[bytes], object], comment: str) -> None:
        """Binary AIGER (format 1.9 without its optional sections): the
        gates' operands as deltas, seven bits to a byte."""
        order = [0, *self.inputs, *self.latches, *self.gates]
        number = [0] * (self.variables + 1)
        for new, old in enumerate(order):
            number[old] = new

        def renumbered(literal: int) -> int:
            return 2 * number[literal // 2] + (literal & 1)

        out(f"aig {self.variables} {len(self.inputs)} {len(self.latches)} 1 "
            f"{len(self.gates)}\n".encode())
        out("".join(f"{renumbered(value)}\n" for value, _ in self.latches.values()).encode())
        out(f"{renumbered(self.bad)}\n".encode())
        encoded = bytearray()
        for variable, operands in self.gates.items():
            a, b = sorted(map(renumbered, operands), reverse=True)
            for delta in (2 * number[variable] - a, a - b):
                while delta >= 0x80:
                    encoded.append(delta & 0x7F | 0x80)
                    delta >>= 7
                encoded.append(delta)
        out(bytes(encoded))
        out(f"o0 bad\nc\n{comment}\n".encode())


def _tree(combine: Callable[[int, int], int], items: list[int], empty: int) -> int:
    """items combined pairwise, level by level (a balanced tree, not a chain)."""
    if not items:
        return empty
    while len(items) > 1:
        items = [combine(items[i], items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


def bits_for(value: int) -> int:
    return max(1, value.bit_length())


def counter(circuit: Circuit, counters: int, width: int, depth: int | None) -> None:
    if depth is not None and depth >> width:
        raise ValueError(f"a counter of {width} bits cannot show {depth}")
    if counters > 1 << (width - 1):
        raise ValueError(f"{counters} counters of {width} bits: there are only "
                         f"{1 << (width - 1)} odd steps, and counters with the same step are one")
    enable = circuit.input()
    words = [[circuit.latch() for _ in range(width)] for _ in range(counters)]
    # Counter i steps by 2i+1 (odd: all of them distinct, and each takes
    # 2^WIDTH steps to come back to 0). Safe: the first stops at the all-ones
    # value less one, and the property looks for all ones there.
    steps = [(2 * index + 1) % (1 << width) for index in range(counters)]
    target = (1 << width) - 1 if depth is None else depth
    stopped = FALSE if depth is not None else circuit.equals(words[0], target - 1)
    stepping = circuit.and_(enable, stopped ^ 1)
    for step, word in zip(steps, words, strict=True):
        addend = [stepping if step >> bit & 1 else FALSE for bit in range(width)]
        for latch, value in zip(word, circuit.add(word, addend), strict=True):
            circuit.update(latch, value)
    circuit.bad = circuit.all_of([circuit.equals(word, step * target % (1 << width))
                                  for step, word in zip(steps, words, strict=True)])


def pattern(width: int) -> int:
    """A non-zero word: alternating bits, the top one set."""
    return int(("10" * width)[:width], 2)


def count_to(circuit: Circuit, event: int, limit: int) -> tuple[Word, int]:
    """A binary counter of events, stopping at limit: (its latches, and 1
    when it shows limit). It counts at most one event a frame, so it shows
    limit in frame `limit` at the earliest; a bounded model checker cannot
    see that without a proof (from the frame where it may have as many bits
    set as limit has, the circuit's structure allows any value), which is
    the work each frame gives it."""
    word = [circuit.latch() for _ in range(bits_for(limit))]
    full = circuit.equals(word, limit)
    for latch, value in zip(word, circuit.increment(word, circuit.and_(event, full ^ 1)),
                            strict=True):
        circuit.update(latch, value)
    return word, full


def shift(circuit: Circuit, stages: int, width: int, depth: int) -> None:
    if depth < stages:
        raise ValueError(f"DEPTH {depth} is less than the {stages} stages")
    move = circuit.input()
    data = [circuit.input() for _ in range(width)]
    line = [[circuit.latch() for _ in range(width)] for _ in range(stages)]
    previous = data
    for stage in line:
        for latch, value in zip(stage, circuit.select(move, previous, stage), strict=True):
            circuit.update(latch, value)
        previous = stage
    _, shifted = count_to(circuit, move, depth)
    circuit.bad = circuit.and_(shifted, circuit.equals(line[-1], pattern(width)))


def fifo(circuit: Circuit, entries: int, width: int, depth: int) -> None:
    if entries < 2 or entries & (entries - 1):
        raise ValueError(f"ENTRIES {entries} is not a power of two of at least 2")
    pointer_bits = entries.bit_length() - 1
    push, pop = circuit.input(), circuit.input()
    data = [circuit.input() for _ in range(width)]
    words = [[circuit.latch() for _ in range(width)] for _ in range(entries)]
    corrupt = [circuit.latch() for _ in range(entries)]
    write = [circuit.latch() for _ in range(pointer_bits)]
    read = [circuit.latch() for _ in range(pointer_bits)]
    count = [circuit.latch() for _ in range(pointer_bits + 1)]
    pushing = circuit.and_(push, circuit.equals(count, entries) ^ 1)
    popping = circuit.and_(pop, circuit.equals(count, 0) ^ 1)
    # The bug: the DEPTH-th push is stored corrupt.
    pushes, _ = count_to(circuit, pushing, depth)
    faulty = circuit.and_(pushing, circuit.equals(pushes, depth - 1))
    for index, (word, flag) in enumerate(zip(words, corrupt, strict=True)):
        here = circuit.and_(pushing, circuit.equals(write, index))
        for latch, value in zip(word, circuit.select(here, data, word), strict=True):
            circuit.update(latch, value)
        circuit.update(flag, circuit.mux(here, faulty, flag))
    for latch, value in [*zip(write, circuit.increment(write, pushing), strict=True),
                         *zip(read, circuit.increment(read, popping), strict=True)]:
        circuit.update(latch, value)
    # count + push - pop: up when only pushing, down when only popping.
    up = circuit.and_(pushing, popping ^ 1)
    down = circuit.and_(popping, pushing ^ 1)
    for latch, value in zip(count, circuit.decrement(circuit.increment(count, up), down),
                            strict=True):
        circuit.update(latch, value)
    chosen = [circuit.equals(read, index) for index in range(entries)]
    head = [circuit.any_of([circuit.and_(here, word[bit])
                            for here, word in zip(chosen, words, strict=True)])
            for bit in range(width)]
    head_corrupt = circuit.any_of([circuit.and_(here, flag)
                                   for here, flag in zip(chosen, corrupt, strict=True)])
    # The output stage delivers a corrupt word with every bit flipped; a
    # checker compares what is delivered with what was stored.
    delivered = [circuit.xor(bit, head_corrupt) for bit in head]
    differ = [circuit.xor(a, b) for a, b in zip(delivered, head, strict=True)]
    circuit.bad = circuit.and_(popping, circuit.any_of(differ))


def arbiter(circuit: Circuit, clients: int, depth: int | None) -> None:
    if clients < 2 or clients & (clients - 1):
        raise ValueError(f"CLIENTS {clients} is not a power of two of at least 2")
    requests = [circuit.input() for _ in range(clients)]
    turn = [circuit.latch() for _ in range(clients.bit_length() - 1)]
    granted = [circuit.and_(circuit.equals(turn, index), request)
               for index, request in enumerate(requests)]
    # The turn passes on to the next client when the one whose turn it is
    # does not request.
    holding = circuit.any_of(granted)
    for latch, value in zip(turn, circuit.increment(turn, holding ^ 1), strict=True):
        circuit.update(latch, value)
    grants = granted
    if depth is not None:
        # The bug: a watchdog counts the cycles in which some client waits
        # and, at DEPTH, grants the first waiting client besides the holder.
        waiting = [circuit.and_(request, grant ^ 1)
                   for request, grant in zip(requests, granted, strict=True)]
        _, overdue = count_to(circuit, circuit.any_of(waiting), depth)
        grants = []
        before = FALSE
        for grant, waits in zip(granted, waiting, strict=True):
            first = circuit.and_(waits, before ^ 1)
            grants.append(circuit.or_(grant, circuit.and_(overdue, first)))
            before = circuit.or_(before, waits)
    # Two grants at once: a grant while an earlier client is granted.
    earlier = FALSE
    twice = []
    for grant in grants:
        twice.append(circuit.and_(earlier, grant))
        earlier = circuit.or_(earlier, grant)
    circuit.bad = circuit.any_of(twice)


def _number(word: str, name: str, safe_allowed: bool = False) -> int | None:
    if safe_allowed and word == "safe":
        return None
    if not word.isdigit() or int(word) < 1:
        raise ValueError(f"{name} '{word}' is not a whole number of at least 1"
                         + (" (or 'safe')" if safe_allowed else ""))
    return int(word)


USAGE = ("usage: aiger.py counter COUNTERS WIDTH DEPTH|safe | shift STAGES WIDTH DEPTH | "
         "fifo ENTRIES WIDTH DEPTH | arbiter CLIENTS DEPTH|safe")


def build(words: list[str]) -> Circuit:
    """The circuit the command line describes; ValueError says what is wrong."""
    circuit = Circuit()
    family, *numbers = words or [""]
    arity = {"counter": 3, "shift": 3, "fifo": 3, "arbiter": 2}.get(family)
    if arity is None or len(numbers) != arity:
        raise ValueError(USAGE)
    sizes = [_number(word, "size") for word in numbers[:-1]]
    depth = _number(numbers[-1], "DEPTH", safe_allowed=family in ("counter", "arbiter"))
    if family == "counter":
        counter(circuit, sizes[0] or 0, sizes[1] or 0, depth)
    elif family == "shift":
        shift(circuit, sizes[0] or 0, sizes[1] or 0, depth or 0)
    elif family == "fifo":
        fifo(circuit, sizes[0] or 0, sizes[1] or 0, depth or 0)
    else:
        arbiter(circuit, sizes[0] or 0, depth)
    return circuit


def main() -> int:
    try:
        circuit = build(sys.argv[1:])
    except ValueError as error:
        print(f"aiger.py: {error}", file=sys.stderr)
        return 2
    circuit.write(sys.stdout.buffer.write, "made by aiger.py " + " ".join(sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

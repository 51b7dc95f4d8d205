% Integer arithmetic and comparisons, in tabled and plain predicates: every
% function hhtab evaluates, negative numbers and the rounding of each
% division, tabled recursion over integers.
% query: value(F,V)
% query: relate(X,Y,R)
% query: triangle(10,T)
% query: collatz(27,Steps)
% query: between_step(0,30,7,X)
% query: countdown(5,L)
:- table triangle/2, collatz/2.
value(add, V) :- V is 7 + -3.
value(sub, V) :- V is 7 - 10.
value(mul, V) :- V is -6 * 7.
value(int_div, V) :- V is -7 // 2.
value(div, V) :- V is -7 div 2.
value(mod, V) :- V is -7 mod 2.
value(rem, V) :- V is -7 rem 2.
value(exact, V) :- V is 12 / 4.
value(min, V) :- V is min(3, -4).
value(max, V) :- V is max(3, -4).
value(abs, V) :- V is abs(-12).
value(sign, V) :- V is sign(-12) + sign(0) * 10 + sign(5) * 100.
value(shifts, V) :- V is (1 << 40) + (-17 >> 2).
value(bits, V) :- V is (12 /\ 10) + (12 \/ 3) * 100 + (12 xor 10) * 10000 + \ 5 * 1000000.
value(power, V) :- V is 3 ^ 13 + 2 ** 10.
value(gcd, V) :- V is gcd(-84, 36).
value(msb, V) :- V is msb(1000).
value(neg, V) :- X = 5, V is - X + (+ 2).
value(large, V) :- V is 2305843009213693951 - 1 + 1.
value(small, V) :- V is -2305843009213693952 + 0.
value(nested, V) :- V is ((1 + 2) * (3 + 4) - 5) mod 7 * 11.
relate(X, Y, R) :- num(X), num(Y), relation(X, Y, R).
relation(X, Y, lt) :- X < Y.
relation(X, Y, gt) :- X > Y.
relation(X, Y, le) :- X =< Y.
relation(X, Y, ge) :- X >= Y.
relation(X, Y, eq) :- X =:= Y.
relation(X, Y, ne) :- X =\= Y.
relation(X, Y, sum_eq) :- X + 1 =:= Y - 1.
num(-2). num(0). num(3).
triangle(0, 0).
triangle(N, T) :- N > 0, M is N - 1, triangle(M, S), T is S + N.
collatz(1, 0).
collatz(N, S) :- N > 1, N mod 2 =:= 0, M is N // 2, collatz(M, T), S is T + 1.
collatz(N, S) :- N > 1, N mod 2 =:= 1, M is 3 * N + 1, collatz(M, T), S is T + 1.
between_step(L, H, _, L) :- L =< H.
between_step(L, H, S, X) :- L =< H, M is L + S, between_step(M, H, S, X).
countdown(0, []).
countdown(N, [N | T]) :- N > 0, M is N - 1, countdown(M, T).

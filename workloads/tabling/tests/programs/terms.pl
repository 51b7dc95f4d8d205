% Compound terms and lists: as arguments of tabled calls (subgoal tries)
% and in answers (answer tries), answers with variables shared inside
% compounds, unification and identity, and a table called with patterns
% that are variants of one another.
% query: tree_sum(node(node(leaf(1),leaf(2)),leaf(3)),S)
% query: paths(X)
% query: shapes(S)
% query: pair_up([a,b,c],P)
% query: swap(f(X,g(Y,X)),Z)
% query: same_shape(X,Y)
% query: member_of(X,[p(1),q(2,Z),[r]])
% query: last_of([1,2,3,[4,5]],L)
% query: distinct(X,Y)
% query: open_ends(L)
% query: walk(a,P)
% query: '[]'(X)
:- table tree_sum/2, paths/1, shapes/1, pair_up/2, swap/2, same_shape/2, walk/2, open_ends/1.
tree_sum(leaf(N), N).
tree_sum(node(L, R), S) :- tree_sum(L, A), tree_sum(R, B), S is A + B.
paths([X]) :- start(X).
paths([Y, X | Rest]) :- paths([X | Rest]), step(X, Y), \+ member_of(Y, [X | Rest]).
start(a).
step(a, b). step(b, c). step(c, a). step(b, d).
member_of(X, [X | _]).
member_of(X, [_ | T]) :- member_of(X, T).
shapes(circle(R)) :- radius(R).
shapes(rect(W, H)) :- radius(W), radius(H), W < H.
shapes(point).
radius(1). radius(2). radius(3).
pair_up([], []).
pair_up([X | Xs], [X-Y | Ps]) :- pair_up(Xs, Ps), nth(Y, Xs).
nth(none, []).
nth(first(X), [X | _]).
swap(f(A, B), f(B, A)).
swap(f(A, g(B, C)), h(C, B, A)).
same_shape(f(X, Y), f(Y, X)).
same_shape(g(X, X, _), g(_, Y, Y)).
last_of([X], X).
last_of([_ | T], X) :- last_of(T, X).
distinct(X, Y) :- item(X), item(Y), X \== Y, \+ X = Y.
item(f(1)). item(f(A)) :- A = 2. item([]). item('[]'). item(x-[]) :- fail.
item(g(_)).
open_ends([a | T]) :- T = [_ | _].
open_ends([X, X | _]).
open_ends(L) :- L = [_, _ | T], T == T.
walk(X, [X]).
walk(X, [X | P]) :- step(X, Y), walk(Y, P), length_below(P, 4).
length_below([], _).
length_below([_ | T], N) :- N > 0, M is N - 1, length_below(T, M).
'[]'(x).
'[]'([]).

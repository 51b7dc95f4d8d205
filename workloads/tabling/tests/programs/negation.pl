% Negation (\+) of goals that call no tabled predicate, next to tabled
% ones: of facts, of rules, of conjunctions and built-ins, nested, with
% variables bound before and left open.
% query: reachable_safe(X)
% query: lonely(X)
% query: no_pair(X)
% query: outside(X)
% query: nested(X)
:- table reachable_safe/1, hop/2.
reachable_safe(X) :- hop(a, X), \+ danger(X).
hop(X, Y) :- edge(X, Y).
hop(X, Z) :- hop(X, Y), edge(Y, Z).
edge(a, b). edge(b, c). edge(c, d). edge(d, b). edge(c, e).
danger(d).
danger(X) :- trap(X, _).
trap(e, spikes).
lonely(X) :- node(X), \+ edge(X, _), \+ edge(_, X).
no_pair(X) :- node(X), \+ (edge(X, Y), edge(Y, X)).
outside(X) :- node(X), \+ X = a, \+ member(X, [b, c]).
nested(X) :- node(X), \+ \+ edge(X, _), \+ (edge(X, Y), \+ danger(Y)).
member(X, [X | _]).
member(X, [_ | T]) :- member(X, T).
node(a). node(b). node(c). node(d). node(e). node(f).

% First-argument indexing of clauses whose first argument is a compound:
% ground compounds (told apart by their structure), compounds with
% variables, constants and variables side by side in one predicate, called
% with a ground compound, a compound with variables, a constant and a
% variable; lists longer than the part of a term its key looks at (they
% share a key and must still be told apart); and the tabling benchmark
% set's f/1-wrapped graphs, path over edge(f(X), f(Y)) facts.
% query: path(f(X),f(Y))
% query: path(f(1),Y)
% query: path(X,f(3))
% query: node(f(2),K)
% query: node(f(X),K)
% query: node(g(1,h(2)),K)
% query: node(g(1,X),K)
% query: node(g(X,Y),K)
% query: node(a,K)
% query: node(X,K)
% query: node(f(9),K)
% query: long(L,K)
% query: probe(K)
% query: via(X,K)
:- table path/2, via/2.
path(X, Y) :- path(X, Z), edge(Z, Y).
path(X, Y) :- edge(X, Y).
edge(f(1), f(2)). edge(f(2), f(3)). edge(f(3), f(4)). edge(f(4), f(1)).
edge(f(2), f(5)). edge(f(5), f(6)). edge(g(1), f(1)).
node(f(1), ground_f1).
node(f(X), any_f) :- X \== 9.
node(a, const_a).
node(f(2), ground_f2).
node(X, var_head) :- X \== b.
node(g(1, h(2)), ground_g).
node(g(1, Y), g_one) :- Y = h(_).
node(g(2, h(2)), ground_g2).
node([1, 2], list).
node(f(2), ground_f2_again).
long([1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40], forty).
long([1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,41], forty_one).
long([1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41], longer).
probe(K) :- long([1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,41], K).
probe(K) :- long([1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,X], K), X > 40.
via(X, K) :- path(f(1), X), node(X, K).

% Two tabled predicates defined through each other (one component), and a
% third that only reads them.
% query: reach_a(X,Y)
% query: reach_b(1,Y)
% query: reach_a(X,3)
% query: both(X)
:- table reach_a/2, reach_b/2, both/1.
reach_a(X,Y) :- a(X,Y).
reach_a(X,Y) :- reach_b(X,Z), a(Z,Y).
reach_b(X,Y) :- b(X,Y).
reach_b(X,Y) :- reach_a(X,Z), b(Z,Y).
both(X) :- reach_a(X,_), reach_b(X,_).
a(1,2). a(2,3). a(4,5). a(5,1). a(6,6).
b(3,1). b(2,4). b(3,5). b(6,7). b(7,6).

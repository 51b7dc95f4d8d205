% Nested components: p and q through each other, each also calling r, a
% recursive table of its own, and s built on p with a non-tabled recursive
% helper (SLD recursion) over facts.
% query: p(X,Y)
% query: q(1,Y)
% query: s(X,Y)
% query: chain(1,Y)
% query: r(X,Y)
:- table p/2, q/2, r/2, s/2.
p(X,Y) :- q(X,Y).
p(X,Y) :- r(X,Y).
q(X,Y) :- p(X,Z), link(Z,Y).
q(X,Y) :- link(X,Y).
r(X,Y) :- r(X,Z), r(Z,Y).
r(X,Y) :- jump(X,Y).
s(X,Y) :- p(X,Z), chain(Z,Y).
chain(X,Y) :- next(X,Y).
chain(X,Y) :- next(X,Z), chain(Z,Y).
link(1,2). link(2,3). link(3,1). link(4,5).
jump(3,4). jump(5,6). jump(6,3).
next(1,10). next(10,11). next(11,12). next(4,40).

% Left, right and double recursion over one graph with a cycle and a tail,
% queried open, half bound and ground.
% query: left(X,Y)
% query: right(a,Y)
% query: double(X,a)
% query: left(c,Y)
% query: right(X,X)
% query: double(a,e)
% query: double(e,a)
:- table left/2, right/2, double/2.
left(X,Z) :- left(X,Y), e(Y,Z).
left(X,Z) :- e(X,Z).
right(X,Y) :- e(X,Z), right(Z,Y).
right(X,Y) :- e(X,Y).
double(X,Z) :- double(X,Y), double(Y,Z).
double(X,Z) :- e(X,Z).
e(a,b). e(b,c). e(c,a). e(c,d). e(d,e). e(b,b).

% Non-tabled helper predicates between tabled ones: an undirected step over
% two kinds of facts, a tabled closure over it, and non-tabled queries that
% call the table.
% query: path(X,Y)
% query: path(d,Y)
% query: connected(X)
% query: via(X,Y,Z)
% query: path(hub,hub)
:- table path/2.
path(X,Y) :- step(X,Y).
path(X,Y) :- path(X,Z), step(Z,Y).
step(X,Y) :- road(X,Y).
step(X,Y) :- road(Y,X).
step(X,Y) :- ferry(X,Y,_).
connected(X) :- path(X,hub).
via(X,Y,Z) :- path(X,Y), path(Y,Z), road(X,_).
road(a,b). road(b,c). road(c,hub). road(x,y).
ferry(d,e,fast). ferry(e,a,slow). ferry(hub,d,fast).

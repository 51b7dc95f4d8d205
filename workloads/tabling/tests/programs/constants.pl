% Constants of every kind, repeated variables in heads and calls, answers
% with variables, and predicates without arguments.
% query: same(X,Y)
% query: pairs(X,'hello world')
% query: loop
% query: self(a,Y)
% query: self(X,Y)
% query: id(X,Y)
% query: twice(X)
% query: neg(X,Y)
:- table same/2, loop/0, pairs/2, id/2, twice/1, neg/2.
same(X,X) :- item(X).
loop :- loop.
loop :- base.
base.
pairs(X,Y) :- item(X), item(Y).
item('hello world'). item(-3). item(0). item(abc). item('Quoted'). item('it''s').
self(X,X).
id(X,X).
twice(X) :- pairs(X,X).
neg(X,Y) :- item(X), less(X,Y).
less(-3,0). less(0,12345678901). less(-3,-2).

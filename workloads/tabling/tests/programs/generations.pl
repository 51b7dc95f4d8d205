% Same generation over a family tree: a tabled predicate calling itself
% between two non-tabled lookups, with atoms as constants.
% query: sg(X,Y)
% query: sg(ann,Y)
% query: cousin(X,Y)
:- table sg/2.
sg(X,X) :- person(X).
sg(X,Y) :- parent(XP,X), sg(XP,YP), parent(YP,Y).
cousin(X,Y) :- parent(P,X), parent(Q,Y), sibling(P,Q).
sibling(X,Y) :- parent(P,X), parent(P,Y).
person(X) :- parent(X,_).
person(X) :- parent(_,X).
parent(eve, ann). parent(eve, bob). parent(ann, cid). parent(ann, dee).
parent(bob, eli). parent(cid, fay). parent(eli, gus). parent(dee, hal).

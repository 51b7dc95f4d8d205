#!/bin/sh
# Runs a tabled program's query in hhtab or SWI-Prolog, each timing the query inside the process
# (the program loaded), so that the suites here compare evaluation and not start-up or parsing.
#   query.sh hhtab PROGRAM [OPTION...]   hhtab run PROGRAM --query GOAL --json OPTION...
#   query.sh swipl PROGRAM [THREADS]     prints `answers N SECONDS`: the answers counted with
#                                        aggregate_all/3 and the query's seconds; with THREADS
#                                        above 1, that many threads each run the count at once
#                                        with the tables shared (`:- table ... as shared`), the
#                                        seconds those threads take, then the count alone
# GOAL is the program's first line `% query: GOAL` (hhtab gen FAMILY N), else path(X,Y) (hhtab
# gen path). SWI-Prolog counts the answers of the same goal, so the counts must agree.
set -e
engine=$1 program=$2
shift 2
goal=$(sed -n '1s/^% query: //p' "$program")
[ -n "$goal" ] || goal='path(X,Y)'
case "$engine" in
  hhtab) exec "$(dirname "$0")/../../build/bin/hhtab" run "$program" --query "$goal" --json "$@" ;;
  swipl)
    threads=${1:-1}
    count="aggregate_all(count, ($goal), N)"
    if [ "$threads" -gt 1 ]; then
      # The run starts in a directory of its own: the shared variant is written there.
      sed 's/^:- table \(.*\)\.$/:- table (\1) as shared./' "$program" > shared.pl
      program=shared.pl
      work="findall(T, (between(1, $threads, _), thread_create(($count), T)), Ts), maplist(thread_join, Ts)"
    else
      work=$count
    fi
    exec swipl -q -g "get_time(T0), $work, get_time(T1), S is T1 - T0, $count, format('answers ~d ~6f~n', [N, S])" \
      -t halt "$program" ;;
  *) echo "query.sh: unknown engine $engine (hhtab or swipl)" >&2; exit 2 ;;
esac

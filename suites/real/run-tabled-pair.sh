#!/bin/sh
# Runs one instance of the tabling set (sets/tabling.toml): a data file of edge/2 facts with the
# rules file and the goal that the source repository's driver for it uses (test_RULES_DATA.pl:
# `:- ['RULES', 'data/DATA'].` and `Goal, fail`), counting the goal's answers.
#   run-tabled-pair.sh swipl|hhtab DATA RULES_FILE...
# The rules files come as the suite's support files; this table pairs them with the data.
# SWI-Prolog consults both files and prints `answers N`; hhtab reads one program, so it gets
# the two files one after the other (the bytes of both, unchanged) and prints its JSON.
set -e
. "$(dirname "$0")/support-file.sh"
engine=$1 data=$2
shift 2
case "$(basename "$data")" in
  tst-pyramid_512.pl|tst-cycle_256.pl)  rules=tst-path_double_last.pl goal='path(_, _)' ;;
  tst-grid_16.pl|tst-cycle_512.pl)      rules=tst-path_double_first.pl goal='path(_, _)' ;;
  tst-chain_512.pl)                     rules=tst-anc_d.pl goal='anc_d(X, Y)' ;;
  tst-chain_4096.pl)                    rules=tst-path_left_first.pl goal='path(_, _)' ;;
  tst-pyramid_2048.pl|tst-cycle_2048.pl) rules=tst-path_left_last.pl goal='path(_, _)' ;;
  tst-chain_2048.pl)                    rules=tst-path_right_first.pl goal='path(_, _)' ;;
  tst-grid_32.pl)                       rules=tst-sg.pl goal='same_gen(X, Y)' ;;
  stst-cycle_256.pl|stst-tree_16384.pl) rules=stst-path_double_first.pl goal='path(f(X), f(Y))' ;;
  stst-grid_16.pl)                      rules=stst-path_double_last.pl goal='path(f(X), f(Y))' ;;
  stst-chain_512.pl)                    rules=stst-anc_d.pl goal='anc_d(f(X), f(Y))' ;;
  stst-chain_2048.pl)                   rules=stst-path_left_first.pl goal='path(f(X), f(Y))' ;;
  *) echo "run-tabled-pair.sh: no rules are paired with $(basename "$data")" >&2; exit 2 ;;
esac
found=$(support_file "$rules" "$@")
case "$engine" in
  swipl) exec swipl -q -g "aggregate_all(count, ($goal), N), format('answers ~d~n', [N])" \
              -t halt "$found" "$data" ;;
  hhtab) cat "$found" "$data" > program.pl
         exec "$(dirname "$0")/../../build/bin/hhtab" run program.pl --query "$goal" --json ;;
  *) echo "run-tabled-pair.sh: unknown engine $engine (swipl or hhtab)" >&2; exit 2 ;;
esac

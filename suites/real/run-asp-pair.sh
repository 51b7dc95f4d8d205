#!/bin/sh
# Grounds and solves one instance of the ASP set (sets/asp.toml): a facts file with the problem
# encoding its source pairs it with, `gringo ENCODING INSTANCE | clasp -q`; clasp's exit code
# (10 satisfiable, 20 unsatisfiable, 30 optimum found) is the run's.
#   run-asp-pair.sh INSTANCE ENCODING_FILE...
# The encodings come as the suite's support files; this table pairs them with the instances.
set -e
. "$(dirname "$0")/support-file.sh"
instance=$1
shift
case "$(basename "$instance")" in
  ntd-Hamiltonian-*)           encoding=ntd-Hamiltonian-encoding.asp ;;
  ntd-Labyrinth-*)             encoding=ntd-Labyrinth-encoding.asp ;;
  ntd-KnightTourWithHoles-*)   encoding=ntd-KnightTourWithHoles-encoding.asp ;;
  nto-MarkovNL-*)              encoding=nto-MarkovNL-encoding.asp ;;
  *-hanoi_tower-*)             encoding=plan-HanoiTower-encoding_single.asp ;;
  *-nomystery-*)               encoding=plan-Nomistery-encoding_single.asp ;;
  *-visitall-*)                encoding=plan-Visit-all-encoding_single.asp ;;
  *-labyrinth-*)               encoding=plan-Labyrinth-encoding_single.asp ;;
  *) echo "run-asp-pair.sh: no encoding is paired with $(basename "$instance")" >&2; exit 2 ;;
esac
found=$(support_file "$encoding" "$@")
gringo "$found" "$instance" | clasp -q

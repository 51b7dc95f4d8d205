#!/bin/sh
# Compiles mimalloc-bench's alloc-test from its sources (the suite's support files, given as
# {file:NAME} arguments, in any order) as the benchmark's CMakeLists.txt does (C++17, Release's
# -O3 -DNDEBUG, BENCH=4: one run of the thread count given) and writes the program to standard
# output: the generator's job, so that no run measures the compiler.
#   compile-alloc-test.sh SOURCE...
set -e
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for source in "$@"; do
  cp "$source" "$work/$(basename "$source")"
done
for needed in allocator_tester.cpp test_common.cpp; do
  if [ ! -f "$work/$needed" ]; then
    echo "compile-alloc-test.sh: the source $needed was not given" >&2
    exit 2
  fi
done
c++ -std=c++17 -O3 -DNDEBUG -DBENCH=4 -pthread -o "$work/alloc-test" \
  "$work/allocator_tester.cpp" "$work/test_common.cpp" >&2
cat "$work/alloc-test"

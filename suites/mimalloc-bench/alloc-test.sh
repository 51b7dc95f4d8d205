#!/bin/sh
# Runs alloc-test (compiled by compile-alloc-test.sh) with THREADS threads, or with `cores`: one
# per CPU this process may run on, at most 16, as mimalloc-bench's alloc-testN does.
#   alloc-test.sh PROGRAM THREADS|cores
set -e
program=$1
threads=$2
if [ "$threads" = cores ]; then
  threads=$(nproc)
  [ "$threads" -le 16 ] || threads=16
fi
exec "$program" "$threads"

#!/usr/bin/env bash
# Runs a program that must end with one exact exit status (a meson test of
# an expected failure, which should_fail would pass on any non-zero status).
#   expect-status.sh STATUS PROGRAM [ARGS...]
# Exits 0 when PROGRAM exits with STATUS, 1 otherwise (naming both).
set -u
expected=$1
shift
"$@"
status=$?
if [[ "$status" != "$expected" ]]; then
  echo "expect-status: $1 exited with status $status; this test expects exactly $expected" >&2
  exit 1
fi
echo "expect-status: $1 exited with status $expected, as expected"

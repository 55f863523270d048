#!/usr/bin/env bash
# The suite on a busy machine: runs ctest ROUNDS times (2 by default) with
# `stress-ng --cpu N` (N: the number of cores) beside it the whole time,
# as another job on the same host would. A test that waits for a window
# of time rather than for a signal fails here first.
#   tests/run_under_load.sh [ROUNDS] [ctest args...]     (BUILD_DIR=build)
# Prints each round's result and time as BENCH lines; exits non-zero if
# any round failed.
set -euo pipefail
rounds=${1:-2}
shift || true
build=${BUILD_DIR:-build}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || {
  echo "run_under_load.sh: ROUNDS is a positive number (got '$rounds')" >&2
  exit 2
}
command -v stress-ng >/dev/null || {
  echo "run_under_load.sh: stress-ng is missing (apt-get install stress-ng)" >&2
  exit 2
}
[[ -f $build/CTestTestfile.cmake ]] || {
  echo "run_under_load.sh: no built tree at $build (set BUILD_DIR)" >&2
  exit 2
}
cores=$(nproc)
stress-ng --cpu "$cores" --quiet &
stress=$!
trap 'kill "$stress" 2>/dev/null; wait "$stress" 2>/dev/null || true' EXIT
failed=0
for ((r = 1; r <= rounds; r++)); do
  start=$SECONDS
  rc=0
  ctest --test-dir "$build" --output-on-failure -j2 "$@" || rc=$?
  echo "BENCH under_load.round$r.seconds $((SECONDS - start)) s"
  echo "BENCH under_load.round$r.ctest_exit $rc code"
  [[ $rc -eq 0 ]] || failed=1
done
exit $failed

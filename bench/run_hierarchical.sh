#!/usr/bin/env bash
# The hierarchical allreduce against the flat ring on this machine: two
# named hosts of two ranks each in one process (bench/hierarchical_bench.cc:
# a host's ranks share memory, the hosts talk Gloo over loopback TCP), fp32,
# 64 KiB to 64 MiB in powers of 4. RUNS (3) runs, each figure the median.
#   BUILD_DIR=build bench/run_hierarchical.sh
# Lines: BENCH allreduce.{hier,flat}.busbw.SIZE (busbw = bytes / time *
# 2(n-1)/n, n = 4) and .latency.SIZE.
set -euo pipefail
build=${BUILD_DIR:-build}
prog="$build/bench/hierarchical_bench"
[[ -x $prog ]] || { echo "run_hierarchical.sh: $prog is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
for ((i = 0; i < ${RUNS:-3}; ++i)); do
  "$prog" "$@" | grep '^RESULT ' >> "$raw"
done
awk -f "$(dirname "$0")/medians.awk" "$raw" | sort -k1,1 -k2,2n | awk '
  function label(b) {
    if (b >= 1048576) return b / 1048576 "MiB"
    return b / 1024 "KiB"
  }
  {
    printf "BENCH allreduce.%s.busbw.%s %.3f GB/s\n", $1, label($2), $2 / $3 * 2 * 3 / 4 / 1e9
    printf "BENCH allreduce.%s.latency.%s %.2f us\n", $1, label($2), $3 * 1e6
  }'

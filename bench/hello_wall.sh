#!/usr/bin/env bash
# Wall time of a whole two-rank job: horovodrun -np 2 hvd_hello (start the
# rendezvous, spawn, join, connect Gloo, allreduce, exit). Median of 5 runs
# after one warm-up run.
#   BUILD_DIR=build bench/hello_wall.sh [NP]
set -euo pipefail
build=${BUILD_DIR:-build}
np=${1:-2}
run=("$build/launcher/horovodrun" -np "$np" "$build/examples/hello/hvd_hello")
for f in "${run[0]}" "${run[3]}"; do
  [[ -x $f ]] || { echo "hello_wall.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
"${run[@]}" >/dev/null
times=()
for _ in 1 2 3 4 5; do
  start=$(date +%s%N)
  "${run[@]}" >/dev/null
  end=$(date +%s%N)
  times+=($(( (end - start) / 1000 )))
done
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
printf 'runs_us %s\n' "${times[*]}"
awk -v np="$np" -v us="$median" 'BEGIN { printf "BENCH horovodrun.hello.np%s.wall %.1f ms\n", np, us / 1000 }'

#!/usr/bin/env bash
# What the always-on metrics cost: the same runs with libhvd's measuring
# off (HOROVOD_METRICS_DISABLE=1), on (the default), and on and served
# (--metrics-port, every rank reporting once a second), interleaved, each
# figure the median over RUNS runs (5):
#   - allreduce latency of 4 B and time of 4 MiB at -np 2 (allreduce_bench,
#     the engine's path);
#   - train_mnist's model training throughput at -np 2 (train_bench).
#   BUILD_DIR=build bench/run_metrics.sh
set -euo pipefail
build=${BUILD_DIR:-build}
run="$build/launcher/horovodrun"
cpp="$build/bench/allreduce_bench"
train="$build/bench/train_bench"
for f in "$run" "$cpp" "$train"; do
  [[ -x $f ]] || { echo "run_metrics.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
runs=${RUNS:-5}
steps=${STEPS:-30}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
rank0() { sed -n 's/^\[0\]<stdout>://p'; }
images() { sed -n 's/^\[[0-9]*\]<stdout>://p' | awk '$1 == "RESULT" {s += $NF} END {printf "%.1f\n", s}'; }
# A port free now (the kernel's pick), not a guess that may be in use.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for ((i = 0; i < runs; ++i)); do
  for mode in off on served; do
    launch=("$run" -np 2)
    envs=()
    case $mode in
      off) envs=(HOROVOD_METRICS_DISABLE=1) ;;
      served) launch+=(--metrics-port "$port") ;;
    esac
    env "${envs[@]}" "${launch[@]}" "$cpp" --mode engine 4 4194304 | rank0 |
      awk -v m="$mode" '$2 == "engine" && $3 != "fusion" {print m, $3, $4}' >> "$raw"
    echo "$mode train $(env "${envs[@]}" "${launch[@]}" "$train" --threads 1 --steps "$steps" | images)" >> "$raw"
  done
done
med() {  # the median of mode $1, key $2
  awk -v m="$1" -v k="$2" '$1 == m && $2 == k {print $3}' "$raw" | sort -g |
    awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
us() { awk -v t="$1" 'BEGIN {printf "%.2f", t * 1e6}'; }
for mode in off on served; do
  echo "BENCH metrics.$mode.allreduce.latency.4B $(us "$(med "$mode" 4)") us"
  echo "BENCH metrics.$mode.allreduce.time.4MiB $(us "$(med "$mode" 4194304)") us"
  echo "BENCH metrics.$mode.train.images_per_s $(med "$mode" train) images/s"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
echo "BENCH metrics.on_over_off.allreduce.latency.4B $(ratio "$(med on 4)" "$(med off 4)") x"
echo "BENCH metrics.served_over_off.allreduce.latency.4B $(ratio "$(med served 4)" "$(med off 4)") x"
echo "BENCH metrics.on_over_off.train $(ratio "$(med on train)" "$(med off train)") x"
echo "BENCH metrics.served_over_off.train $(ratio "$(med served train)" "$(med off train)") x"

#!/usr/bin/env bash
# What the flight recorder costs (issue: hung or slow jobs): the same build
# with the recorder off (HVD_FLIGHT_RECORDER_ENTRIES=0) and on (2,000, the
# default), in turn, RUNS times (7): the engine's 4-byte allreduce latency
# at -np 2 (bench/allreduce_bench) and train_mnist's model at -np 2
# (bench/train_bench, total images/s). Each figure is the median over the
# runs; the ratio on/off beside it.
#   BUILD_DIR=build bench/run_flight_overhead.sh
# Lines: BENCH flight.allreduce4B.latency.{off,on} us,
# BENCH flight.train.images_per_s.{off,on}, BENCH flight.*.ratio.
set -euo pipefail
build=${BUILD_DIR:-build}
run="$build/launcher/horovodrun"
allreduce="$build/bench/allreduce_bench"
train="$build/bench/train_bench"
for f in "$run" "$allreduce" "$train"; do
  [[ -x $f ]] || { echo "run_flight_overhead.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
runs=${RUNS:-7}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
for ((i = 0; i < runs; ++i)); do
  for entries in 0 2000; do
    who=$([[ $entries == 0 ]] && echo off || echo on)
    HVD_FLIGHT_RECORDER_ENTRIES=$entries "$run" -np 2 "$allreduce" --mode engine 4 |
      sed -n "s/^\[0\]<stdout>:RESULT engine 4 \(.*\)/RESULT latency $who \1/p" >> "$raw"
    HVD_FLIGHT_RECORDER_ENTRIES=$entries "$run" -np 2 "$train" --threads 1 --steps 40 |
      sed -n 's/^\[[0-9]*\]<stdout>:RESULT train [0-9]* //p' |
      awk -v who="$who" '{s += $1} END {printf "RESULT train %s %.1f\n", who, s}' >> "$raw"
  done
done
awk -f "$(dirname "$0")/medians.awk" "$raw" | sort > "$raw.m"
value() { awk -v k="$1" -v w="$2" '$1 == k && $2 == w {print $3}' "$raw.m"; }
lat_off=$(value latency off) lat_on=$(value latency on)
img_off=$(value train off) img_on=$(value train on)
rm -f "$raw.m"
awk -v v="$lat_off" 'BEGIN {printf "BENCH flight.allreduce4B.latency.off %.3f us\n", v * 1e6}'
awk -v v="$lat_on" 'BEGIN {printf "BENCH flight.allreduce4B.latency.on %.3f us\n", v * 1e6}'
awk -v a="$lat_on" -v b="$lat_off" 'BEGIN {printf "BENCH flight.allreduce4B.latency.ratio %.3f on/off\n", a / b}'
echo "BENCH flight.train.images_per_s.off $img_off images/s"
echo "BENCH flight.train.images_per_s.on $img_on images/s"
awk -v a="$img_on" -v b="$img_off" 'BEGIN {printf "BENCH flight.train.images_per_s.ratio %.3f on/off\n", a / b}'

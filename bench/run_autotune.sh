#!/usr/bin/env bash
# --autotune against a poor fixed configuration (fusion threshold 1 MB,
# cycle time 50 ms), 2 ranks on this machine, a gradient mix shaped like
# the MNIST model's. Prints BENCH autotune.steps_per_s.{fixed,tuned}.
#   BUILD_DIR=build bench/run_autotune.sh
set -euo pipefail
build=${BUILD_DIR:-build}
run="$build/launcher/horovodrun"
prog="$build/bench/autotune_bench"
for f in "$run" "$prog"; do
  [[ -x $f ]] || { echo "run_autotune.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
steps=${STEPS:-600}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The fixed run is paced at 50 ms a cycle, so fewer steps measure it.
fixed=$("$run" -np 2 --fusion-threshold-mb 1 --cycle-time-ms 50 "$prog" --steps $((steps / 5)) |
  sed -n 's/^\[0\]<stdout>:RESULT autotune //p')
tuned=$(HVD_AUTOTUNE_START=1,50 "$run" -np 2 --autotune --autotune-log-file "$log" \
  --autotune-steps-per-sample 5 "$prog" --steps "$steps" |
  sed -n 's/^\[0\]<stdout>:RESULT autotune //p')
echo "autotune log (best values last):"
cat "$log"
echo "BENCH autotune.steps_per_s.fixed $fixed steps/s"
echo "BENCH autotune.steps_per_s.tuned $tuned steps/s"

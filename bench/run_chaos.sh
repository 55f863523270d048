#!/usr/bin/env bash
# The long chaos run (tests/chaos/chaos.py): RUNS seeded runs (1000) of a
# small job on hvd-rendezvousd, one fault each at a random moment (the
# daemon killed or SIGTERMed and restarted, a worker stopped or killed),
# and the invariants checked after each. BENCH lines: runs, faults per
# kind, jobs finished right, failed with a clear line, wrong, hung (goal
# 0), runs with leftovers (goal 0), the longest time from a fault to the
# job's end, the longest exit of a SIGTERMed daemon.
#   BUILD_DIR=build RUNS=1000 SEED=1 bench/run_chaos.sh
set -euo pipefail
build=${BUILD_DIR:-build}
for f in "$build/launcher/horovodrun" "$build/rendezvous/hvd-rendezvousd"; do
  [[ -x $f ]] || { echo "run_chaos.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
exec /usr/bin/python3 "$(dirname "$0")/../tests/chaos/chaos.py" "$build" \
  --runs "${RUNS:-1000}" --seed "${SEED:-1}" --bench

#!/usr/bin/env bash
# The long chaos run (tests/chaos/chaos.py): RUNS seeded runs (1000) of a
# small job (local, on etcd, on namespace hosts, elastic), one or two
# faults each at random moments (faults.py lists the kinds), and the
# invariants checked after each. BENCH lines: runs, faults per kind and
# per phase of the job, jobs finished right, failed with a clear line,
# ended by a killed horovodrun, wrong, hung (goal 0), runs with leftovers
# (goal 0), runs that lost an answered write (goal 0), the longest time
# from a fault to the job's end, the longest settling of its processes,
# the longest exit of a SIGTERMed daemon. Root for every kind.
#   BUILD_DIR=build RUNS=1000 SEED=1 bench/run_chaos.sh
set -euo pipefail
build=${BUILD_DIR:-build}
for f in "$build/launcher/horovodrun" "$build/rendezvous/hvd-rendezvousd" \
  "$build/tests/chaos/hvd_store_probe" "$build/tests/integration/hvd_test_worker"; do
  [[ -x $f ]] || { echo "run_chaos.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
exec /usr/bin/python3 "$(dirname "$0")/../tests/chaos/chaos.py" "$build" \
  --runs "${RUNS:-1000}" --seed "${SEED:-1}" --bench

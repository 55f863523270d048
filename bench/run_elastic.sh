#!/usr/bin/env bash
# Recovery of an elastic job from a lost host. Each run starts horovodrun
# with two hosts of two slots (127.0.0.1 and 127.0.0.2: both this machine,
# but two hosts to the job), workers of hvd_test_worker --elastic-job
# (an allreduce of 4 KB per step, STEP_MS ms apart, a commit every COMMIT
# steps), SIGKILLs both workers of the second host at a random moment
# mid-training, and reads rank 0's step lines:
#   elastic.recovery_s   from the kill to the first step completed after it
#   elastic.lost_steps   steps redone (done before the kill, after the
#                        last commit)
# Medians over RUNS runs (5). Goal: under 3 s, and at most COMMIT steps.
#   BUILD_DIR=build bench/run_elastic.sh
set -euo pipefail
build=${BUILD_DIR:-build}
run="$build/launcher/horovodrun"
worker="$build/tests/integration/hvd_test_worker"
for f in "$run" "$worker"; do
  [[ -x $f ]] || { echo "run_elastic.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
runs=${RUNS:-5}
commit=${COMMIT:-10}
step_ms=${STEP_MS:-50}
work=$(mktemp -d)
job_pid=
cleanup() {
  [[ -n $job_pid ]] && kill "$job_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
now_ms() { date +%s%3N; }
for ((i = 0; i < runs; ++i)); do
  rm -f "$work"/*.pid
  "$run" -np 4 --min-np 2 -H 127.0.0.1:2,127.0.0.2:2 "$worker" \
    --elastic-job 100000 --commit-every "$commit" --step-ms "$step_ms" \
    --pid-dir "$work" >"$work/out" 2>"$work/err" &
  job_pid=$!
  # Both victims have written their pids, then a random point of a commit
  # interval a little later.
  for ((t = 0; t < 600; ++t)); do
    [[ -s $work/127.0.0.2-0.pid && -s $work/127.0.0.2-1.pid ]] && break
    sleep 0.05
  done
  sleep "$(awk -v r=$RANDOM -v c="$commit" -v s="$step_ms" \
    'BEGIN {printf "%.3f", 1.5 + (r % 1000) / 1000 * c * s / 1000}')"
  kill_ms=$(now_ms)
  kill -9 "$(cat "$work/127.0.0.2-0.pid")" "$(cat "$work/127.0.0.2-1.pid")"
  # Until rank 0 has done a few steps on two workers.
  for ((t = 0; t < 600; ++t)); do
    (($(grep -c 'STEP .*size=2' "$work/out" || true) >= 3)) && break
    sleep 0.05
  done
  kill -TERM "$job_pid" 2>/dev/null || true
  wait "$job_pid" 2>/dev/null || true
  job_pid=
  sed -n 's/^\[0\]<stdout>:STEP //p' "$work/out" | awk -v kill="$kill_ms" '
    { split($1, a, "="); split($2, b, "="); split($3, c, "=");
      step = a[2]; size = b[2]; ms = c[2] }
    size == 4 && ms <= kill && step > last { last = step }
    size == 2 && !first { first = step; first_ms = ms }
    END {
      if (!first) { print "no step after the kill" > "/dev/stderr"; exit 1 }
      printf "%.3f %d\n", (first_ms - kill) / 1000, last - (first - 1)
    }' >>"$work/raw"
done
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "runs: $runs, commit every $commit steps of ${step_ms} ms"
echo "per run (recovery_s lost_steps):"
sed 's/^/  /' "$work/raw"
echo "BENCH elastic.recovery_s $(cut -d' ' -f1 "$work/raw" | median) s"
echo "BENCH elastic.lost_steps $(cut -d' ' -f2 "$work/raw" | median) steps"

#!/usr/bin/env bash
# bench/plot_timeline.py on a real run: a job's timeline and a scrape of
# its metrics each become a PNG, and the shares it prints add up (a job
# that only allreduces spends almost none of its time computing).
#   run_plot.sh BUILD_DIR PYTHON SOURCE_DIR
set -euo pipefail
build=$1 python=$2 src=$3
if ! "$python" -c "import matplotlib" 2>/dev/null; then
  echo "skipped: $python cannot import matplotlib (install python3-matplotlib)"
  exit 77
fi
dir=$(mktemp -d)
job_pid=
cleanup() {
  [[ -n $job_pid ]] && kill "$job_pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "run_plot.sh: $*" >&2; exit 1; }
worker=("$build/tests/integration/hvd_test_worker" --steps 100 --work allreduce)

HOROVOD_TIMELINE="$dir/timeline.json" "$build/launcher/horovodrun" -np 2 \
  "${worker[@]}" >/dev/null
out=$("$python" "$src/bench/plot_timeline.py" "$dir/timeline.json" "$dir/t.png")
echo "$out"
[[ $(head -c 8 "$dir/t.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
  fail "no PNG from the timeline"
# Each rank's three shares add up to 100 % (rounding aside).
awk '/^rank/ {s = $4 + $6 + $8; if (s < 98 || s > 102) bad = 1; n++}
     END {exit (bad || n != 2)}' <<<"$(tr -d '%,' <<<"$out")" ||
  fail "the timeline's shares do not add up: $out"

# A port free now (the kernel's pick), not a guess that may be in use.
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The job runs until the scrape has what it needs (then the file tells it
# to stop), however slow the machine; 60 s is a deadline, not a window.
"$build/launcher/horovodrun" -np 2 --metrics-port "$port" "${worker[@]}" \
  --until-file "$dir/stop" >/dev/null &
job_pid=$!
scrape=
for _ in $(seq 600); do
  sleep 0.1
  scrape=$("$python" -c "
import urllib.request, sys
try:
    print(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=2).read().decode())
except Exception:
    sys.exit(1)" 2>/dev/null) || continue
  grep -q 'hvd_step_seconds_sum{rank="1"' <<<"$scrape" && break
done
printf '%s\n' "$scrape" > "$dir/metrics.txt"
out=$("$python" "$src/bench/plot_timeline.py" "$dir/metrics.txt" "$dir/m.png")
echo "$out"
[[ -s $dir/m.png ]] || fail "no PNG from the metrics"
# Only allreduces: almost all of each step waits on them.
awk '/^rank/ {if ($4 + 0 > 30) bad = 1; n++} END {exit (bad || n != 2)}' \
  <<<"$(tr -d '%,' <<<"$out")" || fail "an allreduce-only job computed: $out"
touch "$dir/stop"
wait "$job_pid"
job_pid=
echo "plot: ok"

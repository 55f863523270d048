#!/usr/bin/env bash
# The rendezvous at scale: starts hvd-rendezvousd on a free loopback port
# and runs rendezvous_scale against it (N simulated workers; see the
# program's header).
#   BUILD_DIR=build bench/run_rendezvous_scale.sh [WORKERS]
set -euo pipefail
build=${BUILD_DIR:-build}
workers=${1:-10000}
daemon="$build/rendezvous/hvd-rendezvousd"
scale="$build/bench/rendezvous_scale"
for f in "$daemon" "$scale"; do
  [[ -x $f ]] || { echo "run_rendezvous_scale.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
dir=$(mktemp -d)
pid=""
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/token")
"$daemon" --listen 127.0.0.1:0 --admin-token-file "$dir/token" \
  --job-ttl-seconds 0 --max-keys-per-job 100000000 2> "$dir/log" &
pid=$!
for _ in $(seq 100); do
  addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$dir/log")
  [[ -n $addr ]] && break
  sleep 0.05
done
[[ -n ${addr:-} ]] || { echo "run_rendezvous_scale.sh: the daemon did not start:" >&2; cat "$dir/log" >&2; exit 1; }
"$scale" --workers "$workers" --addr "$addr" --admin-token-file "$dir/token"

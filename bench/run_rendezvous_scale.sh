#!/usr/bin/env bash
# The rendezvous at scale: starts hvd-rendezvousd on a free loopback port
# and runs rendezvous_scale against it (N simulated workers; see the
# program's header), once per store in STORES (memory disk etcd):
#   memory   the table in memory only (no --state-dir)
#   disk     the embedded store (--state-dir): every change written to its
#            journal before the answer
#   etcd     the etcd store (--store etcd://) on one etcd member the script
#            starts on loopback (Debian's etcd-server; skipped without it)
# For disk and etcd, then: the daemon killed (-9) holding those workers'
# job and started again, the time from its start to its first answered
# call; and RESTARTS (20) kill/restart cycles under a running horovodrun
# job (hvd_hello, 2 ranks), counting the jobs lost.
#   BUILD_DIR=build bench/run_rendezvous_scale.sh [WORKERS]
# Lines: BENCH rendezvous.<store>.join.N (s), .kv.ops (ops/s), .rpc.p99 (ms),
# BENCH rendezvous.<store>.restart_to_first_answer (s),
# BENCH rendezvous.<store>.jobs_lost.<RESTARTS>_restarts (jobs).
set -euo pipefail
build=${BUILD_DIR:-build}
workers=${1:-10000}
stores=${STORES:-memory disk etcd}
restarts=${RESTARTS:-20}
daemon="$build/rendezvous/hvd-rendezvousd"
scale="$build/bench/rendezvous_scale"
run="$build/launcher/horovodrun"
hello="$build/examples/hello/hvd_hello"
for f in "$daemon" "$scale" "$run" "$hello"; do
  [[ -x $f ]] || { echo "run_rendezvous_scale.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
dir=$(mktemp -d)
pid="" etcd_pid=""
cleanup() {
  [[ -n $pid ]] && kill "$pid" 2>/dev/null
  [[ -n $etcd_pid ]] && kill "$etcd_pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/token")

# start_daemon LISTEN [ARGS...]: the daemon in the background; sets pid
# and addr.
start_daemon() {
  local listen=$1
  shift
  : > "$dir/log"
  "$daemon" --listen "$listen" --admin-token-file "$dir/token" \
    --max-keys-per-job 100000000 "$@" 2> "$dir/log" &
  pid=$!
  addr=""
  for _ in $(seq 200); do
    addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$dir/log")
    [[ -n $addr ]] && return
    sleep 0.05
  done
  echo "run_rendezvous_scale.sh: the daemon did not start:" >&2
  cat "$dir/log" >&2
  exit 1
}
stop_daemon() {  # signal
  kill "-$1" "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
}

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# start_etcd: one member on loopback with its own data directory; sets
# etcd_url.
start_etcd() {
  local client peer
  client=127.0.0.1:$(free_port) peer=127.0.0.1:$(free_port)
  etcd --name bench --data-dir "$dir/etcd" --listen-client-urls "http://$client" \
    --advertise-client-urls "http://$client" --listen-peer-urls "http://$peer" \
    --initial-advertise-peer-urls "http://$peer" \
    --initial-cluster "bench=http://$peer" 2> "$dir/etcd.log" &
  etcd_pid=$!
  for _ in $(seq 400); do
    grep -q "ready to serve client requests" "$dir/etcd.log" && { etcd_url=etcd://$client; return; }
    sleep 0.05
  done
  echo "run_rendezvous_scale.sh: etcd did not start:" >&2
  cat "$dir/etcd.log" >&2
  exit 1
}

for store in $stores; do
  args=(--job-ttl-seconds 0)
  [[ $store == disk ]] && args+=(--state-dir "$dir/state")
  if [[ $store == etcd ]]; then
    if ! command -v etcd > /dev/null; then
      echo "run_rendezvous_scale.sh: no etcd (packaging/install-deps.sh installs etcd-server); the etcd store is skipped" >&2
      continue
    fi
    start_etcd
    args+=(--store "$etcd_url")
  fi
  start_daemon 127.0.0.1:0 "${args[@]}"
  "$scale" --workers "$workers" --addr "$addr" --admin-token-file "$dir/token" |
    sed "s/^BENCH rendezvous\./BENCH rendezvous.$store./"
  if [[ $store != memory ]]; then
    # Killed with the workers' job in its state; how soon does it answer
    # once started again?
    stop_daemon KILL
    "$scale" --first-answer 1 --addr "$addr" --admin-token-file "$dir/token" \
      > "$dir/first" &
    probe=$!
    start_ns=$(date +%s%N)
    start_daemon "$addr" "${args[@]}"
    wait "$probe"
    first_ns=$(sed -n 's/^FIRST_ANSWER //p' "$dir/first")
    awk -v a="$start_ns" -v b="$first_ns" \
      -v s="$store" 'BEGIN { printf "BENCH rendezvous.%s.restart_to_first_answer %.3f s\n", s, (b - a) / 1e9 }'
    # Jobs under a daemon killed and started again, RESTARTS times.
    lost=0 jobs=0
    job_pid=""
    for ((i = 0; i < restarts; ++i)); do
      if [[ -z $job_pid ]]; then
        "$run" -np 2 --rendezvous-addr "$addr" --rendezvous-token-file "$dir/token" \
          "$hello" --rounds 100000 --late-rank 1 --late-ms 20 > /dev/null 2> "$dir/job.err" &
        job_pid=$!
        jobs=$((jobs + 1))
      fi
      sleep "0.$((3 + RANDOM % 5))"
      stop_daemon KILL
      sleep 0.5
      start_daemon "$addr" "${args[@]}"
      if ! kill -0 "$job_pid" 2>/dev/null; then
        # It ended: 100000 rounds take hours, so it failed.
        lost=$((lost + 1))
        sed 's/^/  job: /' "$dir/job.err" >&2
        job_pid=""
      fi
    done
    # The last restart's effect shows within a few of its rounds.
    sleep 2
    if [[ -n $job_pid ]] && ! kill -0 "$job_pid" 2>/dev/null; then
      lost=$((lost + 1))
      sed 's/^/  job: /' "$dir/job.err" >&2
      job_pid=""
    fi
    if [[ -n $job_pid ]]; then
      kill -TERM "$job_pid" 2>/dev/null || true
      wait "$job_pid" 2>/dev/null || true
    fi
    echo "BENCH rendezvous.$store.jobs_lost.${restarts}_restarts $lost jobs"
  fi
  stop_daemon TERM
  rm -rf "$dir/state"
  if [[ -n $etcd_pid ]]; then
    kill "$etcd_pid"
    wait "$etcd_pid" 2>/dev/null || true
    etcd_pid=""
    rm -rf "$dir/etcd"
  fi
done

#!/usr/bin/env bash
# Allreduce across hosts on real sockets: HOSTS (2 4) network-namespace
# hosts on a bridge, each with its own sshd, each host's link shaped by tc
# tbf both ways at RATES Gbit/s (2 10), and for each rate:
#   tcp     plain TCP between two hosts (bench/tcp_probe): the 4-byte
#           round trip, and what one stream carries each way at once
#   hvd     libhvd's engine, through horovodrun over SSH (as the job
#           picks its data path)
#   hier    with more ranks than one per host: the engine with
#           HOROVOD_HIERARCHICAL_ALLREDUCE=1 (shared memory within a host,
#           the TCP ring between hosts)
#   flat    the same with =0 (one TCP ring through every rank)
#   ring    hvd's TCP ring alone (the engine's TCP allreduce, no engine)
#   gloo    raw Gloo (HOROVOD_TCP_RING_DISABLE=1: Gloo's own ring)
#   mpi     OpenMPI's MPI_Allreduce, mpirun over the same SSH hosts,
#           --mca btl tcp,self
# (RATES 0: unshaped) at RANKS_PER_HOST (1 2) ranks per host, fp32, SIZES (4 B .. 256 MiB in
# powers of 4). WHO (all of the above) picks contenders; VARIANTS adds
# engine runs under settings of their own, as "label:VAR=V,VAR=V ..."
# (e.g. VARIANTS="s4:HOROVOD_TCP_STREAMS=4"). The contenders take turns,
# RUNS (3) times; each figure is the median over the runs. With TRAIN=1, training too: train_mnist's step
# (bench/train_bench) and examples/pytorch/pytorch_mnist.py, 2 ranks on one
# host (shared memory) against 2 hosts of one rank over the link, images/s
# of the job (STEPS, 30). Root only (namespaces, tc, sshd).
#   BUILD_DIR=build bench/run_multihost.sh      (PLOT=FILE.png also draws it;
#   RAW=FILE keeps each run's RESULT lines)
# Lines: BENCH multihost.<who>.<hosts>x<ranks>.<rate>g.busbw.<size> (GB/s),
# BENCH multihost.train.{cpp,py}.{1x2,2x1}.<rate>g.images_per_s,
# BENCH multihost.<who>.<hosts>x<ranks>.<rate>g.latency.<size> (us),
# BENCH multihost.link.<rate>g.GBps (the shaped rate),
# BENCH multihost.tcp.<rate>g.both_ways (GB/s per direction),
# BENCH multihost.tcp.<rate>g.rtt (us).
# busbw = bytes / time * 2(n-1)/n.
set -euo pipefail
build=${BUILD_DIR:-build}
here=$(cd "$(dirname "$0")" && pwd)
run="$build/launcher/horovodrun"
prog="$build/bench/allreduce_bench"
mpi_prog="$build/bench/mpi_allreduce_bench"
probe="$build/bench/tcp_probe"
for f in "$run" "$prog" "$probe"; do
  [[ -x $f ]] || { echo "run_multihost.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
[[ $(id -u) -eq 0 ]] || { echo "run_multihost.sh: needs root (network namespaces, tc, sshd)" >&2; exit 2; }
run=$(realpath "$run") prog=$(realpath "$prog") probe=$(realpath "$probe")
mpi=()
if command -v mpirun >/dev/null && [[ -x $mpi_prog ]]; then
  mpi_prog=$(realpath "$mpi_prog")
  mpi=(mpirun --allow-run-as-root)
else
  echo "run_multihost.sh: no mpirun or $mpi_prog; the mpi figures are left out (packaging/install-deps.sh --bench)" >&2
fi
hosts_list=${HOSTS:-2 4}
rates=${RATES:-2 10}
ppn_list=${RANKS_PER_HOST:-1 2}
runs=${RUNS:-3}
sizes=${SIZES:-}
if [[ -z $sizes ]]; then
  for ((b = 4; b <= 268435456; b *= 4)); do sizes+="$b "; done
fi
max_hosts=0
for h in $hosts_list; do ((h > max_hosts)) && max_hosts=$h; done

# shellcheck source=bench/namespace_hosts.sh
source "$here/namespace_hosts.sh"
hosts_up "$max_hosts"
shape() { hosts_shape "$1"; }

raw=$(mktemp -p "$work") table=$(mktemp -p "$work")
rank0() { sed -n "s/^\[0\]<stdout>:RESULT $1 /RESULT $2 /p"; }
hvd() {  # label hosts ranks mode [env...]
  local label=$1 h=$2 r=$3 mode=$4
  shift 4
  env HOME="$work/home" "$@" "$run" -i "$work/user_key" -np $((h * r)) \
    -H "$(host_list "$h" "$r")" "$prog" --mode "$mode" $sizes |
    rank0 "$mode" "$label" | grep -v fusion
}
# --bind-to none: the namespace hosts share this machine's CPUs, and each
# host's orted would bind its first rank to core 0 (all of them on one
# core: every operation then waits a scheduler tick, 4 ms).
mpi_run() {  # label hosts ranks
  "${mpi[@]}" -np $(($2 * $3)) -H "$(host_list "$2" "$3")" --bind-to none \
    --mca btl tcp,self --mca btl_tcp_if_include 10.212.0.0/24 \
    --mca oob_tcp_if_include 10.212.0.0/24 --mca plm_rsh_args "$ssh_opts" \
    "$mpi_prog" $sizes | sed "s/^RESULT mpi /RESULT $1 /"
}

train_prog="$build/bench/train_bench"
python=${PYTHON:-/usr/bin/python3}
steps=${STEPS:-30}
# A job's images/s: the sum of its ranks' RESULT lines.
images() { sed -n 's/^\[[0-9]*\]<stdout>://p' | awk '$1 == "RESULT" {s += $NF} END {printf "%.1f\n", s}'; }
train() {  # label hostspec
  local label=$1 hosts=$2
  echo "RESULT train.cpp.$label 0 $(env HOME="$work/home" "$run" -i "$work/user_key" \
    -np 2 -H "$hosts" "$(realpath "$train_prog")" --threads 1 --steps "$steps" | images)"
  # The namespace hosts share this machine's cores: one thread per rank.
  echo "RESULT train.py.$label 0 $(env HOME="$work/home" OMP_NUM_THREADS=1 "$run" -i "$work/user_key" \
    -np 2 -H "$hosts" "$python" "$here/../examples/pytorch/pytorch_mnist.py" \
    --no-checkpoint --batch-size 128 --log-interval 100000 --steps "$steps" | images)"
}

who=" ${WHO:-tcp hvd hier flat ring gloo mpi} "
wants() { [[ $who == *" $1 "* ]]; }
variants=${VARIANTS:-}

for rate in $rates; do
  shape "$rate"
  ((rate > 0)) && echo "RESULT link.${rate}g $((rate * 125000000))" >> "$raw"
  for ((i = 0; i < runs; ++i)); do
    if wants tcp; then
      port=$((30000 + RANDOM % 5000))
      ip netns exec "$(ns 1)" "$probe" server "$(addr 1)" "$port" &
      server=$!
      ip netns exec "$(ns 0)" "$probe" client "$(addr 1)" "$port" |
        sed "s/^RESULT tcp\.\([a-z_]*\) /RESULT tcp.${rate}g.\1 0 /" >> "$raw"
      wait "$server"
    fi
    for h in $hosts_list; do
      for r in $ppn_list; do
        tag="${h}x${r}.${rate}g"
        wants hvd && hvd "hvd.$tag" "$h" "$r" engine >> "$raw"
        for v in $variants; do
          IFS=, read -ra venv <<< "${v#*:}"
          hvd "${v%%:*}.$tag" "$h" "$r" engine "${venv[@]}" >> "$raw"
        done
        if ((r > 1)); then
          wants hier && hvd "hier.$tag" "$h" "$r" engine HOROVOD_HIERARCHICAL_ALLREDUCE=1 >> "$raw"
          wants flat && hvd "flat.$tag" "$h" "$r" engine HOROVOD_HIERARCHICAL_ALLREDUCE=0 >> "$raw"
        fi
        wants ring && hvd "ring.$tag" "$h" "$r" backend HOROVOD_SHM_DISABLE=1 >> "$raw"
        wants gloo && hvd "gloo.$tag" "$h" "$r" backend HOROVOD_SHM_DISABLE=1 \
          HOROVOD_TCP_RING_DISABLE=1 >> "$raw"
        [[ ${#mpi[@]} -gt 0 ]] && wants mpi && mpi_run "mpi.$tag" "$h" "$r" >> "$raw"
      done
    done
    if [[ ${TRAIN:-0} == 1 ]]; then
      train "1x2.${rate}g" "$(addr 0):2" >> "$raw"
      train "2x1.${rate}g" "$(addr 0):1,$(addr 1):1" >> "$raw"
    fi
  done
done

# RAW=FILE keeps every run's figures (to see how runs spread).
[[ -n ${RAW:-} ]] && cp "$raw" "$RAW"
# The median of each (who, size) over the runs.
awk -f "$(dirname "$0")/medians.awk" "$raw" | sort -k1,1 -k2,2n > "$table"
awk '
  function label(b) {
    if (b >= 1048576) return b / 1048576 "MiB"
    if (b >= 1024) return b / 1024 "KiB"
    return b "B"
  }
  $1 ~ /^train\./ { printf "BENCH multihost.%s.images_per_s %.1f images/s\n", $1, $3; next }
  $1 ~ /^link\./ { split($1, w, "."); printf "BENCH multihost.link.%s.GBps %.3f GB/s\n", w[2], $2 / 1e9; next }
  $1 ~ /^tcp\..*\.rtt$/ { split($1, w, "."); printf "BENCH multihost.tcp.%s.rtt %.1f us\n", w[2], $3 * 1e6; next }
  $1 ~ /^tcp\..*\.both_ways$/ { split($1, w, "."); printf "BENCH multihost.tcp.%s.both_ways %.3f GB/s\n", w[2], $3 / 1e9; next }
  {
    # who.HxR.RATEg: n = H * R ranks.
    split($1, w, "."); split(w[2], hr, "x"); n = hr[1] * hr[2]
    printf "BENCH multihost.%s.busbw.%s %.3f GB/s\n", $1, label($2), $2 / $3 * 2 * (n - 1) / n / 1e9
    printf "BENCH multihost.%s.latency.%s %.2f us\n", $1, label($2), $3 * 1e6
  }' "$table"
if [[ -n ${PLOT:-} ]]; then
  /usr/bin/python3 "$here/plot_multihost.py" "$table" "$PLOT"
fi

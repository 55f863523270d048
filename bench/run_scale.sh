#!/usr/bin/env bash
# Allreduce as the hosts grow: HOSTS (2 4 8 16) network-namespace hosts on
# one bridge (bench/namespace_hosts.sh), RANKS_PER_HOST (1 2) ranks each,
# links shaped at RATE Gbit/s (0: unshaped), fp32 at SIZES (4 B, 4 KiB,
# 64 KiB, 1 MiB, 16 MiB), for
#   hvd     libhvd's engine, through horovodrun over SSH
#   gloo    raw Gloo: its own allreduce on the job's Gloo context, no
#           engine (HOROVOD_SHM_DISABLE=1 HOROVOD_TCP_RING_DISABLE=1), up
#           to GLOO_MOST_RANKS (8) ranks: past the cores, its ranks wait
#           out each other's turns (8 ranks: 17 ms for 4 KiB) and a run
#           takes many minutes
#   mpi     OpenMPI's MPI_Allreduce, mpirun -H over the same hosts, TCP,
#           --mca mpi_yield_when_idle 1 (each remote orted sees one slot,
#           and an unyielding rank spins on cores the others need)
# and the launch: wall time of a whole job whose ranks init and complete
# one allreduce, `horovodrun ... hvd_hello` against `mpirun ...
# mpi_allreduce`. WHO (hvd gloo mpi launch) picks; VARIANTS adds engine
# runs under settings of their own, "label:VAR=V,VAR=V ..."; BASE_DIR=DIR
# adds the engine of another build ("base": DIR's horovodrun and
# allreduce_bench, say the commit before a change). Contenders
# take turns, RUNS (3) times; each figure is the median over the runs.
# Root only (namespaces, tc, sshd).
#   BUILD_DIR=build bench/run_scale.sh   (PLOT=FILE.png draws time against
#   hosts per size; RAW=FILE keeps each run's RESULT lines)
# Lines: BENCH scale.<who>.<hosts>x<ranks>.<size> <us> us,
#        BENCH scale.launch.<who>.<hosts>x<ranks> <s> s,
#        BENCH scale.<who>_over_mpi.<hosts>x<ranks>.<size> <ratio> x (MPI's
#        time over the contender's: above 1 is faster than MPI).
set -euo pipefail
build=${BUILD_DIR:-build}
here=$(cd "$(dirname "$0")" && pwd)
run="$build/launcher/horovodrun"
prog="$build/bench/allreduce_bench"
hello="$build/examples/hello/hvd_hello"
mpi_prog="$build/bench/mpi_allreduce_bench"
mpi_hello="$build/bench/mpi_allreduce"
for f in "$run" "$prog" "$hello"; do
  [[ -x $f ]] || { echo "run_scale.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
[[ $(id -u) -eq 0 ]] || { echo "run_scale.sh: needs root (network namespaces, tc, sshd)" >&2; exit 2; }
run=$(realpath "$run") prog=$(realpath "$prog") hello=$(realpath "$hello")
have_mpi=0
if command -v mpirun >/dev/null && [[ -x $mpi_prog && -x $mpi_hello ]]; then
  have_mpi=1 mpi_prog=$(realpath "$mpi_prog") mpi_hello=$(realpath "$mpi_hello")
else
  echo "run_scale.sh: no mpirun or $mpi_prog; the mpi figures are left out (packaging/install-deps.sh --bench)" >&2
fi
hosts_list=${HOSTS:-2 4 8 16}
ppn_list=${RANKS_PER_HOST:-1 2}
rate=${RATE:-0}
runs=${RUNS:-3}
sizes=${SIZES:-4 4096 65536 1048576 16777216}
who=" ${WHO:-hvd gloo mpi launch} "
gloo_most=${GLOO_MOST_RANKS:-8}
wants() { [[ $who == *" $1 "* ]]; }
variants=${VARIANTS:-}
max_hosts=0
for h in $hosts_list; do ((h > max_hosts)) && max_hosts=$h; done

# shellcheck source=bench/namespace_hosts.sh
source "$here/namespace_hosts.sh"
hosts_up "$max_hosts"
hosts_shape "$rate"

raw=$(mktemp -p "$work")
rank0() { sed -n "s/^\[0\]<stdout>:RESULT $1 /RESULT $2 /p"; }
baseline=${BASE_DIR:-}
if [[ -n $baseline ]]; then
  [[ -x $baseline/launcher/horovodrun && -x $baseline/bench/allreduce_bench ]] ||
    { echo "run_scale.sh: BASE_DIR=$baseline has no launcher/horovodrun and bench/allreduce_bench" >&2; exit 2; }
  baseline=$(realpath "$baseline")
fi
hvd() {  # label hosts ranks mode [env...]
  local label=$1 h=$2 r=$3 mode=$4 with=$run what=$prog
  shift 4
  if [[ $label == base.* ]]; then
    with=$baseline/launcher/horovodrun what=$baseline/bench/allreduce_bench
  fi
  env HOME="$work/home" "$@" "$with" -i "$user_key" -np $((h * r)) \
    -H "$(host_list "$h" "$r")" "$what" --mode "$mode" $sizes |
    rank0 "$mode" "$label" | grep -v "fusion\|pieces" || true
}
mpirun_hosts() {  # hosts ranks program...
  local h=$1 r=$2
  shift 2
  mpirun --allow-run-as-root -np $((h * r)) -H "$(host_list "$h" "$r")" \
    --bind-to none --mca mpi_yield_when_idle 1 \
    --mca btl tcp,self --mca btl_tcp_if_include 10.212.0.0/24 \
    --mca oob_tcp_if_include 10.212.0.0/24 --mca plm_rsh_args "$ssh_opts" "$@"
}
# Wall seconds of a command, its output dropped; a failure is no figure.
wall() {
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1 || { echo "run_scale.sh: '$*' failed" >&2; return 1; }
  end=$(date +%s%N)
  awk -v ns=$((end - start)) 'BEGIN { printf "%.4f\n", ns / 1e9 }'
}
launch() {  # hosts ranks
  local h=$1 r=$2 t
  if t=$(wall env HOME="$work/home" "$run" -i "$user_key" -np $((h * r)) \
    -H "$(host_list "$h" "$r")" "$hello"); then
    echo "RESULT launch.hvd.${h}x${r} 0 $t"
  fi
  if ((have_mpi)) && t=$(wall mpirun_hosts "$h" "$r" "$mpi_hello"); then
    echo "RESULT launch.mpi.${h}x${r} 0 $t"
  fi
}

for ((i = 0; i < runs; ++i)); do
  for h in $hosts_list; do
    for r in $ppn_list; do
      tag="${h}x${r}"
      wants hvd && hvd "hvd.$tag" "$h" "$r" engine >> "$raw"
      [[ -n $baseline ]] && hvd "base.$tag" "$h" "$r" engine >> "$raw"
      for v in $variants; do
        IFS=, read -ra venv <<< "${v#*:}"
        hvd "${v%%:*}.$tag" "$h" "$r" engine "${venv[@]}" >> "$raw"
      done
      if wants gloo && ((h * r <= gloo_most)); then
        hvd "gloo.$tag" "$h" "$r" backend HOROVOD_SHM_DISABLE=1 \
          HOROVOD_TCP_RING_DISABLE=1 >> "$raw"
      fi
      if ((have_mpi)) && wants mpi; then
        mpirun_hosts "$h" "$r" "$mpi_prog" $sizes |
          sed -n "s/^RESULT mpi /RESULT mpi.$tag /p" >> "$raw" || true
      fi
      wants launch && launch "$h" "$r" >> "$raw"
    done
  done
done

[[ -n ${RAW:-} ]] && cp "$raw" "$RAW"
table=$(mktemp -p "$work")
awk -f "$here/medians.awk" "$raw" | sort -k1,1 -k2,2n > "$table"
awk '
  function label(b) {
    b += 0
    if (b >= 1048576) return b / 1048576 "MiB"
    if (b >= 1024) return b / 1024 "KiB"
    return b "B"
  }
  $1 ~ /^launch\./ { printf "BENCH scale.%s %.3f s\n", $1, $3; next }
  {
    printf "BENCH scale.%s.%s %.2f us\n", $1, label($2), $3 * 1e6
    split($1, w, "."); t[w[1], w[2], $2] = $3; who[w[1]] = 1; tags[w[2]] = 1
    sz[$2] = 1
  }
  END {
    for (c in who) {
      if (c == "mpi") continue
      for (g in tags) for (b in sz) {
        if (((c, g, b) in t) && (("mpi", g, b) in t) && t[c, g, b] > 0) {
          printf "BENCH scale.%s_over_mpi.%s.%s %.2f x\n", c, g, label(b), t["mpi", g, b] / t[c, g, b]
        }
      }
    }
  }' "$table" | sort
if [[ -n ${PLOT:-} ]]; then
  /usr/bin/python3 "$here/plot_scale.py" "$table" "$PLOT"
fi

#!/usr/bin/env bash
# Allreduce on this machine, 2 ranks: libhvd's engine (shared memory between
# the ranks of a host, the default; and with HOROVOD_SHM_DISABLE=1, Gloo over
# TCP as hvd_tcp), raw Gloo in the same process layout, and OpenMPI's
# MPI_Allreduce; plus the fusion step (64 tensors of 16 KiB) through the
# engine vs 64 sequential Gloo calls.
#   BUILD_DIR=build bench/run_allreduce.sh
# busbw = bytes / time * 2(n-1)/n.
set -euo pipefail
build=${BUILD_DIR:-build}
np=2
run="$build/launcher/horovodrun"
prog="$build/bench/allreduce_bench"
for f in "$run" "$prog"; do
  [[ -x $f ]] || { echo "run_allreduce.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
out=$(mktemp) raw=$(mktemp)
trap 'rm -f "$out" "$raw"' EXIT
# Every program runs `runs` times (3 by default) and each figure is the
# median over the runs: on a shared VM one run in a few lands on a slow
# spell, and all four contenders get the same treatment.
runs=${RUNS:-3}
for ((i = 0; i < runs; ++i)); do
  "$run" -np $np "$prog" --mode engine | sed -n 's/^\[0\]<stdout>://p' >> "$raw"
  # The engine with shared memory off: Gloo over TCP loopback, as across hosts.
  HOROVOD_SHM_DISABLE=1 "$run" -np $np "$prog" --mode engine |
    sed -n 's/^\[0\]<stdout>:RESULT engine/RESULT engine_tcp/p' >> "$raw"
  HOROVOD_SHM_DISABLE=1 "$run" -np $np "$prog" --mode gloo | sed -n 's/^\[0\]<stdout>://p' >> "$raw"
  mpi_prog="$build/bench/mpi_allreduce_bench"
  if command -v mpirun >/dev/null && [[ -x $mpi_prog ]]; then
    mpi=(mpirun -np $np)
    [[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
    "${mpi[@]}" "$mpi_prog" >> "$raw"
  elif ((i == 0)); then
    echo "run_allreduce.sh: no mpirun or $mpi_prog; run packaging/install-deps.sh --bench and reconfigure" >&2
  fi
done
# The median of each (mode, size) over the runs.
awk '$1 == "RESULT" { k = $2 " " $3; v[k] = v[k] " " $4 }
  END {
    for (k in v) {
      n = split(substr(v[k], 2), a, " ")
      for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      print "RESULT " k " " a[int((n + 1) / 2)]
    }
  }' "$raw" > "$out"
awk -v n=$np '
  $1 == "RESULT" && $3 == "fusion" { fusion[$2] = $4; next }
  $1 == "RESULT" { t[$2, $3] = $4; modes[$2] = 1; sizes[$3] = 1 }
  END {
    name["engine"] = "hvd"; name["engine_tcp"] = "hvd_tcp"; name["gloo"] = "gloo"; name["mpi"] = "mpi"
    for (m in modes) {
      for (s in sizes) if ((m, s) in t)
        printf "%s %9d B  %10.1f us  %7.3f GB/s busbw\n", name[m], s, t[m, s] * 1e6,
               s / t[m, s] * 2 * (n - 1) / n / 1e9
    }
    for (m in modes) {
      if ((m, 4194304) in t) printf "BENCH allreduce.%s.busbw.4MiB %.3f GB/s\n", name[m], 4194304 / t[m, 4194304] * 2 * (n - 1) / n / 1e9
      if ((m, 67108864) in t) printf "BENCH allreduce.%s.busbw.64MiB %.3f GB/s\n", name[m], 67108864 / t[m, 67108864] * 2 * (n - 1) / n / 1e9
      if ((m, 4) in t) printf "BENCH allreduce.%s.latency.4B %.1f us\n", name[m], t[m, 4] * 1e6
    }
    if ("engine" in fusion) printf "BENCH fusion.step.fused %.1f us\n", fusion["engine"] * 1e6
    if ("gloo" in fusion) printf "BENCH fusion.step.unfused %.1f us\n", fusion["gloo"] * 1e6
  }' "$out" | sort

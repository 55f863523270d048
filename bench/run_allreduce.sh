#!/usr/bin/env bash
# Allreduce across sizes on this machine, 2 ranks: fp32, 4 B to 256 MiB in
# powers of 4, for
#   hvd          libhvd's engine (shared memory between a host's ranks)
#   hvd_shared   the engine on buffers from hvd::alloc_shared (reduced
#                straight between the ranks' buffers)
#   hvd_backend  the shared-memory backend alone, no engine
#   hvd_tcp      the engine with HOROVOD_SHM_DISABLE=1 (hvd's TCP ring, as
#                across hosts)
#   gloo         raw Gloo (the backend with shared memory and hvd's TCP
#                ring off)
#   mpi          OpenMPI's MPI_Allreduce
#   hvd_base     with BASE_DIR=DIR: the engine of another build (the commit
#                before a change), in the same rounds
# and one core's memcpy as the physical reference. The contenders run in
# turn, RUNS times (5), each figure the median over the runs (this VM's
# speed shifts by a third for seconds at a time, for every contender
# alike: a median of five rounds is seldom one taken in a slow spell,
# where one of three often was), the engine and OpenMPI one after the
# other, and then for 4 B to 4 KiB RUNS times more in pairs; then the
# fusion step (64 tensors of 16 KiB: fused by the engine, as the backend's
# 64 calls, and the engine's data path alone, one backend call over the 64)
# and the 4-byte latency at -np 4 and 8.
#   BUILD_DIR=build bench/run_allreduce.sh      (PLOT=FILE.png also draws it)
# busbw = bytes / time * 2(n-1)/n. Lines: BENCH allreduce.WHO.busbw.SIZE,
# BENCH allreduce.WHO.latency.SIZE, BENCH memcpy.GBps.
set -euo pipefail
build=${BUILD_DIR:-build}
np=2
run="$build/launcher/horovodrun"
prog="$build/bench/allreduce_bench"
mpi_prog="$build/bench/mpi_allreduce_bench"
for f in "$run" "$prog"; do
  [[ -x $f ]] || { echo "run_allreduce.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
mpi=()
if command -v mpirun >/dev/null && [[ -x $mpi_prog ]]; then
  mpi=(mpirun --oversubscribe)
  [[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
else
  echo "run_allreduce.sh: no mpirun or $mpi_prog; run packaging/install-deps.sh --bench and reconfigure" >&2
fi
raw=$(mktemp) table=$(mktemp)
trap 'rm -f "$raw" "$table"' EXIT
rank0() { sed -n "s/^\[0\]<stdout>:RESULT $1 /RESULT $2 /p"; }

runs=${RUNS:-5}
for ((i = 0; i < runs; ++i)); do
  "$run" -np $np "$prog" --mode engine | rank0 engine hvd >> "$raw"
  [[ ${#mpi[@]} -gt 0 ]] && "${mpi[@]}" -np $np "$mpi_prog" >> "$raw"
  if [[ -n ${BASE_DIR:-} ]]; then
    "$BASE_DIR/launcher/horovodrun" -np $np "$BASE_DIR/bench/allreduce_bench" --mode engine | rank0 engine hvd_base >> "$raw"
  fi
  "$run" -np $np "$prog" --mode shared | rank0 shared hvd_shared | grep -v fusion >> "$raw"
  "$run" -np $np "$prog" --mode backend | rank0 backend hvd_backend >> "$raw"
  HOROVOD_SHM_DISABLE=1 "$run" -np $np "$prog" --mode engine | rank0 engine hvd_tcp >> "$raw"
  HOROVOD_SHM_DISABLE=1 HOROVOD_TCP_RING_DISABLE=1 "$run" -np $np "$prog" --mode backend | rank0 backend gloo >> "$raw"
  "$prog" --mode memcpy >> "$raw"
done
# The small sizes, whose figures a slow spell of the VM moves most, again
# in pairs: the engine and OpenMPI within a second of each other.
small=(4 16 64 256 1024 4096)
for ((i = 0; i < runs && ${#mpi[@]} > 0; ++i)); do
  "$run" -np $np "$prog" --mode engine "${small[@]}" | rank0 engine hvd | grep -v fusion >> "$raw"
  "${mpi[@]}" -np $np "$mpi_prog" "${small[@]}" >> "$raw"
done
# Latency of 4 bytes with more ranks than cores.
for n in 4 8; do
  for ((i = 0; i < runs; ++i)); do
    "$run" -np $n "$prog" --mode engine 4 | rank0 engine "hvd.np$n" | grep -v fusion >> "$raw"
    if [[ -n ${BASE_DIR:-} ]]; then
      "$BASE_DIR/launcher/horovodrun" -np $n "$BASE_DIR/bench/allreduce_bench" --mode engine 4 | rank0 engine "hvd_base.np$n" | grep -v fusion >> "$raw"
    fi
    [[ ${#mpi[@]} -gt 0 ]] && "${mpi[@]}" -np $n "$mpi_prog" 4 | sed "s/^RESULT mpi /RESULT mpi.np$n /" >> "$raw"
  done
done
# The median of each (who, size) over the runs.
awk -f "$(dirname "$0")/medians.awk" "$raw" | sort -k1,1 -k2,2n > "$table"
awk -v n=$np '
  function label(b) {
    if (b >= 1048576) return b / 1048576 "MiB"
    if (b >= 1024) return b / 1024 "KiB"
    return b "B"
  }
  $2 == "fusion" { printf "BENCH fusion.step.%s %.1f us\n", ($1 == "hvd" ? "fused" : $1 == "hvd_backend" ? "unfused" : $1), $3 * 1e6; next }
  $2 == "pieces" { printf "BENCH fusion.step.%s %.1f us\n", ($1 == "hvd_backend" ? "data_path" : $1 ".data_path"), $3 * 1e6; next }
  $1 == "memcpy" { if ($2 == 67108864) printf "BENCH memcpy.GBps %.3f GB/s\n", $2 / $3 / 1e9; next }
  $1 ~ /\.np[0-9]+$/ { split($1, w, "."); printf "BENCH allreduce.%s.latency.%s.%s %.2f us\n", w[1], label($2), w[2], $3 * 1e6; next }
  {
    printf "BENCH allreduce.%s.busbw.%s %.3f GB/s\n", $1, label($2), $2 / $3 * 2 * (n - 1) / n / 1e9
    printf "BENCH allreduce.%s.latency.%s %.2f us\n", $1, label($2), $3 * 1e6
  }' "$table"
if [[ -n ${PLOT:-} ]]; then
  /usr/bin/python3 "$(dirname "$0")/plot_allreduce.py" "$table" "$PLOT" $np
fi

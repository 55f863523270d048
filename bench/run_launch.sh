#!/usr/bin/env bash
# Launch cost: median wall time (of 7 runs, after one warm-up) from start to
# end of a job whose two workers complete one allreduce, for
#   horovodrun -np 2 hvd_hello      and      mpirun -np 2 mpi_allreduce
#   BUILD_DIR=build bench/run_launch.sh
# mpirun needs OpenMPI (packaging/install-deps.sh --bench) and a build
# configured after it was installed.
set -euo pipefail
build=${BUILD_DIR:-build}
hvd=("$build/launcher/horovodrun" -np 2 "$build/examples/hello/hvd_hello")
[[ -x ${hvd[0]} ]] || { echo "run_launch.sh: ${hvd[0]} is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }

median_s() {  # runs "$@" 1+7 times, prints the median wall time in seconds
  "$@" >/dev/null 2>&1 || { echo "run_launch.sh: '$*' failed" >&2; return 1; }
  local times=() start end
  for _ in 1 2 3 4 5 6 7; do
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s%N)
    times+=($(( end - start )))
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 4p | awk '{ printf "%.3f", $1 / 1e9 }'
}

t_hvd=$(median_s "${hvd[@]}")
echo "BENCH launch.hvd.np2 $t_hvd s"

mpi_prog="$build/bench/mpi_allreduce"
if command -v mpirun >/dev/null && [[ -x $mpi_prog ]]; then
  mpi=(mpirun -np 2)
  [[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
  t_mpi=$(median_s "${mpi[@]}" "$mpi_prog")
  echo "BENCH launch.mpirun.np2 $t_mpi s"
  awk -v a="$t_hvd" -v b="$t_mpi" 'BEGIN { printf "hvd / mpirun = %.2f\n", a / b }'
else
  echo "run_launch.sh: mpirun or $mpi_prog missing; run packaging/install-deps.sh --bench and reconfigure" >&2
fi

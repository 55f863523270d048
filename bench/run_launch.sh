#!/usr/bin/env bash
# Launch cost: median wall time (of 7 runs, after one warm-up) from start to
# end of a job whose workers complete one allreduce, for
#   horovodrun -np 2 hvd_hello      and      mpirun -np 2 mpi_allreduce
# and, in a Slurm allocation of 2 nodes x 2 CPUs ready (salloc granted),
#   horovodrun -np 4 hvd_hello      (one srun step over both nodes)
# on a throwaway Slurm on this machine (hvd_test_slurm: munged, slurmctld,
# two slurmd on 127.0.0.1).
#   BUILD_DIR=build bench/run_launch.sh
# mpirun needs OpenMPI (packaging/install-deps.sh --bench) and a build
# configured after it was installed; the Slurm figure needs Slurm
# (packaging/install-deps.sh).
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

slurm="$build/tests/util/hvd_test_slurm"
if [[ -x $slurm && -x /usr/bin/salloc ]]; then
  coproc CLUSTER { "$slurm" 2 2; }
  read -r -t 60 conf <&"${CLUSTER[0]}" || conf=
  if [[ $conf == SLURM_CONF=* ]]; then
    export "${conf?}"
    inner=$(declare -f median_s)'; median_s "$@"'
    t_srun=$(salloc -N2 -n4 bash -c "$inner" _ "$build/launcher/horovodrun" \
      -np 4 "$build/examples/hello/hvd_hello" 2>/dev/null)
    echo "BENCH launch.hvd_srun.np4 $t_srun s"
  else
    echo "run_launch.sh: the throwaway Slurm did not start" >&2
  fi
  kill "$CLUSTER_PID" 2>/dev/null || true
  wait "$CLUSTER_PID" 2>/dev/null || true
else
  echo "run_launch.sh: $slurm or salloc missing; run packaging/install-deps.sh and build" >&2
fi

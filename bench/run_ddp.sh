#!/usr/bin/env bash
# The race a PyTorch user runs: the same model (the MNIST CNN), data and
# optimizer trained with hvd's DistributedOptimizer and with torch's
# DistributedDataParallel (gloo), -np 2 under this horovodrun, the two
# taking turns ROUNDS times (5), so that a machine whose speed drifts
# weighs on both alike. Each figure is the median images/s of the job.
#   BUILD_DIR=build bench/run_ddp.sh
# Lines: BENCH py.hvd.images_per_s, BENCH py.ddp.images_per_s,
# BENCH py.hvd_over_ddp (the median of the rounds' ratios).
set -euo pipefail
build=${BUILD_DIR:-build}
python=${PYTHON:-/usr/bin/python3}
run="$build/launcher/horovodrun"
[[ -x $run ]] || { echo "run_ddp.sh: $run is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
here=$(dirname "$0")
rounds=${ROUNDS:-5}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
one() {  # mode [port]
  "$run" -np 2 "$python" "$here/ddp_race.py" --mode "$1" --port "$2" "${@:3}" |
    sed -n "s/^\(\[0\]<stdout>:\)\{0,1\}RESULT $1 //p"
}
hvd=() ddp=() ratios=()
for ((i = 0; i < rounds; ++i)); do
  port=$((29500 + RANDOM % 2000))
  if ((i % 2 == 0)); then
    a=$(one hvd "$port") b=$(one ddp "$port")
  else
    b=$(one ddp "$port") a=$(one hvd "$port")
  fi
  hvd+=("$a") ddp+=("$b")
  ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a / b}')")
done
echo "hvd/ddp of each round: ${ratios[*]}"
echo "BENCH py.hvd.images_per_s $(printf '%s\n' "${hvd[@]}" | median) images/s"
echo "BENCH py.ddp.images_per_s $(printf '%s\n' "${ddp[@]}" | median) images/s"
echo "BENCH py.hvd_over_ddp $(printf '%s\n' "${ratios[@]}" | median) x"

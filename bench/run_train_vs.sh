#!/usr/bin/env bash
# Training throughput at -np 2 of this build against another (the commit
# before a change), interleaved in one run: train_bench (train_mnist's
# model, one thread a rank) and examples/pytorch/pytorch_mnist.py (torch's
# CPU kernels, each build's horovod package), images/s summed over ranks,
# each figure the median over RUNS rounds (5), with the medians' ratio.
#   BUILD_DIR=build BASE_DIR=../base/build bench/run_train_vs.sh
# Lines: BENCH train_vs.{cpp,py}.{new,base}.images_per_s, and
# BENCH train_vs.{cpp,py}.new_over_base.
set -euo pipefail
build=${BUILD_DIR:-build}
base=${BASE_DIR:?run_train_vs.sh: set BASE_DIR to the other build}
src=$(cd "$(dirname "$0")/.." && pwd)
python=${HVD_PYTHON:-/usr/bin/python3}
for b in "$build" "$base"; do
  for f in "$b/launcher/horovodrun" "$b/bench/train_bench"; do
    [[ -x $f ]] || { echo "run_train_vs.sh: $f is missing; build it first" >&2; exit 2; }
  done
  compgen -G "$b/python/hvd/_core*.so" >/dev/null ||
    { echo "run_train_vs.sh: $b has no Python extension (build target hvd_python_core)" >&2; exit 2; }
done
runs=${RUNS:-5}
steps=${STEPS:-30}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
images() { sed -n 's/^\[[0-9]*\]<stdout>://p' | awk '$1 == "RESULT" {s += $NF} END {printf "%.1f\n", s}'; }
for ((i = 0; i < runs; ++i)); do
  for who in new base; do
    b=$build
    [[ $who == base ]] && b=$base
    echo "cpp.$who $("$b/launcher/horovodrun" -np 2 "$b/bench/train_bench" \
        --threads 1 --steps "$steps" | images)" >> "$raw"
    echo "py.$who $(PYTHONPATH="$b/python" "$b/launcher/horovodrun" -np 2 \
        "$python" "$src/examples/pytorch/pytorch_mnist.py" --no-checkpoint \
        --batch-size 128 --log-interval 100000 --steps "$steps" | images)" >> "$raw"
  done
done
med() {
  awk -v k="$1" '$1 == k {print $2}' "$raw" | sort -g |
    awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
for kind in cpp py; do
  n=$(med "$kind.new") o=$(med "$kind.base")
  echo "BENCH train_vs.$kind.new.images_per_s $n images/s"
  echo "BENCH train_vs.$kind.base.images_per_s $o images/s"
  echo "BENCH train_vs.$kind.new_over_base $(awk -v a="$n" -v b="$o" 'BEGIN {printf "%.3f", a / b}') x"
done

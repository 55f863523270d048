#!/usr/bin/env bash
# Training throughput of train_mnist's model at batch 128 on this machine:
# one worker with 1 and 2 threads, the same model and step in libtorch
# (Debian's libtorch-dev, a --bench dependency), and the total over ranks at
# -np 1 and -np 2 under horovodrun (one thread each). Each figure is the
# median of 3 runs; the -np 1 and -np 2 runs alternate (5 pairs), so a
# machine whose speed drifts over the minutes (a shared VM does) weighs on
# both alike, and the median of the pairs' ratios is printed beside them.
#   BUILD_DIR=build bench/run_train.sh
set -euo pipefail
build=${BUILD_DIR:-build}
run="$build/launcher/horovodrun"
prog="$build/bench/train_bench"
torch="$build/bench/torch_mnist_bench"
for f in "$run" "$prog"; do
  [[ -x $f ]] || { echo "run_train.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
steps=${STEPS:-40}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
# Total images/s of one run: the sum over its ranks.
total() { sed -n 's/^\(\[[0-9]*\]<stdout>:\)\{0,1\}RESULT train [0-9]* //p' | awk '{s += $1} END {printf "%.1f\n", s}'; }
threads() {
  for i in 1 2 3; do "$prog" --threads "$1" --steps "$steps" | total; done | median
}
ranks() { "$run" -np "$1" "$prog" --threads 1 --steps "$steps" | total; }
echo "BENCH train.hvd.images_per_s.t1 $(threads 1) images/s"
echo "BENCH train.hvd.images_per_s.t2 $(threads 2) images/s"
if [[ -x $torch ]]; then
  # The BLAS under libtorch's dense layers (Debian's alternatives pick it).
  blas=$(readlink -f "$(ldd "$torch" | awk '/libblas\.so/ {print $3}')")
  echo "libtorch's BLAS: $blas"
  case $blas in
    *openblas* | *blis* | *mkl* | *atlas*) ;;
    *) echo "run_train.sh: warning: libtorch runs on the reference BLAS, about half its speed; install libopenblas0-openmp (packaging/install-deps.sh --bench) for a fair comparison" >&2 ;;
  esac
  for t in 1 2; do
    v=$(for i in 1 2 3; do "$torch" --threads $t --steps "$steps" | awk '{print $4}'; done | median)
    echo "BENCH train.libtorch.images_per_s.t$t $v images/s"
  done
else
  echo "run_train.sh: no $torch; run packaging/install-deps.sh --bench and reconfigure" >&2
fi
np1=() np2=() ratios=()
for i in 1 2 3 4 5; do
  a=$(ranks 1) b=$(ranks 2)
  np1+=("$a") np2+=("$b")
  ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}')")
done
echo "np2/np1 of each pair: ${ratios[*]}"
echo "BENCH train.hvd.np1.images_per_s $(printf '%s\n' "${np1[@]}" | median) images/s"
echo "BENCH train.hvd.np2.images_per_s $(printf '%s\n' "${np2[@]}" | median) images/s"
echo "BENCH train.hvd.np2_over_np1 $(printf '%s\n' "${ratios[@]}" | median) x"

#!/usr/bin/env bash
# The GPU checks, as one short script for a machine with a GPU:
#   BUILD_DIR=build tests/gpu/run_gpu_checks.sh
# (tests/gpu/run_bundle.sh runs it from a bundle, where the machine lacks
# the project's libraries.) Without a CUDA device every check skips and
# says why.
set -euo pipefail
build=$(cd "${BUILD_DIR:-build}" && pwd)
data=${HVD_MNIST_DATA:-$(cd "$(dirname "$0")/../.." && pwd)/examples/mnist/data}
export HVD_MNIST_DATA=$data
if [[ ! -x $build/tests/gpu/gpu_test ]]; then
  echo "run_gpu_checks.sh: $build/tests/gpu/gpu_test is missing (the build found no CUDA toolkit or NCCL)" >&2
  exit 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L || echo "run_gpu_checks.sh: nvidia-smi not found"
"$build/tests/gpu/gpu_test"
[[ -x $build/tests/gpu/mnist_gpu_test ]] || exit 0
"$build/tests/gpu/mnist_gpu_test"
if ! command -v nvidia-smi >/dev/null; then
  echo "run_gpu_checks.sh: no GPU, so no training on one"
  exit 0
fi
# The demo on the GPU, both ranks on GPU 0 when there is one: it must
# learn, and the ranks must stay identical.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
train() {
  local np=$1 && shift
  local start=$SECONDS
  (cd "$work" && "$build/launcher/horovodrun" -np "$np" \
    "$build/examples/mnist/train_mnist" --device gpu --data-dir "$data" "$@") 2>&1 |
    tee "$work/log" | grep -E "cuDNN|Test accuracy|differ|rror" || true
  echo "train_mnist -np $np $*: $((SECONDS - start)) s"
  local acc
  acc=$(sed -n 's/^\[0\]<stdout>:Test accuracy: //p' "$work/log")
  if [[ -z $acc ]] || grep -q "differ" "$work/log" ||
    ! awk -v a="$acc" -v min="$MIN" 'BEGIN {exit !(a >= min)}'; then
    echo "run_gpu_checks.sh: FAILED: train_mnist -np $np $* (accuracy '${acc}', bound $MIN)" >&2
    tail -20 "$work/log" >&2
    exit 1
  fi
}
MIN=0.85 train 1 --mode basic --epochs 1
MIN=0.96 train 2 --mode basic
MIN=0.975 train 2
echo "run_gpu_checks.sh: all GPU checks passed"

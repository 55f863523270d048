#!/usr/bin/env bash
# The GPU checks, as one short script for a machine with a GPU:
#   BUILD_DIR=build tests/gpu/run_gpu_checks.sh
# Without a CUDA device every check skips and says why.
set -euo pipefail
build=${BUILD_DIR:-build}
if [[ ! -x $build/tests/gpu/gpu_test ]]; then
  echo "run_gpu_checks.sh: $build/tests/gpu/gpu_test is missing (the build found no CUDA toolkit or NCCL)" >&2
  exit 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L || echo "run_gpu_checks.sh: nvidia-smi not found"
"$build/tests/gpu/gpu_test"
if [[ -x $build/tests/gpu/mnist_gpu_test ]]; then
  "$build/tests/gpu/mnist_gpu_test"
  # The demo on the GPU: a short run must learn.
  "$build/launcher/horovodrun" -np 1 "$build/examples/mnist/train_mnist" \
    --device gpu --mode basic --epochs 1 --checkpoint-dir "${TMPDIR:-/tmp}"
fi

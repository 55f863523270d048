#!/usr/bin/env bash
# examples/pytorch/pytorch_synthetic_benchmark.py under horovodrun -np 2, as
# Horovod's users run it (a torchvision ResNet, its flags), small enough
# for a CPU: plain, with --fp16-allreduce and with --use-adasum.
#   run_synthetic.sh BUILD_DIR PYTHON SOURCE_DIR
set -euo pipefail
build=$1 python=$2 src=$3
source "$(dirname "$0")/skip_unless_ready.sh"
skip_unless_ready "$build" "$python" torch numpy torchvision
unset PYTHONPATH  # horovodrun hands its own package to the workers
export PYTHONDONTWRITEBYTECODE=1
fail() { echo "run_synthetic.sh: $*" >&2; exit 1; }
for extra in "" --fp16-allreduce --use-adasum; do
  out=$("$build/launcher/horovodrun" -np 2 "$python" \
    "$src/examples/pytorch/pytorch_synthetic_benchmark.py" --model resnet18 \
    --batch-size 2 --image-size 64 --num-warmup-batches 1 \
    --num-batches-per-iter 1 --num-iters 2 $extra |
    sed 's/^\[[0-9]*\]<stdout>://')  # rank 0 prints; its lines' prefix off
  echo "$out"
  grep -q "Number of CPUs: 2" <<<"$out" || fail "$extra: not 2 ranks"
  grep -q "^Iter #1: " <<<"$out" || fail "$extra: no second iteration"
  grep -Eq "^Total img/sec on 2 CPU\(s\): [0-9.]+ \+-" <<<"$out" ||
    fail "$extra: no total"
done
echo "synthetic: ok"

#!/usr/bin/env bash
# examples/pytorch/pytorch_mnist.py under horovodrun -np 2 on a slice of
# the bundled digits: it learns, checkpoints on rank 0, resumes from the
# newest checkpoint, and ends with the same weights on every rank; with
# --use-adasum too.
#   run_example.sh BUILD_DIR PYTHON SOURCE_DIR
set -euo pipefail
build=$1 python=$2 src=$3
source "$(dirname "$0")/skip_unless_ready.sh"
skip_unless_ready "$build" "$python" torch numpy
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# No PYTHONPATH: horovodrun hands its own package to Python workers, so
# the script runs as it would under Horovod's horovodrun.
unset PYTHONPATH
export PYTHONDONTWRITEBYTECODE=1
run() {
  "$build/launcher/horovodrun" -np 2 "$python" \
    "$src/examples/pytorch/pytorch_mnist.py" --checkpoint-dir "$dir" \
    --train-limit 2048 --test-limit 512 --batch-size 32 --log-interval 1000 "$@"
}
fail() { echo "run_example.sh: $*" >&2; exit 1; }

out=$(run --epochs 2)
echo "$out"
grep -q "weights identical on every rank" <<<"$out" || fail "weights differ"
acc=$(sed -n 's/.*epoch 2: .*Accuracy: \([0-9.]*\)%.*/\1/p' <<<"$out")
[[ -n $acc ]] || fail "no test accuracy for epoch 2"
awk -v a="$acc" 'BEGIN {exit !(a > 70)}' || fail "accuracy $acc% after 2 epochs"
[[ -f $dir/checkpoint-1.pt && -f $dir/checkpoint-2.pt ]] || fail "no checkpoints"

out=$(run --epochs 3)
echo "$out"
grep -q "resumed from checkpoint-2.pt" <<<"$out" || fail "did not resume"
grep -q "epoch 3:" <<<"$out" || fail "no third epoch"
! grep -q "epoch 1:" <<<"$out" || fail "trained epoch 1 again"
grep -q "weights identical on every rank" <<<"$out" || fail "weights differ"

# Horovod's --use-adasum: the ranks' steps combine by Adasum, and it
# learns as well.
out=$(run --epochs 1 --use-adasum --no-checkpoint)
echo "$out"
grep -q "weights identical on every rank" <<<"$out" || fail "adasum: weights differ"
acc=$(sed -n 's/.*epoch 1: .*Accuracy: \([0-9.]*\)%.*/\1/p' <<<"$out")
[[ -n $acc ]] || fail "adasum: no test accuracy"
awk -v a="$acc" 'BEGIN {exit !(a > 70)}' || fail "adasum: accuracy $acc% after 1 epoch"
echo "example: ok"

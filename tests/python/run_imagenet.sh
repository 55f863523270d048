#!/usr/bin/env bash
# examples/pytorch/pytorch_imagenet_resnet50.py under horovodrun -np 2, with
# Horovod's flags, on the bundled digits written as an image folder tree
# (a ResNet-18 on 32-pixel crops, small enough for a CPU): averaged
# gradients, then Adasum with fp16 compression and two batches per
# allreduce; each learns, and the first run resumes from its checkpoint.
#   run_imagenet.sh BUILD_DIR PYTHON SOURCE_DIR
set -euo pipefail
build=$1 python=$2 src=$3
source "$(dirname "$0")/skip_unless_ready.sh"
skip_unless_ready "$build" "$python" torch numpy torchvision PIL
unset PYTHONPATH  # horovodrun hands its own package to the workers
export PYTHONDONTWRITEBYTECODE=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "run_imagenet.sh: $*" >&2; exit 1; }

"$python" "$src/examples/pytorch/digits_to_image_folder.py" --out "$dir" \
  --train 2048 --val 512
[[ -d $dir/train/7 && -d $dir/val/7 ]] || fail "no image folders"

run() {
  local name=$1
  shift
  "$build/launcher/horovodrun" -np 2 "$python" \
    "$src/examples/pytorch/pytorch_imagenet_resnet50.py" \
    --train-dir "$dir/train" --val-dir "$dir/val" --model resnet18 \
    --image-size 32 --batch-size 32 --warmup-epochs 1 \
    --log-dir "$dir/logs-$name" \
    --checkpoint-format "$dir/$name-{epoch}.pth.tar" "$@" |
    sed 's/^\[[0-9]*\]<stdout>://'
}
# Learning: the best validation accuracy over the epochs, well above the
# 10% of guessing.
learns() {
  local out=$1 what=$2 best
  best=$(sed -n 's/^Validate Epoch #[0-9]*: .*accuracy \([0-9.]*\)%.*/\1/p' \
    <<<"$out" | sort -g | tail -1)
  [[ -n $best ]] || fail "$what: no validation accuracy"
  awk -v a="$best" 'BEGIN {exit !(a > 35)}' ||
    fail "$what: best validation accuracy $best%"
}

out=$(run plain --epochs 3 --base-lr 0.005 2>&1) || fail "averaged: $out"
echo "$out"
learns "$out" "averaged"
[[ -f $dir/plain-3.pth.tar ]] || fail "no checkpoint after epoch 3"
# Scalars go by epoch index, from 0, as in Horovod's example.
grep -q "^2,val/accuracy," "$dir/logs-plain/scalars.csv" ||
  fail "no scalars logged"

out=$(run plain --epochs 4 --base-lr 0.005 2>&1) || fail "resumed: $out"
echo "$out"
grep -q "resumed after epoch 3" <<<"$out" || fail "did not resume"
grep -q "^Train Epoch #4:" <<<"$out" || fail "no fourth epoch"
! grep -q "^Train Epoch #1:" <<<"$out" || fail "trained epoch 1 again"

out=$(run adasum --epochs 3 --base-lr 0.01 --use-adasum --fp16-allreduce \
  --batches-per-allreduce 2 2>&1) || fail "adasum: $out"
echo "$out"
learns "$out" "--use-adasum --fp16-allreduce"
echo "imagenet: ok"

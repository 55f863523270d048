#!/usr/bin/env bash
# The Python API against the C++ API, interleaved in one run, each figure
# the median over RUNS runs (3 by default):
#   - allreduce of 4 B and 4 MiB at -np 2 (horovod.torch's allreduce_ vs
#     allreduce_bench's allreduce_async + wait, both fp32, named, in place);
#     the Python side on torch's own tensors, and on tensors over malloc'd
#     memory like the C++ side's (.malloc), which compares hvd alone;
#   - the same 4 B allreduce at -np 1, where no peer is waited for, so the
#     difference is the Python layer's own cost per call;
#   - training throughput at -np 2: examples/pytorch/pytorch_mnist.py
#     (torch's CPU kernels) and train_bench (train_mnist's model on
#     oneDNN), images/s summed over ranks.
#   BUILD_DIR=build bench/run_python.sh
set -euo pipefail
build=${BUILD_DIR:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
run="$build/launcher/horovodrun"
cpp="$build/bench/allreduce_bench"
train="$build/bench/train_bench"
python=${HVD_PYTHON:-/usr/bin/python3}
for f in "$run" "$cpp" "$train"; do
  [[ -x $f ]] || { echo "run_python.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
if ! compgen -G "$build/python/hvd/_core*.so" >/dev/null ||
   ! "$python" -c "import torch" 2>/dev/null; then
  echo "run_python.sh: needs $python with torch and the built extension (packaging/install-deps.sh, then build)" >&2
  exit 2
fi
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
runs=${RUNS:-3}
steps=${STEPS:-30}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
rank0() { sed -n 's/^\[0\]<stdout>://p'; }
images() { sed -n 's/^\[[0-9]*\]<stdout>://p' | awk '$1 == "RESULT" {s += $NF} END {printf "%.1f\n", s}'; }
for ((i = 0; i < runs; ++i)); do
  "$run" -np 2 "$cpp" --mode engine 4 4194304 | rank0 |
    awk '$2 == "engine" && $3 != "fusion" {print "cpp.np2", $3, $4}' >> "$raw"
  "$run" -np 2 "$python" "$src/bench/py_allreduce_bench.py" 4 4194304 | rank0 |
    awk '$2 == "py" {print "py.np2", $3, $4}' >> "$raw"
  "$run" -np 2 "$python" "$src/bench/py_allreduce_bench.py" --malloc 4194304 |
    rank0 | awk '$2 == "py_malloc" {print "py_malloc.np2", $3, $4}' >> "$raw"
  "$run" -np 1 "$cpp" --mode engine 4 | rank0 |
    awk '$2 == "engine" && $3 != "fusion" {print "cpp.np1", $3, $4}' >> "$raw"
  "$run" -np 1 "$python" "$src/bench/py_allreduce_bench.py" 4 | rank0 |
    awk '$2 == "py" {print "py.np1", $3, $4}' >> "$raw"
  echo "train.py 0 $("$run" -np 2 "$python" "$src/examples/pytorch/pytorch_mnist.py" \
      --no-checkpoint --batch-size 128 --log-interval 100000 --steps "$steps" | images)" >> "$raw"
  echo "train.cpp 0 $("$run" -np 2 "$train" --threads 1 --steps "$steps" | images)" >> "$raw"
done
med() {  # the median of the values of key $1, size $2
  awk -v k="$1" -v s="$2" '$1 == k && $2 == s {print $3}' "$raw" | sort -g |
    awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
us() { awk -v t="$1" 'BEGIN {printf "%.2f", t * 1e6}'; }
busbw() { awk -v t="$1" 'BEGIN {printf "%.3f", 4194304 / t * 2 * (2 - 1) / 2 / 1e9}'; }
cpp4=$(med cpp.np2 4) py4=$(med py.np2 4)
cppm=$(med cpp.np2 4194304) pym=$(med py.np2 4194304)
pymm=$(med py_malloc.np2 4194304)
cpp1=$(med cpp.np1 4) py1=$(med py.np1 4)
echo "BENCH cpp.allreduce.latency.4B $(us "$cpp4") us"
echo "BENCH py.allreduce.latency.4B $(us "$py4") us"
echo "BENCH cpp.allreduce.busbw.4MiB $(busbw "$cppm") GB/s"
echo "BENCH py.allreduce.busbw.4MiB $(busbw "$pym") GB/s"
echo "BENCH py.allreduce.busbw.4MiB.malloc $(busbw "$pymm") GB/s"
echo "BENCH py.allreduce.busbw_over_cpp.4MiB $(awk -v a="$cppm" -v b="$pym" 'BEGIN {printf "%.3f", a / b}') x"
echo "BENCH py.allreduce.busbw_over_cpp.4MiB.malloc $(awk -v a="$cppm" -v b="$pymm" 'BEGIN {printf "%.3f", a / b}') x"
echo "BENCH cpp.allreduce.latency.4B.np1 $(us "$cpp1") us"
echo "BENCH py.allreduce.latency.4B.np1 $(us "$py1") us"
echo "BENCH py.allreduce.overhead.4B $(awk -v a="$cpp1" -v b="$py1" 'BEGIN {printf "%.2f", (b - a) * 1e6}') us"
echo "BENCH py.train.images_per_s $(med train.py 0) images/s"
echo "BENCH cpp.train.images_per_s $(med train.cpp 0) images/s"

#!/usr/bin/env bash
# Runs the GPU checks from a bundle of tests/gpu/make_bundle.sh, on a GPU
# machine without the project's Debian libraries, from the repository's
# root (the MNIST digits are read from examples/mnist/data):
#   tests/gpu/run_bundle.sh .gpu-bundle/bundle.tar.xz
# CUDA's libraries come from the toolkit in /usr/local/cuda or from the
# nvidia-* Python wheels in site-packages, whichever the machine has.
set -euo pipefail
bundle=${1:?usage: run_bundle.sh BUNDLE.tar.xz}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf "$bundle"
dirs="$work/build/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [[ -d $d ]] && dirs+=":$d"
done
for s in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  [[ -d $s/nvidia ]] || continue
  while read -r d; do dirs+=":$d"; done < <(find "$s/nvidia" -name 'lib*.so*' -printf '%h\n' | sort -u)
done
export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bins=("$work"/build/tests/gpu/* "$work/build/examples/mnist/train_mnist" "$work/build/launcher/horovodrun")
# The build machine's C++ runtime, only where this machine's is older.
if ldd "${bins[@]}" 2>&1 | grep -q "GLIBCXX.*not found\|GCC_.*not found"; then
  export LD_LIBRARY_PATH="$work/build/lib/fallback:$LD_LIBRARY_PATH"
fi
if ldd "${bins[@]}" 2>&1 | grep "not found"; then
  echo "run_bundle.sh: the libraries above are missing on this machine" >&2
  exit 2
fi
BUILD_DIR="$work/build" HVD_MNIST_DATA="$root/examples/mnist/data" \
  "$root/tests/gpu/run_gpu_checks.sh"

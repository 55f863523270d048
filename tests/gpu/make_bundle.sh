#!/usr/bin/env bash
# Packs the GPU checks for a GPU machine that has CUDA but none of the
# project's Debian libraries, and no network to fetch them: gpu_test,
# mnist_gpu_test, train_mnist and horovodrun as built here, with every
# shared library they load except glibc's and CUDA's own (cudart, cuBLAS,
# cuDNN, NCCL), which that machine provides. The C++ runtime goes in
# lib/fallback, used there only where the machine's own is older.
#   BUILD_DIR=build tests/gpu/make_bundle.sh [OUT.tar.xz]
# (default .gpu-bundle/bundle.tar.xz, which git ignores); there:
#   tests/gpu/run_bundle.sh .gpu-bundle/bundle.tar.xz
set -euo pipefail
build=${BUILD_DIR:-build}
out=${1:-.gpu-bundle/bundle.tar.xz}
bins=(tests/gpu/gpu_test tests/gpu/mnist_gpu_test examples/mnist/train_mnist
  launcher/horovodrun)
for b in "${bins[@]}"; do
  [[ -x $build/$b ]] || {
    echo "make_bundle.sh: $build/$b is missing; configure where CUDA, cuDNN and NCCL are installed and build first" >&2
    exit 2
  }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build/lib/fallback"
for b in "${bins[@]}"; do
  mkdir -p "$stage/build/$(dirname "$b")"
  cp "$build/$b" "$stage/build/$b"
done
# ldd's "name => path (address)" lines; names resolved by path.
ldd "${bins[@]/#/$build/}" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
  sort -u | while read -r name path; do
    case $name in
      libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | \
        libresolv.so.* | ld-linux*) ;;  # glibc: the machine's own
      libcuda.so.* | libcudart.so.* | libcublas*.so.* | libcudnn*.so.* | \
        libnccl.so.*) ;;  # CUDA: the machine's own
      libstdc++.so.* | libgcc_s.so.*) cp -L "$path" "$stage/build/lib/fallback/$name" ;;
      *) cp -L "$path" "$stage/build/lib/$name" ;;
    esac
  done
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cJf "$out" build
echo "make_bundle.sh: $out, $(du -h "$out" | cut -f1) ($(ls "$stage/build/lib" | wc -l) libraries)"

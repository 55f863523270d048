#!/usr/bin/env bash
# Configure never fails for an optional part: the tree is configured with
# each optional part forced missing (CMake's CMAKE_DISABLE_FIND_PACKAGE_<P>,
# which the parts found without find_package honour too), each must
# configure and say, in one line, that the part is off and why; then the
# tree with every part missing at once builds the core and the demo.
#   optional_parts.sh SOURCE_DIR WORK_DIR CXX_COMPILER
set -euo pipefail
src=$1 work=$2 cxx=$3
rm -rf "$work" && mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
failures=0

# A mpicc whose headers are not installed (openmpi-bin without
# libopenmpi-dev): FindMPI's try-compile would be a hard error.
cat >"$work/mpicc" <<'SH'
#!/bin/sh
echo "mpicc: cannot find mpi.h (headers not installed)" >&2
exit 1
SH
chmod +x "$work/mpicc"

# name | cmake switches | the line it must print (an ERE)
cases=(
  "mpi-headers|-DHVD_MPICC=$work/mpicc|hvd: MPI benchmarks off \(.*cannot find mpi\.h; install libopenmpi-dev\)"
  "mpi|-DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON|hvd: MPI benchmarks off \(.+\)"
  "libtorch|-DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON|hvd: libtorch benchmark off \(no libtorch found; install libtorch-dev\)"
  "cuda|-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON|hvd: NCCL backend off \(no CUDA toolkit found; install .+\)"
  "cuda-mnist|-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON|hvd: train_mnist GPU path off \(no CUDA toolkit found; install .+\)"
  "nccl|-DCMAKE_DISABLE_FIND_PACKAGE_NCCL=ON|hvd: NCCL backend off \(no (NCCL beside the|CUDA) .+; install .+\)"
  "cudnn|-DCMAKE_DISABLE_FIND_PACKAGE_CUDNN=ON|hvd: train_mnist GPU path off \(no (cuDNN beside the|CUDA) .+; install .+\)"
  "pybind11|-DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON|hvd: Python package off \(no pybind11 found; install pybind11-dev\)"
  "python-dev|-DCMAKE_DISABLE_FIND_PACKAGE_Python3=ON|hvd: Python package off \(no Python 3 with its headers found; install python3-dev\)"
  "clang|-DHVD_FUZZ=ON|hvd: libFuzzer targets off \(HVD_FUZZ needs clang, .+; install clang libclang-rt-14-dev\)"
)

all_off=()
for c in "${cases[@]}"; do
  IFS='|' read -r name switch line <<<"$c"
  all_off+=("$switch")
  dir=$work/$name
  if ! cmake -S "$src" -B "$dir" -DCMAKE_CXX_COMPILER="$cxx" "$switch" \
      >"$dir.log" 2>&1; then
    echo "FAIL $name: configure failed with $switch:"
    tail -20 "$dir.log"
    failures=$((failures + 1))
  elif ! grep -Eq -- "^-- $line\$" "$dir.log"; then
    echo "FAIL $name: no line matching '$line'; the hvd: lines were:"
    grep '^-- hvd:' "$dir.log" || true
    failures=$((failures + 1))
  else
    echo "ok   $name: $(grep -Eo -- "$line" "$dir.log")"
  fi
  rm -rf "$dir"
done

# Every part missing at once: it configures, and the core builds.
dir=$work/none
mapfile -t unique < <(printf '%s\n' "${all_off[@]}" | sort -u)
if ! cmake -S "$src" -B "$dir" -DCMAKE_CXX_COMPILER="$cxx" "${unique[@]}" \
    >"$dir.log" 2>&1; then
  echo "FAIL none: configure failed with every optional part missing:"
  tail -20 "$dir.log"
  exit 1
fi
off=$(grep -c '^-- hvd: .* off (' "$dir.log" || true)
on=$(grep '^-- hvd: .* on (' "$dir.log" || true)
if [[ -n $on ]]; then
  echo "FAIL none: parts still on with everything missing:"
  echo "$on"
  failures=$((failures + 1))
fi
echo "ok   none: configured with $off parts off"
if ! cmake --build "$dir" -j"${HVD_CONFIGURE_TEST_JOBS:-2}" \
    --target horovodrun hvd_hello train_mnist >"$dir.build.log" 2>&1; then
  echo "FAIL none: the core did not build with every optional part missing:"
  grep -E 'error|Error' "$dir.build.log" | head -20
  exit 1
fi
echo "ok   none: horovodrun, hvd_hello and train_mnist built"
# And they work: two ranks allreduce.
if ! out=$("$dir/launcher/horovodrun" -np 2 "$dir/examples/hello/hvd_hello" 2>&1); then
  echo "FAIL none: the core's hvd_hello job failed:"
  echo "$out"
  exit 1
fi
echo "ok   none: a two-rank hvd_hello job ran"
exit $((failures > 0))

#!/usr/bin/env bash
# Installs every build and test dependency of hvd from Debian 12's archive.
# Idempotent and non-interactive; run as root (or with sudo available).
#   packaging/install-deps.sh          build + test dependencies
#   packaging/install-deps.sh --bench  also what only the benchmarks need
set -euo pipefail

bench=0
for arg in "$@"; do
  case "$arg" in
    --bench) bench=1 ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg' (use --bench or --help)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake pkg-config git ca-certificates
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libgloo-dev
  libssh-dev
  libboost-dev libboost-system-dev
  nlohmann-json3-dev
  libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers  # dnnl's CMake config finds OpenCL
  libeigen3-dev
  zlib1g-dev
  dataset-fashion-mnist  # train_mnist reads it unchanged (a test checks)
  # The Python package (hvd.torch / horovod.torch) and its suites, on
  # Debian's interpreter /usr/bin/python3 and its torch.
  python3-dev pybind11-dev python3-torch python3-numpy python3-pytest
  python3-matplotlib  # bench/plot_timeline.py
  openssh-server openssh-client openssl iproute2 procps psmisc
  # A real Slurm for the launcher's tests (they start their own daemons).
  slurmctld slurmd slurm-client munge
  openmpi-bin  # horovodrun --mpi starts workers with mpirun
  prometheus  # the metrics tests: promtool, and a server scraping a job
  lintian  # the package tests check the .debs
  systemd
  hyperfine time
)
if [[ $bench -eq 1 ]]; then
  # OpenBLAS for libtorch: without it Debian's libtorch runs its dense
  # layers on the reference BLAS, at half its speed, and run_train.sh's
  # comparison would flatter hvd. The OpenMP build follows
  # torch::set_num_threads.
  packages+=(libopenmpi-dev libtorch-dev libopenblas0-openmp)
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "install-deps.sh: run as root or install sudo" >&2; exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get update -qq; then
  echo "install-deps.sh: 'apt-get update' failed; check the network and /etc/apt/sources.list" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  if ! apt-cache show "$p" >/dev/null 2>&1; then missing+=("$p"); fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "install-deps.sh: not in the configured apt sources: ${missing[*]} (Debian 12 'bookworm' main is needed)" >&2
  exit 1
fi

if ! $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null; then
  echo "install-deps.sh: apt-get install failed for: ${packages[*]}" >&2
  exit 1
fi
echo "install-deps.sh: ${#packages[@]} packages present"

#!/usr/bin/env bash
# Installs hvd's dependencies from Debian 12's archive, and says what it
# is doing while it does. Idempotent and non-interactive; run as root (or
# with sudo available).
#   packaging/install-deps.sh          build and test dependencies
#   packaging/install-deps.sh --build  only what building needs (the demo)
#   packaging/install-deps.sh --bench  also what only the benchmarks need
set -euo pipefail

tests=1 bench=0
for arg in "$@"; do
  case "$arg" in
    --build) tests=0 ;;
    --bench) bench=1 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg' (use --build, --bench or --help)" >&2; exit 2 ;;
  esac
done

# What `cmake -S . -B build && cmake --build build` needs for every target:
# the libraries, the demo, the Python extension and the test programs.
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
  libssl-dev  # SHA-256 of job tokens (the rendezvous keeps no token in clear)
  # The Python extension (hvd._core) for Debian's interpreter.
  python3-dev pybind11-dev
)
if [[ $tests -eq 1 ]]; then
  # What the tests run against (each skips, saying why, without its part).
  packages+=(
    dataset-fashion-mnist  # train_mnist reads it unchanged (a test checks)
    # The Python package's suites and examples: Debian's torch on
    # /usr/bin/python3.
    python3-torch python3-numpy python3-pytest
    python3-cloudpickle  # horovod.run ships the function to the ranks
    python3-torchvision  # the synthetic benchmark's models
    python3-matplotlib  # bench/plot_timeline.py
    openssh-server openssh-client openssl iproute2 procps psmisc
    # A real Slurm for the launcher's tests (they start their own daemons).
    slurmctld slurmd slurm-client munge
    openmpi-bin  # horovodrun --mpi starts workers with mpirun
    prometheus  # the metrics tests: promtool, and a server scraping a job
    etcd-server etcd-client  # hvd-rendezvousd --store etcd:// (its tests start their own)
    lintian  # the package tests check the .debs
    podman runc netavark mmdebstrap  # the container images and jobs across containers
    libjs-chart.js chromium  # the live page's charts, loaded by a real browser
    systemd
    hyperfine time
  )
fi
if [[ $bench -eq 1 ]]; then
  # OpenBLAS for libtorch: without it Debian's libtorch runs its dense
  # layers on the reference BLAS, at half its speed, and run_train.sh's
  # comparison would flatter hvd. The OpenMP build follows
  # torch::set_num_threads. OpenMPI's headers for the MPI contenders.
  packages+=(libopenmpi-dev openmpi-bin libtorch-dev libopenblas0-openmp)
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "install-deps.sh: run as root or install sudo" >&2; exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps.sh: reading the package lists (apt-get update)"
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

# apt's machine-readable status (APT::Status-Fd) shown as a line every 5 %
# or 10 s, so that a first install of a few minutes is never silent.
progress() {
  local kind pkg pct desc shown_kind="" shown_pct=-100 shown_at=0
  while IFS=: read -r kind pkg pct desc; do
    case $kind in
      dlstatus) kind="downloading" ;;
      pmstatus) kind="installing" ;;
      *) continue ;;
    esac
    pct=${pct%%.*}
    if [[ $kind != "$shown_kind" ]] || ((pct >= shown_pct + 5)) ||
       ((SECONDS >= shown_at + 10)); then
      echo "install-deps.sh: $kind $pct% ($desc)"
      shown_kind=$kind shown_pct=$pct shown_at=$SECONDS
    fi
  done
}

echo "install-deps.sh: installing ${#packages[@]} packages and what they need"
status=0
{ $SUDO apt-get install -y -qq --no-install-recommends \
    -o APT::Status-Fd=3 "${packages[@]}" 3>&1 >/dev/null | progress; } ||
  status=$?
if [[ $status -ne 0 ]]; then
  echo "install-deps.sh: apt-get install failed for: ${packages[*]}" >&2
  exit 1
fi
echo "install-deps.sh: ${#packages[@]} packages present"

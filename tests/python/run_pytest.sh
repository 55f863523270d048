#!/usr/bin/env bash
# Runs one pytest file on every rank of a horovodrun job.
#   run_pytest.sh BUILD_DIR PYTHON NP FILE
# Exits 77 (ctest: skipped) with the reason when the interpreter has no
# torch or pytest.
set -euo pipefail
build=$1 python=$2 np=$3 file=$4
if ! "$python" -c "import torch, pytest, numpy" 2>/dev/null; then
  echo "skipped: $python cannot import torch, pytest and numpy" \
       "(install python3-torch python3-pytest python3-numpy)"
  exit 77
fi
if ! compgen -G "$build/python/hvd/_core*.so" >/dev/null; then
  echo "skipped: the extension hvd._core was not built" \
       "(install python3-dev and pybind11-dev, then re-run cmake)"
  exit 77
fi
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
# -x: a rank stops at its first failure, and horovodrun then ends the job
# with that status, instead of the other ranks waiting for collectives it
# will never make.
exec "$build/launcher/horovodrun" -np "$np" "$python" -m pytest -x -q \
  -p no:cacheprovider "$file"

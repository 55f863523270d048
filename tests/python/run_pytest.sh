#!/usr/bin/env bash
# Runs one pytest file on every rank of a horovodrun job.
#   run_pytest.sh BUILD_DIR PYTHON NP FILE
# Exits 77 (ctest: skipped) with the reason when the interpreter has no
# torch or pytest.
set -euo pipefail
build=$1 python=$2 np=$3 file=$4
source "$(dirname "$0")/skip_unless_ready.sh"
skip_unless_ready "$build" "$python" torch pytest numpy
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
# -x: a rank stops at its first failure, and horovodrun then ends the job
# with that status, instead of the other ranks waiting for collectives it
# will never make.
exec "$build/launcher/horovodrun" -np "$np" "$python" -m pytest -x -q \
  -p no:cacheprovider "$file"

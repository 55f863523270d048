#!/usr/bin/env bash
# Runs one pytest file in a single process (no horovodrun around it): for
# the APIs that start their own jobs (horovod.run).
#   run_single.sh BUILD_DIR PYTHON FILE
# Exits 77 (ctest: skipped) with the reason when the interpreter lacks a
# module the file needs.
set -euo pipefail
build=$1 python=$2 file=$3
source "$(dirname "$0")/skip_unless_ready.sh"
skip_unless_ready "$build" "$python" torch pytest cloudpickle
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
exec "$python" -m pytest -x -q -p no:cacheprovider "$file"

#!/usr/bin/env bash
# `cmake --install` puts the Python package under PREFIX/lib/python3/
# dist-packages; from there (and not from the build tree) a two-rank job
# imports horovod.torch and allreduces.
#   run_installed.sh BUILD_DIR PYTHON
set -euo pipefail
build=$1 python=$2
source "$(dirname "$0")/skip_unless_ready.sh"
skip_unless_ready "$build" "$python" torch
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
site="$prefix/lib/python3/dist-packages"
[[ -f $site/horovod/__init__.py ]] || { echo "no horovod package under $site" >&2; exit 1; }
cat > "$prefix/job.py" <<'PY'
import horovod.torch as hvd
import torch
hvd.init()
assert hvd.__file__.startswith(__import__("os").environ["SITE"]), hvd.__file__
print("sum", hvd.allreduce(torch.ones(1), op=hvd.Sum).item())
hvd.shutdown()
PY
out=$(cd "$prefix" && SITE="$site" PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 \
      "$build/launcher/horovodrun" -np 2 "$python" job.py)
echo "$out"
[[ $(grep -c "sum 2.0" <<<"$out") -eq 2 ]] || { echo "the installed package did not run" >&2; exit 1; }
echo "installed: ok"

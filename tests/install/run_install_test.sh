#!/usr/bin/env bash
# `cmake --install` lays out a tree that works on its own: a program built
# against it with find_package(hvd) (and one with pkg-config) runs under
# the installed horovodrun, which finds its helpers, and so do the
# installed train_mnist (its digits found beside it) and a Python job (the
# installed package found with no PYTHONPATH). The man pages render without
# warnings, and the tree still works once moved.
#   run_install_test.sh BUILD_DIR SOURCE_DIR PYTHON
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) python=${3:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "run_install_test.sh: FAILED: $*" >&2; exit 1; }

prefix=$work/first
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/horovodrun bin/hvd-rendezvousd bin/train_mnist \
  libexec/hvd/hvd-remote-exec libexec/hvd/hvd-ssh-exec include/hvd/hvd.h \
  lib/libhvd.so lib/cmake/hvd/hvdConfig.cmake lib/pkgconfig/hvd.pc \
  lib/systemd/system/hvd-rendezvousd.service \
  share/man/man1/horovodrun.1.gz share/man/man1/hvd-rendezvousd.1.gz \
  share/man/man1/train_mnist.1.gz share/hvd/mnist/t10k-labels-idx1-ubyte.gz; do
  [[ -e $prefix/$f ]] || fail "cmake --install did not install $f"
done
# The installed programs are the project's own: no path into the build
# tree is left in them.
if grep -l "$build" "$prefix"/bin/* "$prefix"/libexec/hvd/* "$prefix"/lib/libhvd.so; then
  fail "installed files name the build tree"
fi

for page in "$prefix"/share/man/man1/*.1.gz; do
  warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
  [[ -z $warnings ]] || fail "man $page: $warnings"
done

# Move the tree: everything below must work from where it lands.
mv "$prefix" "$work/moved"
prefix=$work/moved

cmake -S "$src/tests/install/consumer" -B "$work/consumer" \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
# No standard named here either: hvd.pc's flags carry it.
g++ "$src/tests/install/consumer/consumer.cc" -o "$work/consumer_pc" \
  $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs hvd) \
  -Wl,-rpath,"$prefix/lib"

run() {  # expected-count pattern command...
  local want=$1 pattern=$2 && shift 2
  local out
  out=$(cd "$work" && env -u PYTHONPATH "$prefix/bin/horovodrun" "$@" 2>&1) ||
    fail "horovodrun $* exited $?: $out"
  [[ $(grep -c -- "$pattern" <<<"$out") -eq $want ]] ||
    fail "horovodrun $*: expected $want lines '$pattern' in: $out"
  echo "ok: horovodrun $*"
}
run 2 "consumer rank [01] of 2: sum 3" -np 2 "$work/consumer/consumer"
run 3 "sum 6" -np 3 "$work/consumer_pc"
run 1 "Test accuracy" -np 2 "$prefix/bin/train_mnist" --mode basic \
  --epochs 1 --train-limit 2000 --test-limit 500
run 1 "digits from $prefix/share/hvd/mnist\$" -np 1 "$prefix/bin/train_mnist" \
  --mode basic --epochs 1 --train-limit 200 --test-limit 100
cat > "$work/job.py" <<'PY'
import os
import horovod.torch as hvd
import torch
hvd.init()
assert hvd.__file__.startswith(os.environ["PREFIX"]), hvd.__file__
print("python sum", hvd.allreduce(torch.ones(1), op=hvd.Sum).item())
hvd.shutdown()
PY
if "$python" -c "import torch" 2>/dev/null; then
  PREFIX=$prefix run 2 "python sum 2.0" -np 2 "$python" "$work/job.py"
else
  echo "skipped the Python job: $python cannot import torch"
fi
"$prefix/bin/horovodrun" -cb | grep -q "Gloo" || fail "horovodrun -cb"
echo "run_install_test.sh: the installed tree works"

#!/usr/bin/env bash
# run_deb_test.sh's part inside the overlay root: install, use, purge.
set -euo pipefail
fail() { echo "deb_inside.sh: FAILED: $*" >&2; exit 1; }
in=/tmp/in
[[ ! -e /usr/bin/horovodrun ]] || fail "hvd is already installed on this root"
# man-db's trigger would index every page of the system; not our concern.
rm -f /var/lib/man-db/auto-update
dpkg -i "$in"/debs/*.deb >"$in/dpkg.log" 2>&1 || fail "dpkg -i: $(cat "$in/dpkg.log")"
for p in hvd libhvd0 libhvd-dev hvd-rendezvousd python3-hvd; do
  [[ $(dpkg-query -W -f '${Status}' "$p") == "install ok installed" ]] ||
    fail "$p is not installed"
done

horovodrun -cb | grep "\[X\] Gloo" >/dev/null || fail "horovodrun -cb"
hvd-rendezvousd --version | grep "^hvd-rendezvousd (hvd) " >/dev/null || fail "hvd-rendezvousd --version"
man -w horovodrun | grep >/dev/null "/usr/share/man/man1/horovodrun.1.gz" || fail "man horovodrun"
systemd-analyze verify /usr/lib/systemd/system/hvd-rendezvousd.service ||
  fail "the unit does not verify"

mkdir -p /tmp/job && cd /tmp/job
out=$(horovodrun -np 2 train_mnist --mode basic --epochs 1 --train-limit 2000 --test-limit 500 2>&1) ||
  fail "train_mnist: $out"
grep -q "digits from /usr/share/hvd/mnist" <<<"$out" || fail "train_mnist's digits: $out"
grep -q "Test accuracy" <<<"$out" || fail "train_mnist: $out"
echo "ok: horovodrun -np 2 train_mnist"

if python3 -c "import torch" 2>/dev/null; then
  cat > job.py <<'PY'
import horovod.torch as hvd
import torch
hvd.init()
assert hvd.__file__.startswith("/usr/lib/python3/dist-packages/"), hvd.__file__
print("python sum", hvd.allreduce(torch.ones(1), op=hvd.Sum).item())
hvd.shutdown()
PY
  out=$(horovodrun -np 2 python3 job.py 2>&1) || fail "python job: $out"
  [[ $(grep -c "python sum 2.0" <<<"$out") -eq 2 ]] || fail "python job: $out"
  echo "ok: horovodrun -np 2 python3 job.py"
fi

cmake -S "$in/consumer" -B /tmp/consumer >/dev/null
cmake --build /tmp/consumer >/dev/null
out=$(horovodrun -np 2 /tmp/consumer/consumer 2>&1) || fail "consumer: $out"
[[ $(grep -c "sum 3" <<<"$out") -eq 2 ]] || fail "consumer: $out"
g++ -std=c++20 "$in/consumer/consumer.cc" -o /tmp/consumer_pc $(pkg-config --cflags --libs hvd)
out=$(horovodrun -np 2 /tmp/consumer_pc 2>&1) || fail "consumer (pkg-config): $out"
[[ $(grep -c "sum 3" <<<"$out") -eq 2 ]] || fail "consumer (pkg-config): $out"
echo "ok: a program built with find_package(hvd), one with pkg-config"

# Purged, the packages leave none of their files behind.
files=$(for d in "$in"/debs/*.deb; do dpkg-deb -c "$d"; done |
  awk '$1 !~ /^d/ {print substr($6, 2)}')
dpkg --purge python3-hvd libhvd-dev hvd-rendezvousd hvd libhvd0 >"$in/dpkg.log" 2>&1 ||
  fail "dpkg --purge: $(cat "$in/dpkg.log")"
for f in $files; do
  [[ ! -e $f && ! -L $f ]] || fail "$f is left after the purge"
done
[[ ! -e /usr/share/hvd && ! -e /usr/libexec/hvd && ! -e /usr/include/hvd ]] ||
  fail "a directory of the packages is left after the purge"
echo "ok: installed, used and purged"

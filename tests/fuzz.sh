#!/usr/bin/env bash
# Fuzzes every reader of outside input with libFuzzer (Debian's clang),
# under AddressSanitizer (leaks included) and UBSan:
#   tests/fuzz.sh SECONDS [TARGET...]
# Each target (tests/fuzz/fuzz_TARGET.cc; all by default) runs SECONDS,
# as many at once as there are cores (FUZZ_JOBS), from its seeds, the
# regressions of
# past findings and the corpus earlier runs grew (build-fuzz/corpus/).
# Exits non-zero on any crash, leak, timeout (10 s for one input) or input
# needing over 2 GiB; the input is kept in build-fuzz/findings/TARGET/ and
# belongs, once fixed, in tests/fuzz/regressions/TARGET/. Prints each
# target's executions per second and coverage as BENCH lines.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ || $1 -lt 1 ]]; then
  echo "fuzz.sh: say how many seconds each target runs: tests/fuzz.sh SECONDS [TARGET...]" >&2
  exit 2
fi
seconds=$1 && shift
all=(hosts remote_protocol command_line config settings idx safetensors rendezvous)
targets=("${@:-${all[@]}}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || {
    echo "fuzz.sh: no target '$t' (targets: ${all[*]})" >&2
    exit 2
  }
done
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is missing: install clang and libclang-rt-14-dev (apt-get)" >&2; exit 2; }

dir=${FUZZ_BUILD_DIR:-$root/build-fuzz}
mkdir -p "$dir"
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DHVD_FUZZ=ON -DHVD_WITH_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="$san -fsanitize=fuzzer-no-link -fno-omit-frame-pointer" \
  -DCMAKE_C_FLAGS="$san -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="$san" >"$dir/configure.log" 2>&1 || {
  cat "$dir/configure.log" >&2
  exit 2
}
if ! grep -q '^-- hvd: libFuzzer targets on' "$dir/configure.log"; then
  grep '^-- hvd: libFuzzer targets' "$dir/configure.log" >&2
  exit 2
fi
cmake --build "$dir" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null

run_one() {  # target; its exit status lands in $dir/$t.rc
  local t=$1
  local corpus=$dir/corpus/$t findings=$dir/findings/$t
  mkdir -p "$corpus" "$findings"
  local regressions=$root/tests/fuzz/regressions/$t
  mkdir -p "$regressions"
  local rc=0
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$dir/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/" \
    "$corpus" "$dir/tests/fuzz/seeds/$t" "$regressions" >"$dir/$t.log" 2>&1 ||
    rc=$?
  echo "$rc" >"$dir/$t.rc"
}

mkdir -p "$dir"
slots=${FUZZ_JOBS:-$(nproc)}
running=0
for t in "${targets[@]}"; do
  rm -f "$dir/$t.rc"
  if ((running >= slots)); then
    wait -n || true
    ((running--))
  fi
  run_one "$t" &
  ((++running))
done
wait
failed=()
for t in "${targets[@]}"; do
  [[ $(cat "$dir/$t.rc" 2>/dev/null) == 0 ]] || failed+=("$t")
done

for t in "${targets[@]}"; do
  log=$dir/$t.log
  execs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  echo "BENCH fuzz.$t.execs_per_s ${execs:-0} execs/s"
  echo "BENCH fuzz.$t.coverage ${cov:-0} edges"
  echo "fuzz.sh: $t: ${runs:-0} inputs, ${ft:-0} features, corpus $(ls "$dir/corpus/$t" | wc -l) files"
done
if [[ ${#failed[@]} -gt 0 ]]; then
  for t in "${failed[@]}"; do
    echo "fuzz.sh: $t FOUND A FAILURE (input in $dir/findings/$t/):" >&2
    grep -E "ERROR|SUMMARY|==[0-9]+==|runtime error|Test unit written" "$dir/$t.log" | head -8 >&2
  done
  exit 1
fi
echo "fuzz.sh: no findings"

#!/usr/bin/env bash
# The unit suites under the sanitizers, in build trees of their own:
#   tests/run_sanitizers.sh asan   # AddressSanitizer + UBSan + leaks: every unit suite
#   tests/run_sanitizers.sh tsan   # ThreadSanitizer: the runtime's suite
#   tests/run_sanitizers.sh        # both
# Slow (each build takes minutes on two cores), so not part of CI. Exits
# non-zero on the first report. TSan's reports with gRPC on the stack are
# suppressed (tests/tsan.supp says why).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)

configure() {  # dir, sanitizer flags
  cmake -S "$root" -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST \
    -DCMAKE_CXX_FLAGS="$2 -fno-omit-frame-pointer" -DCMAKE_C_FLAGS="$2" \
    -DCMAKE_EXE_LINKER_FLAGS="$2" -DCMAKE_SHARED_LINKER_FLAGS="$2" >/dev/null
}

asan() {
  local dir=$root/build-asan
  local suites=(common/common_test rendezvous/rendezvous_test launcher/launcher_test
    runtime/runtime_test mnist/mnist_test)
  configure "$dir" "-fsanitize=address,undefined -fno-sanitize-recover=undefined"
  cmake --build "$dir" -j"$jobs" --target "${suites[@]##*/}" >/dev/null
  for s in "${suites[@]}"; do
    echo "run_sanitizers.sh: asan: $s"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "$dir/tests/$s" --gtest_brief=1
  done
}

tsan() {
  local dir=$root/build-tsan
  configure "$dir" "-fsanitize=thread"
  cmake --build "$dir" -j"$jobs" --target runtime_test >/dev/null
  echo "run_sanitizers.sh: tsan: runtime/runtime_test"
  TSAN_OPTIONS="suppressions=$root/tests/tsan.supp halt_on_error=1" \
    "$dir/tests/runtime/runtime_test" --gtest_brief=1
}

case ${1:-all} in
  asan) asan ;;
  tsan) tsan ;;
  # Not `asan && tsan`: bash ignores `set -e` inside a function called as
  # the left side of &&, so a failing suite would not stop the script.
  all)
    asan
    tsan
    ;;
  *)
    echo "run_sanitizers.sh: say asan, tsan or nothing (both), not '$1'" >&2
    exit 2
    ;;
esac
echo "run_sanitizers.sh: no reports"

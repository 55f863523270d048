#!/usr/bin/env bash
# The suites under the sanitizers, each in a build tree of its own:
#   tests/run_sanitizers.sh asan   # AddressSanitizer + UBSan + leaks: the
#                                  # unit and integration suites (ctest -L asan)
#   tests/run_sanitizers.sh tsan   # ThreadSanitizer: the runtime's suite (-L tsan)
#   tests/run_sanitizers.sh        # both
# A tree is configured with -DHVD_SANITIZE=address|thread, which builds
# everything under the sanitizer and labels the suites meant for it; a
# second run rebuilds only what changed. Exits non-zero on any report.
# TSan's reports with gRPC, Protobuf or Gloo on the stack are suppressed
# (tests/tsan.supp says why).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)

configure() {  # dir, sanitizer
  # Python stays out: an instrumented extension cannot load into Debian's
  # uninstrumented interpreter. Tests are listed when ctest runs, not at
  # build time (a sanitizer build's binaries are slow to start).
  cmake -S "$root" -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHVD_SANITIZE="$2" -DHVD_WITH_CUDA=OFF \
    -DCMAKE_DISABLE_FIND_PACKAGE_Python3=ON \
    -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST >/dev/null
}

asan() {
  local dir=$root/build-asan start=$SECONDS
  configure "$dir" address
  cmake --build "$dir" -j"$jobs" >/dev/null
  echo "run_sanitizers.sh: asan: built in $((SECONDS - start)) s"
  start=$SECONDS
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$dir" -L asan -j2 --output-on-failure
  echo "run_sanitizers.sh: asan: tests ran in $((SECONDS - start)) s"
}

tsan() {
  local dir=$root/build-tsan start=$SECONDS
  configure "$dir" thread
  cmake --build "$dir" -j"$jobs" --target runtime_test >/dev/null
  echo "run_sanitizers.sh: tsan: built in $((SECONDS - start)) s"
  start=$SECONDS
  TSAN_OPTIONS="suppressions=$root/tests/tsan.supp halt_on_error=1" \
    ctest --test-dir "$dir" -L tsan -j2 --output-on-failure
  echo "run_sanitizers.sh: tsan: tests ran in $((SECONDS - start)) s"
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

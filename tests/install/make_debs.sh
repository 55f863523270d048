#!/usr/bin/env bash
# hvd's Debian packages, as `cpack -G DEB` makes them from a tree of their
# own (CPU collectives, installed under /usr), kept in BUILD_DIR/deb so
# that a second run only rebuilds what changed; prints that folder. The
# package tests (install.deb) and the container images use them.
#   make_debs.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
fail() { echo "make_debs.sh: FAILED: $*" >&2; exit 1; }
pkg=$build/deb
cmake -S "$src" -B "$pkg" -DCMAKE_BUILD_TYPE=Release -DHVD_WITH_CUDA=OFF \
  -DHVD_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/usr >/dev/null ||
  fail "cmake could not configure the packages' tree"
cmake --build "$pkg" -j"$(nproc)" >/dev/null || fail "the packages' tree does not build"
rm -f "$pkg"/*.deb
(cd "$pkg" && cpack -G DEB >/dev/null 2>"$pkg/cpack.err") ||
  fail "cpack: $(cat "$pkg/cpack.err")"
echo "$pkg"

#!/usr/bin/env bash
# The Debian packages: built with `cpack -G DEB` from a tree of their own
# (CPU collectives, installed under /usr), checked with dpkg-deb and
# lintian, then installed with dpkg on a Debian 12 root: this machine's own
# system as the lower layer of an overlay in a private mount namespace, so
# that nothing of it changes. There the installed horovodrun runs
# train_mnist, a Python job and a C++ program built with find_package(hvd)
# and pkg-config; then the packages are purged and none of their files may
# remain.
#   run_deb_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
fail() { echo "run_deb_test.sh: FAILED: $*" >&2; exit 1; }
if [[ $(id -u) -ne 0 ]] || ! command -v unshare >/dev/null; then
  echo "run_deb_test.sh: skipped: installing packages into an overlay root needs root and unshare"
  exit 77
fi
command -v lintian >/dev/null || fail "lintian is missing: run packaging/install-deps.sh"

pkg=$("$src/tests/install/make_debs.sh" "$build" "$src") || fail "the packages could not be made (above)"
debs=("$pkg"/*.deb)
names=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Package; done | sort | tr '\n' ' ')
[[ $names == "hvd hvd-rendezvousd libhvd-dev libhvd0 python3-hvd " ]] ||
  fail "cpack made the packages '$names'"
for d in "${debs[@]}"; do
  # Every dependency is a Debian package (dpkg-shlibdeps found them all).
  deps=$(dpkg-deb -f "$d" Depends)
  [[ $(dpkg-deb -f "$d" Package) == libhvd-dev || $deps == *libc6* ]] ||
    fail "$(basename "$d") depends on '$deps', without the C library"
done
dpkg-deb -c "$pkg"/hvd_*.deb | grep >/dev/null "./usr/bin/horovodrun$" || fail "hvd lacks horovodrun"
dpkg-deb -c "$pkg"/hvd-rendezvousd_*.deb |
  grep >/dev/null "./usr/lib/systemd/system/hvd-rendezvousd.service$" ||
  fail "hvd-rendezvousd lacks its unit"
# Lintian's verdict, but for two tags: the packages are not uploaded to
# Debian (no bug to close), and CPack's maintainer scripts call ldconfig
# beside the trigger the library package declares.
if ! verdict=$(lintian --fail-on error,warning \
  --suppress-tags initial-upload-closes-no-bugs,maintscript-calls-ldconfig \
  "${debs[@]}" 2>&1); then
  fail "lintian: $verdict"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/in/debs"
cp "${debs[@]}" "$work/in/debs/"
cp -r "$src/tests/install/consumer" "$work/in/consumer"
cp "$src/tests/install/deb_inside.sh" "$work/in/"
# The mounts live and die with the namespace; the overlay's upper layer
# is a tmpfs, so the machine's disk sees no write.
unshare --mount --propagation private bash -euo pipefail -c '
  w=$1
  mkdir "$w/mnt"
  mount -t tmpfs tmpfs "$w/mnt"
  mkdir "$w/mnt/upper" "$w/mnt/work" "$w/mnt/root"
  mount -t overlay overlay -o lowerdir=/,upperdir="$w/mnt/upper",workdir="$w/mnt/work" "$w/mnt/root"
  r=$w/mnt/root
  mount --rbind /dev "$r/dev"
  mount -t proc proc "$r/proc"
  mount --rbind /sys "$r/sys"
  mount -t tmpfs tmpfs "$r/tmp"
  mount -t tmpfs tmpfs "$r/run"
  cp -r "$w/in" "$r/tmp/in"
  chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 /bin/bash /tmp/in/deb_inside.sh
' _ "$work" || fail "the installed packages (above)"
echo "run_deb_test.sh: the packages install, run and purge cleanly"

#!/usr/bin/env bash
# The fresh-machine check: runs a README command for a fresh Debian 12
# machine, verbatim as the README gives it, in a clean clone of this
# checkout inside a minimal Debian 12 root, as a newcomer would.
#
#   tests/fresh/run.sh [1|2]     README command 1 (default) or 2
#
# The root (Debian's apt variant plus git, ca-certificates, sudo and
# procps) is made with mmdebstrap from the mirrors this machine's apt is
# configured with, read from its sources at run time, and kept as a
# tarball (HVD_FRESH_CACHE, default /var/cache/hvd-fresh) for later runs.
# Each run unpacks it afresh (under HVD_FRESH_DIR, default /var/tmp) and
# runs the command in a private mount and PID namespace with /proc, /sys,
# /dev and a tmpfs /dev/shm, so that nothing it starts outlives it. The
# command is split where the README chains it with `&&` and its parts run
# in order in one shell, each timed: root, install, configure, build, demo
# (or test) are printed as BENCH lines, with the longest time each phase
# went without printing anything. Command 1 must end with the demo's test
# accuracy at 0.975 or more.
#
# Needs root (chroot, mounts) and the mirror; a root that cannot be made
# is a failure with the reason, never a skip. HVD_FRESH_KEEP=1 keeps the
# unpacked root for a look afterwards.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
which=${1:-1}
min_accuracy=0.975

die() { echo "fresh: $*" >&2; exit 1; }
[[ $which == 1 || $which == 2 ]] || {
  echo "fresh: say which README command to run: tests/fresh/run.sh [1|2]" >&2
  exit 2
}
[[ $(id -u) -eq 0 ]] || die "needs root (it makes a chroot and mounts /proc, /sys and /dev in it)"
for tool in unshare chroot git perl; do
  command -v "$tool" >/dev/null || die "'$tool' is missing"
done

# --- The command, as the README says it -----------------------------------
command_line=$("$here/readme_command.sh" "$which" "$src/README.md") || exit 1

# --- The root ---------------------------------------------------------------
cache=${HVD_FRESH_CACHE:-/var/cache/hvd-fresh}
include=git,ca-certificates,sudo,procps
sources=$("$src/tests/util/debian12_sources.sh")
[[ -n $sources ]] || die "this machine's apt sources name no Debian 12 (bookworm) main archive to make the root from"
key=$(printf '%s\n%s\n' "$include" "$sources" | sha256sum | cut -c1-16)
tarball=$cache/debian12-$key.tar

now() { date +%s.%N; }
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

t=$(now)
if [[ -f $tarball ]]; then
  echo "fresh: root from the cache ($tarball)"
  root_made=cached
else
  command -v mmdebstrap >/dev/null || {
    echo "fresh: installing mmdebstrap"
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        mmdebstrap >/dev/null; } ||
      die "cannot install mmdebstrap (Debian package) with apt-get"
  }
  mkdir -p "$cache"
  echo "fresh: making a Debian 12 root with mmdebstrap from:"
  sed 's/^/fresh:   /' <<<"$sources"
  if ! mmdebstrap --variant=apt --include="$include" --format=tar bookworm \
      "$tarball.part" - <<<"$sources"; then
    rm -f "$tarball.part"
    die "mmdebstrap could not make the root (does the mirror answer? see above)"
  fi
  mv "$tarball.part" "$tarball"
  root_made=made
fi
echo "BENCH fresh.root.$root_made $(seconds_since "$t") s"

# --- A clean clone in an unpacked copy --------------------------------------
work=$(mktemp -d "${HVD_FRESH_DIR:-/var/tmp}/hvd-fresh.XXXXXX")
root=$work/root
cleanup() {
  # The mounts lived in the namespace that ended with the command; a mount
  # still under the root would mean otherwise, and rm must not reach it.
  if findmnt -rn -o TARGET | grep -q "^$root/"; then
    echo "fresh: mounts remain under $root; not removing it" >&2
    return
  fi
  if [[ ${HVD_FRESH_KEEP:-0} == 1 ]]; then
    echo "fresh: kept $root"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
mkdir "$root"
tar -C "$root" -xf "$tarball"
git clone -q --no-local "$src" "$root/root/hvd"
# The commit checked out here, even where HEAD is detached (as in CI).
git -C "$root/root/hvd" checkout -q --detach "$(git -C "$src" rev-parse HEAD)"
echo "fresh: clean clone of $(git -C "$src" rev-parse --short HEAD) in the root"
cp /etc/resolv.conf "$root/etc/resolv.conf"

# The phases: the README's command split where it chains with `&&`.
"$here/phase_script.sh" /root/hvd "$command_line" >"$root/root/fresh-command.sh"
echo "fresh: README command $which: $command_line"

# --- Run it -------------------------------------------------------------------
inner='
  set -e
  mount --make-rprivate /
  # The root a mount of its own, as on a machine: tools that change "/"s
  # propagation (unshare, ip netns) fail in a chroot whose "/" is none.
  mount --bind "$ROOT" "$ROOT"
  mount -t proc proc "$ROOT/proc"
  mount --rbind /sys "$ROOT/sys"  # with its cgroup mount, which slurmd needs
  mount --rbind /dev "$ROOT/dev"
  mount -t tmpfs -o mode=1777 tmpfs "$ROOT/dev/shm"
  mount -t tmpfs -o mode=1777 tmpfs "$ROOT/tmp"
  mount -t tmpfs -o mode=755 tmpfs "$ROOT/run"
  exec chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash /root/fresh-command.sh
'
log=$work/command.log
rc=0
ROOT=$root unshare --mount --pid --fork --kill-child bash -c "$inner" 2>&1 |
  perl "$here/phases.pl" "$log" || rc=$?
[[ $rc -eq 0 ]] || die "README command $which failed (exit $rc); its output is above"

if [[ $which == 1 ]]; then
  accuracy=$(grep -aoE '^\[0\]<stdout>:Test accuracy: [0-9.]+' "$log" | tail -1 |
             awk '{ print $NF }')
  [[ -n $accuracy ]] || die "the demo printed no test accuracy"
  echo "BENCH fresh.demo.accuracy $accuracy fraction"
  awk -v a="$accuracy" -v m="$min_accuracy" 'BEGIN { exit !(a >= m) }' ||
    die "the demo's test accuracy $accuracy is below $min_accuracy"
fi
echo "fresh: README command $which passed on a fresh Debian 12 root"

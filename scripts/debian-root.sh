#!/usr/bin/env bash
# The roots of other Debian releases that scripts/test.sh builds and tests
# in, each under a build directory of its own:
#   trixie  Debian 13 (GStreamer 1.26, g++ 14, Mesa 25), build-debian13/
#           (scripts/test.sh --debian13)
#   forky   Debian testing (GStreamer 1.28, ONNX Runtime 1.23), build-forky/
#           (scripts/test.sh --forky)
#   scripts/debian-root.sh RELEASE setup
#       makes DIR/root once (debootstrap --variant=minbase RELEASE from
#       deb.debian.org; later runs reuse it), then installs or updates the
#       packages there with scripts/deps.sh --quick-linux
#   scripts/debian-root.sh RELEASE run CMD...
#       runs CMD inside the root, in the directory it is called from (below
#       the checkout)
# scripts/debian13.sh is `scripts/debian-root.sh trixie`.
# The checkout appears inside the root at its own path, read-only but for
# the root's build directory and build-results/, so paths in build files
# and test logs mean the same inside and outside.
#
# Testing's mirror can serve a Release whose Valid-Until has passed: its
# root's apt is told not to check it (/etc/apt/apt.conf.d/), and this host's
# debootstrap, which has no script named forky, is given sid's.
#
# Every mount (/proc, /sys, /dev, /tmp, the checkout) lives in a private mount
# namespace (unshare --mount --propagation private) that ends with the
# command, however it ends (killed included): the host never sees them, so
# `rm -rf build-debian13` (or build-forky) cannot reach into the host's /dev, /sys or the
# checkout. debootstrap, which mounts /proc and /sys in its target, runs in
# one too. Needs root (re-runs itself under sudo otherwise).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
release=${1:-}
shift || true
case $release in
  trixie) build=$src/build-debian13 ;;
  forky) build=$src/build-forky ;;
  *) echo "usage: $0 trixie|forky setup | run CMD..." >&2; exit 2 ;;
esac
name=$release
rootfs=$build/root
# Written last: a root without it is half made (interrupted) and made anew.
stamp=$build/root.complete
mirror=http://deb.debian.org/debian

# What crosses into the root from the caller's environment.
passed_env() {
  env | grep -E '^(GTEST_|TENSORMEM_)[A-Za-z0-9_]*=' || true
}

if [[ $(id -u) -ne 0 ]]; then
  mapfile -t pass < <(passed_env)
  exec sudo env "${pass[@]}" "$0" "$release" "$@"
fi

# Refuses to go on while anything is mounted below the build directory in this
# namespace (a mount made outside this script): removing the root then
# would remove what is mounted there.
check_no_mounts() {
  local mounted
  mounted=$(findmnt -rn -o TARGET | awk -v dir="$build/" 'index($0, dir) == 1')
  if [[ -n $mounted ]]; then
    echo "$name: something is mounted below $build; unmount it first:" >&2
    echo "$mounted" >&2
    exit 1
  fi
}

setup() {
  mkdir -p "$build"
  if [[ ! -f $stamp ]]; then
    check_no_mounts
    rm -rf "$rootfs"
    local script=()
    [[ $release == forky && ! -e /usr/share/debootstrap/scripts/forky ]] && script=(/usr/share/debootstrap/scripts/sid)
    echo "$name: making $rootfs (debootstrap --variant=minbase $release $mirror ${script[*]})"
    if ! unshare --mount --propagation private -- \
      debootstrap --variant=minbase "$release" "$rootfs" "$mirror" "${script[@]}" >"$build/debootstrap.log" 2>&1; then
      tail -n 30 "$build/debootstrap.log"
      echo "$name: debootstrap failed; its log: $build/debootstrap.log" >&2
      exit 1
    fi
    if [[ $release == forky ]]; then
      echo 'Acquire::Check-Valid-Until "false";' >"$rootfs/etc/apt/apt.conf.d/80tensormem-valid-until"
    fi
    touch "$stamp"
  fi
  # An install interrupted by a killed run leaves dpkg half-way; finish it.
  # apt's and dpkg's chatter goes to a log; deps.sh's own lines are shown.
  # apt's cache of downloaded packages is emptied after: about 700 MB per root
  # that no leg reads again.
  if ! { (run_in_root "$src" dpkg --configure -a) && (run_in_root "$src" scripts/deps.sh --quick-linux) &&
    (run_in_root "$src" apt-get clean); } \
    >"$build/deps.log" 2>&1; then
    tail -n 40 "$build/deps.log"
    echo "$name: installing the packages failed; the log: $build/deps.log" >&2
    exit 1
  fi
  grep '^deps:' "$build/deps.log" || true
}

# run_in_root DIR CMD...: CMD inside the root, in DIR, with a clean
# environment plus passed_env, in place of this shell.
run_in_root() {
  local dir=$1
  shift
  [[ -f $stamp ]] || { echo "$name: no root yet; run scripts/debian-root.sh $release setup" >&2; exit 1; }
  # The host's resolver, for apt and the device kit's downloads.
  cp -L /etc/resolv.conf "$rootfs/etc/resolv.conf"
  mkdir -p "$rootfs$src" "$build" "$src/build-results"
  mapfile -t pass < <(passed_env)
  # exec: nothing of this script runs after the command (which may be long,
  # and outlive an edit of this file).
  exec unshare --mount --propagation private -- "$0" "$release" __enter "$dir" "${pass[@]}" -- "$@"
}

# Inside the new namespace: mounts, then chroot.
enter() {
  local dir=$1
  shift
  local vars=()
  while [[ $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  mount -t proc proc "$rootfs/proc"
  mount --rbind /sys "$rootfs/sys"
  mount --rbind /dev "$rootfs/dev"
  # The host's /tmp: xvfb-run -a picks its display by the lock files there,
  # and the X socket's abstract name is shared with the host's X servers.
  mount --bind /tmp "$rootfs/tmp"
  mount --bind "$src" "$rootfs$src"
  mount -o remount,bind,ro "$rootfs$src"
  mount --bind "$build" "$rootfs$build"
  mount --bind "$src/build-results" "$rootfs$src/build-results"
  exec chroot "$rootfs" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" "${vars[@]}" \
    /bin/sh -c 'cd "$0" && exec "$@"' "$dir" "$@"
}

case ${1:-} in
  setup) setup ;;
  run)
    shift
    case $PWD/ in "$src"/*) ;; *) echo "$name: run it from inside $src" >&2; exit 2 ;; esac
    run_in_root "$PWD" "$@"
    ;;
  __enter) shift; enter "$@" ;;
  *) echo "usage: $0 trixie|forky setup | run CMD..." >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# ONNX Runtime for a machine whose distribution packages none (Debian 12):
# what tensorinfer needs to build (ORT's API header) and to run (the
# library), from the package registries the machines reach, through their
# own clients, and never into the repository:
#   the library  npm's onnxruntime-node (libonnxruntime.so.1, CPU provider;
#                scripts/onnxruntime-npm.sh takes the library alone)
#   the header   Debian 13's libonnxruntime-dev of the same version,
#                downloaded with apt-get through a private source list and
#                unpacked (never installed: its dependencies are Debian 13's)
#   scripts/onnxruntime-sdk.sh DIR [VERSION]
# Leaves DIR/include/onnxruntime/onnxruntime_cxx_api.h and friends and
# DIR/lib/libonnxruntime.so.1; a later call with both there does nothing.
# meson finds DIR where it is build-deps/onnxruntime (the place
# scripts/deps.sh gives it) or where -Donnxruntime-sdk=DIR says; the
# library's path is built into the plugin as the last place tensorinfer
# looks (after TENSORMEM_ONNXRUNTIME and the system's).
set -euo pipefail
dir=$1
# Debian 13's header is 1.21's; the library of the same version keeps the
# two in step (tensorinfer itself accepts any runtime from 1.16 on).
version=${2:-1.21.0}
release=trixie
mirror=${TENSORMEM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cd "$(dirname "$0")/.."

header=$dir/include/onnxruntime/onnxruntime_cxx_api.h
if [[ ! -f $header ]]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $release main" >"$work/sources.list"
  options=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o Acquire::Languages=none
    -o APT::Sandbox::User=root)
  apt-get -qq "${options[@]}" update || { echo "onnxruntime-sdk: could not read Debian $release's package list from $mirror" >&2; exit 1; }
  # Debian's version carries a suffix (1.21.0+dfsg-1): the header of the
  # library's version, whatever the suffix.
  deb_version=$(apt-cache "${options[@]}" show libonnxruntime-dev 2>/dev/null |
    sed -n 's/^Version: //p' | grep -E "^${version//./\\.}[+-]" | head -n1 || true)
  [[ -n $deb_version ]] || { echo "onnxruntime-sdk: Debian $release has no libonnxruntime-dev $version" >&2; exit 1; }
  (cd "$work" && apt-get -qq "${options[@]}" download "libonnxruntime-dev=$deb_version")
  dpkg-deb -x "$work"/libonnxruntime-dev_*.deb "$work/root"
  mkdir -p "$dir/include"
  rm -rf "$dir/include/onnxruntime"
  cp -r "$work/root/usr/include/onnxruntime" "$dir/include/onnxruntime.part"
  mv "$dir/include/onnxruntime.part" "$dir/include/onnxruntime"
fi
scripts/onnxruntime-npm.sh "$version" "$dir/lib" >/dev/null
echo "onnxruntime-sdk: ONNX Runtime $version in $dir (header: Debian $release's libonnxruntime-dev; library: npm's onnxruntime-node)"

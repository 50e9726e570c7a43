#!/usr/bin/env bash
# Configures (once) and builds a build directory.
# Usage: build.sh DIR [meson options...] [-- ninja targets...] (no targets: all)
set -euo pipefail
dir=$1
shift
options=()
while (($#)) && [[ $1 != -- ]]; do
  options+=("$1")
  shift
done
(($#)) && shift
cd "$(dirname "$0")/.."
if [[ ! -f "$dir/build.ninja" ]]; then
  meson setup "$dir" "${options[@]}" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; exit 1; }
fi
ninja -C "$dir" -j"$(nproc)" "$@" >"$dir.ninja.log" 2>&1 || { tail -n 60 "$dir.ninja.log"; exit 1; }

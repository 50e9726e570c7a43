#!/usr/bin/env bash
# ONNX Runtime's library from the npm registry, where a distribution has
# none (or to test another version): npm's onnxruntime-node ships
# libonnxruntime.so.1 for linux x64 and arm64 (the CPU provider). Only the
# library is taken, never the package's Node code; `npm pack` fetches the
# package without running its install scripts.
#   scripts/onnxruntime-npm.sh VERSION DIR
# Leaves DIR/libonnxruntime.so.1 (kept: a later call with it there fetches
# nothing) and prints its path. tensorinfer opens it when
# TENSORMEM_ONNXRUNTIME names it (docs/tensorinfer.md).
set -euo pipefail
version=$1
dir=$2
case $(uname -m) in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "onnxruntime-npm: npm's onnxruntime-node has no library for $(uname -m)" >&2; exit 1 ;;
esac
lib=$dir/libonnxruntime.so.1
if [[ ! -f $lib ]]; then
  command -v npm >/dev/null || { echo "onnxruntime-npm: npm is not installed" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack "onnxruntime-node@$version" --silent >/dev/null)
  tarball=$(ls "$work"/onnxruntime-node-*.tgz)
  # 1.16 names it libonnxruntime.so.1.16.3 under napi-v3, 1.31 libonnxruntime.so.1 under napi-v6.
  member=$(tar tzf "$tarball" | grep -E "^package/bin/napi-v[0-9]+/linux/$arch/libonnxruntime\.so\.1" | head -n1)
  [[ -n $member ]] || { echo "onnxruntime-npm: onnxruntime-node@$version has no linux/$arch library" >&2; exit 1; }
  tar xzf "$tarball" -C "$work" "$member"
  mkdir -p "$dir"
  cp "$work/$member" "$lib.part"
  mv "$lib.part" "$lib"
fi
echo "$lib"

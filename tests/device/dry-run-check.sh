#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Keeps the device tooling from rotting between the rare tasks that get a GPU:
# packs a kit (tests/device/prepare.sh) into a scratch directory and runs
# tests/device/run.sh --dry-run with it, then checks what can be checked
# without a GPU: the kit's prebuilt binaries start, the kit's gst-launch-1.0
# and base plugins run our elements end to end (host path), the CUDA loader
# answers "unavailable" with a reason instead of crashing, and the memfd
# pipeline falls back to the host path. Exit 77 when the kit's packages cannot
# be downloaded (no Debian mirror reachable).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export DEVICE_KIT=$scratch/kit KIT_PREFIX=$scratch/prefix

if ! "$ROOT/tests/device/prepare.sh" >"$scratch/prepare.log" 2>&1; then
  cat "$scratch/prepare.log"
  if grep -qE 'Temporary failure|Could not resolve|Unable to fetch|Failed to fetch' "$scratch/prepare.log"; then
    echo "SKIP: the kit's Debian packages could not be downloaded"
    exit 77
  fi
  echo "FAIL: tests/device/prepare.sh failed"
  exit 1
fi

out=$("$ROOT/tests/device/run.sh" --dry-run 2>&1)
echo "$out"
failed=0
expect() {
  if grep -qE "$1" <<<"$out"; then
    echo "ok: $2"
  else
    echo "MISSING: $2 (/$1/)"
    failed=1
  fi
}
expect "^== kit libraries unpacked under $KIT_PREFIX" "the kit's libraries are unpacked privately"
expect "^== using the kit's prebuilt binaries" "the prebuilt binaries start"
expect "^(PASS|FAIL) loader: " "device-check runs and reports on the loader"
expect "^FAIL loader: unavailable: " "without a GPU the loader says why CUDA is unavailable"
expect "^== device-check, CUDA runtime API" "device-check runs against the runtime API"
expect "^== device-check, CUDA driver API" "device-check runs against the driver API"
expect "^FAIL loader: unavailable: .*libcuda.so.1" "the driver run looks for libcuda.so.1"
expect "host reference 10/10 frames" "gst-launch-1.0 from the kit runs tensorupload storage=pbo ! tensorinspect"
expect "^PASS pipeline-memfd-runtime" "the memfd pipeline stays on the host path (runtime API)"
expect "^PASS pipeline-memfd-driver" "the memfd pipeline stays on the host path (driver API)"
exit $failed

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compiles tests/device/device_check.cpp against the libtensormem of a build
# directory: build-check.sh BUILD_DIR. The program finds the library through
# an $ORIGIN-relative rpath, so the build directory may move (the device kit).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=$1
# A libtensormem built without GL (no libepoxy where it was built) has no GL
# worker: the PBO checks are then compiled out and reported as not run.
defs=()
if ! nm -D --defined-only "$BUILD_DIR"/lib/libtensormem.so | grep -q GlWorker; then
  defs+=(-DTM_DEVICE_NO_GL=1)
fi
"${CXX:-c++}" -std=c++20 -O2 -Wall -Wextra -Werror -pthread "${defs[@]}" \
  -I"$ROOT/lib/include" \
  "$ROOT/tests/device/device_check.cpp" \
  -L"$BUILD_DIR/lib" -Wl,-rpath,'$ORIGIN/lib' -ltensormem \
  -o "$BUILD_DIR/device-check"
echo "== built $BUILD_DIR/device-check"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Real-GPU checks of the CUDA interop (issue 5). On a machine with an NVIDIA
# GPU and driver it builds the project, then runs:
#   1. the loader finds the real runtime and at least one device
#   2. PBO -> CUDA through an NVIDIA EGL context (device platform): the
#      checksum of the bytes read through CUDA (cudaMemcpy to the host)
#      matches the CPU side, and CUDA writes reach the CPU map
#   3. a memfd import as CUDA external memory fails cleanly and falls back
#   4. CUDA map/unmap latency of a 1080p PBO
#   5. tensorupload storage=pbo ! tensorcudaimport ! tensorinspect on the
#      GPU: every frame read through CUDA, checksums equal to the host path;
#      and storage=dmabuf over memfd: a clean fallback to the host path
# Exits 77 (skip) with a message when no NVIDIA GPU/driver is present.
#
# Usage: tests/device/run.sh [--build-only]
#   BUILD_DIR   build directory (default build-device; reused when configured)
#   --build-only  skip the GPU check and the runs: build and compile only
#                 (checks the script and device_check.cpp on any machine)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build-device}
BUILD_ONLY=0
[[ ${1:-} == --build-only ]] && BUILD_ONLY=1

skip() {
  echo "tests/device/run.sh: SKIP: $*" >&2
  exit 77
}

if [[ $BUILD_ONLY == 0 ]]; then
  command -v nvidia-smi >/dev/null 2>&1 || skip "no nvidia-smi: no NVIDIA driver on this machine"
  nvidia-smi -L >/dev/null 2>&1 || skip "nvidia-smi finds no GPU (driver not loaded?)"
  nvidia-smi -L | grep -q '^GPU ' || skip "nvidia-smi lists no GPU"
  ls /dev/nvidia[0-9]* >/dev/null 2>&1 || skip "no /dev/nvidiaN device node"
  echo "== GPU: $(nvidia-smi -L | head -n1)"
fi

# Build (the main meson build; the device check is built here, not by meson).
if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  meson setup "$BUILD_DIR" "$ROOT" -Dbuildtype=release
fi
ninja -C "$BUILD_DIR"

CXX=${CXX:-c++}
"$CXX" -std=c++20 -O2 -Wall -Wextra -Werror -pthread \
  -I"$ROOT/lib/include" \
  "$ROOT/tests/device/device_check.cpp" \
  -L"$BUILD_DIR/lib" -Wl,-rpath,"$BUILD_DIR/lib" -ltensormem \
  -o "$BUILD_DIR/device-check"
echo "== built $BUILD_DIR/device-check"
if [[ $BUILD_ONLY == 1 ]]; then
  exit 0
fi

# The real runtime, not a fake: the loader searches its default names.
unset TENSORMEM_CUDART FAKE_CUDART_FAIL FAKE_CUDART_DEVICE_COUNT
# CUDA-GL interop needs NVIDIA's EGL, not Mesa's: make glvnd pick it, so the
# GL worker's device platform (EGL_EXT_platform_device) is NVIDIA's.
for f in /usr/share/glvnd/egl_vendor.d/10_nvidia.json /etc/glvnd/egl_vendor.d/10_nvidia.json; do
  if [[ -f $f ]]; then
    export __EGL_VENDOR_LIBRARY_FILENAMES=$f
    break
  fi
done

status=0
echo "== device-check"
"$BUILD_DIR/device-check" || status=1

echo "== pipelines"
export GST_PLUGIN_PATH=$BUILD_DIR/gst/plugin
export GST_REGISTRY=$BUILD_DIR/device-registry.bin
caps='video/x-raw,format=RGBA,width=640,height=360'
summaries() {
  gst-launch-1.0 -m "$@" 2>&1 | grep -o 'tensorinspect, frame=(guint64)[0-9]*, checksum=(string)[0-9a-f]*, path=(string)[a-z]*' || true
}
host=$(summaries videotestsrc num-buffers=10 pattern=ball ! "$caps" ! tensorupload storage=pbo ! tensorinspect ! fakesink)
cuda=$(summaries videotestsrc num-buffers=10 pattern=ball ! "$caps" ! tensorupload storage=pbo ! tensorcudaimport require-cuda=true ! tensorinspect ! fakesink)
n_cuda=$(grep -c 'path=(string)cuda' <<<"$cuda" || true)
if [[ $n_cuda == 10 && "$(sed 's/, path=.*//' <<<"$host")" == "$(sed 's/, path=.*//' <<<"$cuda")" ]]; then
  echo "PASS pipeline-pbo: 10 frames through CUDA, checksums equal to the host path"
else
  echo "FAIL pipeline-pbo: $n_cuda/10 frames through CUDA"; echo "host:"; echo "$host"; echo "cuda:"; echo "$cuda"
  status=1
fi
memfd=$(TENSORMEM_DMABUF_SOURCE=memfd summaries videotestsrc num-buffers=5 ! "$caps" ! tensorupload storage=dmabuf ! tensorcudaimport ! tensorinspect ! fakesink)
n_host=$(grep -c 'path=(string)host' <<<"$memfd" || true)
if [[ $n_host == 5 ]]; then
  echo "PASS pipeline-memfd: memfd import refused, 5 frames on the host path"
else
  echo "FAIL pipeline-memfd: $n_host/5 frames on the host path"; echo "$memfd"
  status=1
fi

exit $status

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Real-GPU checks of the CUDA interop (issues 5 and 15). On a machine with an
# NVIDIA GPU and driver it runs everything below twice, once per CUDA API
# (TENSORMEM_CUDA_API=runtime: libcudart; =driver: libcuda.so.1, what a
# machine with only the driver has):
#   1. the loader finds the real CUDA through that API and at least one device
#   2. PBO -> CUDA through an NVIDIA EGL context: the checksum of the bytes
#      read through CUDA (cudaMemcpy to the host) matches the CPU side, and
#      CUDA writes reach the CPU map
#   3. a memfd import as CUDA external memory fails cleanly and falls back
#   4. CUDA map/unmap latency of a 1080p PBO
#   5. tensorupload storage=pbo ! tensorcudaimport ! tensorinspect on the
#      GPU: every frame read through CUDA, checksums equal to the host path;
#      and storage=dmabuf over memfd: a clean fallback to the host path
# Lines name the API: "== device-check, CUDA driver API", "PASS
# pipeline-pbo-driver: ...".
# Exits 77 (skip) with a message when no NVIDIA GPU/driver is present.
#
# The device machine has no network, no GStreamer and no libepoxy: run
# tests/device/prepare.sh here first and carry .device-kit (see that script).
# With a kit, its prebuilt binaries are used, and the libraries it packs are
# unpacked under $KIT_PREFIX; if those binaries cannot start there, the
# project is built on the device instead (without GStreamer if it is still
# missing, in which case step 5 is reported as not run). Without a kit, the
# project is built on the device.
#
# Usage: tests/device/run.sh [--build-only | --dry-run]
#   BUILD_DIR     where to build on the device (default build-device)
#   DEVICE_KIT    the kit (default .device-kit)
#   KIT_PREFIX    where the kit's libraries are unpacked (default /tmp/tm-kit)
#   --build-only  build device-check (no kit, no GPU needed) and stop
#   --dry-run     everything but the GPU detection and the unpacking into /
#                 (checks the kit and the script on a machine without a GPU;
#                 the CUDA checks then fail, which is expected there)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KIT=${DEVICE_KIT:-$ROOT/.device-kit}
KIT_PREFIX=${KIT_PREFIX:-/tmp/tm-kit}
MODE=${1:-run}

skip() {
  echo "tests/device/run.sh: SKIP: $*" >&2
  exit 77
}

build_on_device() {
  local dir=${BUILD_DIR:-$ROOT/build-device}
  if [[ ! -f $dir/build.ninja ]]; then
    meson setup "$dir" "$ROOT" -Dbuildtype=release -Dtests=disabled -Dbench=disabled >&2
  fi
  ninja -C "$dir" >&2
  "$ROOT/tests/device/build-check.sh" "$dir" >&2
  echo "$dir"
}

if [[ $MODE == --build-only ]]; then
  build_on_device >/dev/null
  exit 0
fi

if [[ $MODE != --dry-run ]]; then
  command -v nvidia-smi >/dev/null 2>&1 || skip "no nvidia-smi: no NVIDIA driver on this machine"
  nvidia-smi -L >/dev/null 2>&1 || skip "nvidia-smi finds no GPU (driver not loaded?)"
  nvidia-smi -L | grep -q '^GPU ' || skip "nvidia-smi lists no GPU"
  ls /dev/nvidia[0-9]* >/dev/null 2>&1 || skip "no /dev/nvidiaN device node"
  echo "== GPU: $(nvidia-smi -L | head -n1)"
  echo "== system: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(ldd --version 2>/dev/null | head -n1)"
fi

# --- libraries ---------------------------------------------------------------
if [[ -d $KIT/debs ]]; then
  if [[ $MODE != --dry-run ]] && ! ldconfig -p | grep -q 'libEGL.so.1 '; then
    echo "== unpacking the GL dispatch libraries into /"
    for f in "$KIT"/gl-debs/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  rm -rf "$KIT_PREFIX"
  mkdir -p "$KIT_PREFIX"
  for f in "$KIT"/debs/*.deb; do dpkg -x "$f" "$KIT_PREFIX"; done
  multiarch=x86_64-linux-gnu
  export LD_LIBRARY_PATH="$KIT_PREFIX/usr/lib/$multiarch:$KIT_PREFIX/lib/$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$KIT_PREFIX/usr/bin:$PATH"
  export GST_PLUGIN_SYSTEM_PATH_1_0="$KIT_PREFIX/usr/lib/$multiarch/gstreamer-1.0"
  export GST_PLUGIN_SCANNER_1_0="$KIT_PREFIX/usr/lib/$multiarch/gstreamer1.0/gstreamer-1.0/gst-plugin-scanner"
  echo "== kit libraries unpacked under $KIT_PREFIX"
fi

# The real runtime, not a fake: the loader searches its default names, so
# the toolkit's library directory must be on the search path.
unset TENSORMEM_CUDART TENSORMEM_CUDA_DRIVER TENSORMEM_CUDA_API FAKE_CUDART_FAIL FAKE_CUDART_DEVICE_COUNT \
  FAKE_CUDART_ACCEPT_DMABUF
if ! ldconfig -p | grep -q 'libcudart.so'; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64; do
    if compgen -G "$d/libcudart.so*" >/dev/null; then
      export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
      echo "== libcudart from $d"
      break
    fi
  done
fi
# CUDA-GL interop needs NVIDIA's EGL, not Mesa's: make glvnd pick it.
for f in /usr/share/glvnd/egl_vendor.d/10_nvidia.json /etc/glvnd/egl_vendor.d/10_nvidia.json \
  /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json; do
  if [[ $MODE != --dry-run && -f $f ]]; then
    export __EGL_VENDOR_LIBRARY_FILENAMES=$f
    break
  fi
done

# --- binaries ----------------------------------------------------------------
build=""
if [[ -x $KIT/build/device-check ]]; then
  # Exit 127 or a dynamic-loader complaint: the kit's binaries do not start
  # on this system.
  if missing=$(ldd "$KIT/build/device-check" "$KIT"/build/gst/plugin/*.so 2>&1 | grep -E 'not found|GLIBC'); then
    echo "== the kit's binaries cannot start here:"
    echo "$missing"
  else
    build=$KIT/build
    echo "== using the kit's prebuilt binaries"
  fi
fi
if [[ -z $build ]]; then
  echo "== building on this machine"
  build=$(build_on_device)
fi

status=0
apis=(runtime driver)
for api in "${apis[@]}"; do
  echo "== device-check, CUDA $api API"
  TENSORMEM_CUDA_API=$api "$build/device-check" || status=1
done

echo "== pipelines"
if [[ ! -f $build/gst/plugin/libgsttensormem.so ]] || ! command -v gst-launch-1.0 >/dev/null; then
  echo "NOT RUN pipelines: no GStreamer here (build it with the kit: tests/device/prepare.sh)"
  exit 1
fi
export GST_PLUGIN_PATH=$build/gst/plugin
export GST_REGISTRY=${TMPDIR:-/tmp}/tm-device-registry.bin
caps='video/x-raw,format=RGBA,width=640,height=360'
summaries() {
  gst-launch-1.0 -m "$@" 2>&1 | grep -o 'tensorinspect, frame=(guint64)[0-9]*, checksum=(string)[0-9a-f]*, path=(string)[a-z]*' || true
}
host=$(summaries videotestsrc num-buffers=10 pattern=ball ! "$caps" ! tensorupload storage=pbo ! tensorinspect ! fakesink)
n_host_ref=$(grep -c 'path=(string)host' <<<"$host" || true)
for api in "${apis[@]}"; do
  export TENSORMEM_CUDA_API=$api
  cuda=$(summaries videotestsrc num-buffers=10 pattern=ball ! "$caps" ! tensorupload storage=pbo ! tensorcudaimport require-cuda=true ! tensorinspect ! fakesink)
  n_cuda=$(grep -c 'path=(string)cuda' <<<"$cuda" || true)
  if [[ $n_host_ref == 10 && $n_cuda == 10 && "$(sed 's/, path=.*//' <<<"$host")" == "$(sed 's/, path=.*//' <<<"$cuda")" ]]; then
    echo "PASS pipeline-pbo-$api: 10 frames through CUDA, checksums equal to the host path"
  else
    echo "FAIL pipeline-pbo-$api: host reference $n_host_ref/10 frames, $n_cuda/10 frames through CUDA"
    echo "host:"; echo "$host"; echo "cuda:"; echo "$cuda"
    status=1
  fi
  memfd=$(TENSORMEM_DMABUF_SOURCE=memfd summaries videotestsrc num-buffers=5 ! "$caps" ! tensorupload storage=dmabuf ! tensorcudaimport ! tensorinspect ! fakesink)
  n_host=$(grep -c 'path=(string)host' <<<"$memfd" || true)
  if [[ $n_host == 5 ]]; then
    echo "PASS pipeline-memfd-$api: memfd import refused, 5 frames on the host path"
  else
    echo "FAIL pipeline-memfd-$api: $n_host/5 frames on the host path"; echo "$memfd"
    status=1
  fi
done
unset TENSORMEM_CUDA_API

exit $status

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A real DMA-BUF pipeline through the gst-tensormem elements, from the build
# tree. videotestsrc (or jpegdec, with --jpeg) writes straight into the
# DMA-BUF buffer pool that tensorupload proposes; require-zero-copy=true makes
# any copy an error, and the element's summary line (copied-bytes=0) shows
# that none happened.
#
#   examples/dmabuf-pipeline.sh [--jpeg] [BUILD_DIR]     (default: build)
#
# On a machine without /dev/dma_heap the storages come from memfd
# (TENSORMEM_DMABUF_SOURCE=memfd): CPU-shareable and fd-passable, not
# importable by a GPU driver, but the same code path above the source.
set -euo pipefail
cd "$(dirname "$0")/.."

jpeg=0
build=build
for arg in "$@"; do
  case "$arg" in
    --jpeg) jpeg=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) build=$arg ;;
  esac
done

plugin_dir=$build/gst/plugin
if [[ ! -d $plugin_dir ]]; then
  echo "no $plugin_dir: build first (meson setup $build && ninja -C $build)" >&2
  exit 1
fi
export GST_PLUGIN_PATH=$PWD/$plugin_dir
export GST_REGISTRY=${GST_REGISTRY:-$PWD/$build/example-registry.bin}

if [[ -z ${TENSORMEM_DMABUF_SOURCE:-} ]]; then
  if compgen -G '/dev/dma_heap/*' >/dev/null; then
    export TENSORMEM_DMABUF_SOURCE=heap
  else
    echo "no /dev/dma_heap here: using memfd-backed DMA-BUF storage (TENSORMEM_DMABUF_SOURCE=memfd)"
    export TENSORMEM_DMABUF_SOURCE=memfd
  fi
fi

caps='video/x-raw,format=NV12,width=1280,height=720,framerate=30/1'
source="videotestsrc num-buffers=300 pattern=ball ! $caps"
if ((jpeg)); then
  gst-inspect-1.0 jpegdec >/dev/null 2>&1 || { echo "jpegdec missing: install gstreamer1.0-plugins-good" >&2; exit 1; }
  source="videotestsrc num-buffers=300 pattern=ball ! video/x-raw,format=I420,width=1280,height=720 ! jpegenc ! jpegdec"
fi

# tensorupload → memory:DMABuf caps (our pool's fds) → tensordownload drops
# the caps feature for fakesink, still without a copy.
pipeline="$source ! tensorupload storage=dmabuf require-zero-copy=true ! video/x-raw(memory:DMABuf) ! tensordownload ! fakesink"
echo "gst-launch-1.0 $pipeline"
# shellcheck disable=SC2086
GST_DEBUG_NO_COLOR=1 GST_DEBUG=${GST_DEBUG:-tensormemtransform:4,tensorupload:4} gst-launch-1.0 -q $pipeline 2>&1 |
  grep -E 'summary|storage=|ERROR|error' | sed -E 's/^.*<([a-z]+)[0-9]*> */\1: /'

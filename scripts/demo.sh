#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs real pipelines
# through our elements on the headless defaults, then says what each element
# did. One pipeline per storage this machine can run:
#   auto    (DMA-BUF where a DMA heap exists, else system memory)
#   dmabuf  (from memfd where no DMA heap exists: TENSORMEM_DMABUF_SOURCE=memfd)
#   pbo     (OpenGL PBOs on a headless EGL context; llvmpipe without a GPU)
#   scripts/demo.sh [num-buffers] [WIDTHxHEIGHT] [format]
set -euo pipefail
cd "$(dirname "$0")/.."

frames=${1:-300}
size=${2:-1280x720}
format=${3:-RGBA}
width=${size%x*}
height=${size#*x}

scripts/deps.sh
scripts/build.sh build

export GST_PLUGIN_PATH=$PWD/build/gst/plugin
export GST_REGISTRY=$PWD/build/demo-registry.bin
if [[ ! -d /dev/dma_heap ]]; then
  export TENSORMEM_DMABUF_SOURCE=memfd
  echo "demo: no /dev/dma_heap here: DMA-BUF storages come from memfd (TENSORMEM_DMABUF_SOURCE=memfd)"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

run() {
  local storage=$1
  local pipeline="videotestsrc num-buffers=$frames pattern=ball ! video/x-raw,format=$format,width=$width,height=$height,framerate=30/1 ! tensorupload storage=$storage require-zero-copy=true name=up ! tensordownload name=down ! fakesink sync=false"
  echo
  echo "demo: gst-launch-1.0 $pipeline"
  local start end
  start=$(date +%s.%N)
  if ! GST_DEBUG="tensormemtransform:4,tensorupload:4" GST_DEBUG_NO_COLOR=1 gst-launch-1.0 -e $pipeline >"$log" 2>&1; then
    cat "$log"
    echo "demo: the storage=$storage pipeline failed"
    return 1
  fi
  end=$(date +%s.%N)
  grep -E 'resolves to|resolved' "$log" | sed -E 's/^.*<([^>]+)>/  \1:/' || true
  grep -E 'summary:' "$log" | sed -E "s/^.*<([^>]+)>.*summary:/  \\1:/" || { echo "demo: no summary from the elements"; return 1; }
  python3 -c "import sys; print(f'  {sys.argv[1]} frames of {sys.argv[2]}x{sys.argv[3]} {sys.argv[4]} in {float(sys.argv[6]) - float(sys.argv[5]):.2f} s')" \
    "$frames" "$width" "$height" "$format" "$start" "$end"
}

run auto
run dmabuf
run pbo
echo
echo "demo: every pipeline reached EOS; 'copied-bytes' above is what each element copied (tensorupload ran with require-zero-copy=true)"

#!/usr/bin/env bash
# The main job, as a newcomer meets it: installs only what building and
# running need (scripts/deps.sh --demo), builds the plugin, then
#   1. decodes a short H.264 clip (made here with openh264enc) into a
#      model-ready tensor and hands every tensor to a consumer that reads it
#      in place through DLPack (examples/decode_to_tensor.c: a CUDA pointer
#      where a GPU is, a host pointer here), printing per element what it did
#      (frames, copies, fences) and the tensor's shape, type and checksum;
#   2. runs the storage round trips (system, DMA-BUF, OpenGL PBO), short.
#   scripts/demo.sh [frames] [WIDTHxHEIGHT of the tensor]
set -euo pipefail
cd "$(dirname "$0")/.."

frames=${1:-90}
size=${2:-224x224}
width=${size%x*}
height=${size#*x}

scripts/deps.sh --demo
# A build of its own: the test build (build/) has other options.
scripts/build.sh build-demo -Dbuildtype=release -Dtests=disabled -Dbench=disabled -Dintrospection=disabled

export GST_PLUGIN_PATH=$PWD/build-demo/gst/plugin
export GST_REGISTRY=$PWD/build-demo/demo-registry.bin
if [[ ! -d /dev/dma_heap ]]; then
  export TENSORMEM_DMABUF_SOURCE=memfd
  echo "demo: no /dev/dma_heap here: DMA-BUF storages come from memfd (TENSORMEM_DMABUF_SOURCE=memfd)"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }

# What our elements said about their run (GST_DEBUG=...:4 summaries).
summaries() {
  grep -E 'summary:|converted [0-9]+ frame|tensor [0-9]+x[0-9]+' "$log" | sed -E 's/^.*<([^>]+)>[^ ]* /  \1: /' || true
}

# ---- 1. decode -> tensor -> consumer -----------------------------------------
clip=build-demo/demo-clip-1280x720.h264
if [[ ! -s $clip ]]; then
  echo "demo: making a ${frames}-frame 1280x720 H.264 clip ($clip)"
  gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=ball ! \
    video/x-raw,format=I420,width=1280,height=720,framerate=30/1 ! openh264enc ! h264parse ! \
    filesink location="$clip" >"$log" 2>&1 || { cat "$log"; echo "demo: could not make the clip"; exit 1; }
fi

chain="filesrc location=$clip ! h264parse ! openh264dec ! tensorupload storage=dmabuf require-zero-copy=true name=up ! tensorconvert width=$width height=$height resize=letterbox dtype=float32 layout=nchw mean=<0.485,0.456,0.406> std=<0.229,0.224,0.225> name=convert ! tensorcudaimport name=cuda ! tensorsync name=sync ! tensorinspect name=inspect ! fakesink sync=false"
echo
echo "demo: decode -> model tensor -> consumer"
echo "demo: gst-launch-1.0 $chain"
start=$(date +%s.%N)
if ! GST_DEBUG="tensormemtransform:4,tensorconvert:4,tensorupload:4" GST_DEBUG_NO_COLOR=1 \
  gst-launch-1.0 -e -m $chain >"$log" 2>&1; then
  cat "$log"
  echo "demo: the decode pipeline failed"
  exit 1
fi
end=$(date +%s.%N)
summaries
# tensorinspect's per-frame messages: the tensor's checksum and where it was read.
python3 - "$log" <<'EOF'
import re, sys
text = open(sys.argv[1], errors="replace").read()
frames = re.findall(r'tensorinspect, .*?checksum=\(string\)([0-9a-f]+).*?path=\(string\)(\w+).*?fence=\(string\)([^,;]+)', text)
if not frames:
    sys.exit("demo: tensorinspect posted no per-frame message")
print(f"  inspect: {len(frames)} tensors read (path {frames[0][1]}), first checksum {frames[0][0]}, last {frames[-1][0]}, fences {sorted(set(f[2] for f in frames))}")
EOF
echo "  $frames frames decoded and converted in $(elapsed "$start" "$end") s"

decoder=build-demo/examples/decode-to-tensor
if [[ -x $decoder ]]; then
  echo
  echo "demo: the consumer: $decoder $clip $width $height (each tensor through DLPack, read in place)"
  start=$(date +%s.%N)
  status=0
  "$decoder" "$clip" "$width" "$height" >"$log" 2>&1 || status=$?
  if ((status == 77)); then # no headless GL: the same chain on system memory
    "$decoder" --storage=system "$clip" "$width" "$height" >"$log" 2>&1 || { cat "$log"; exit 1; }
  elif ((status != 0)); then
    cat "$log"
    echo "demo: the consumer failed"
    exit 1
  fi
  end=$(date +%s.%N)
  head -n 2 "$log" | sed 's/^/  /'
  echo "  ..."
  tail -n 2 "$log" | sed 's/^/  /'
  echo "  in $(elapsed "$start" "$end") s"
fi

# ---- 2. storage round trips --------------------------------------------------
run() {
  local storage=$1 n=100
  local pipeline="videotestsrc num-buffers=$n pattern=ball ! video/x-raw,format=RGBA,width=1280,height=720,framerate=30/1 ! tensorupload storage=$storage require-zero-copy=true name=up ! tensordownload name=down ! fakesink sync=false"
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
  echo "  $n frames of 1280x720 RGBA in $(elapsed "$start" "$end") s"
}

run auto
run dmabuf
run pbo
echo
echo "demo: every pipeline reached EOS; 'copied-bytes' above is what each element copied (tensorupload ran with require-zero-copy=true)"

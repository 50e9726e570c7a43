#!/usr/bin/env bash
# The main job, as a newcomer meets it: installs only what building and
# running need (scripts/deps.sh --demo), builds the plugin, then
#   1. decodes a short H.264 clip (made here with openh264enc) into a
#      model-ready tensor and hands every tensor to a consumer that reads it
#      in place through DLPack (examples/decode_to_tensor.c: a CUDA pointer
#      where a GPU is, a host pointer here), printing per element what it did
#      (frames, copies, fences) and the tensor's shape, type and checksum;
#      where the tensorinfer plugin was built (everywhere scripts/deps.sh
#      found or fetched ONNX Runtime: Debian 13's package, npm's library on
#      Debian 12), an ONNX model (a small classifier written by
#      scripts/demo_model.py) runs on each tensor in place, and its top
#      scores are printed;
#   2. runs four such streams into one batch: each stream's tensorconvert
#      writes its tensor straight into its slot of one DMA-BUF per batch
#      (tensorbatch), and where tensorinfer was built the model runs once
#      per batch of four (its twin with an open batch dimension);
#   3. runs the storage round trips (system, DMA-BUF, OpenGL PBO), short;
#   4. on GStreamer 1.28 (yolov8tensordec, objectdetectionoverlay), finds the
#      clip's ball: tensorconvert letterboxes each frame into the 640x640
#      tensor the model's .modelinfo describes (model=, one file for the
#      chain), tensorinfer runs tests/gst/infer_models.py's ball.onnx (a
#      small detector in YOLOv8's output layout, written with python3-onnx),
#      upstream's yolov8tensordec decodes its box, tensorresultmap maps it
#      back to the frame and objectdetectionoverlay draws it; the last frame,
#      scaled to 640x360, is written to build-demo/ball.png. Elsewhere it
#      says in one line why it is skipped.
#   scripts/demo.sh [frames] [WIDTHxHEIGHT of the tensor]
#   scripts/demo.sh --picture BUILD
#       section 4 alone, with an existing build's plugins (BUILD/gst/plugin,
#       BUILD/gst/infer), writing into BUILD/demo-picture/; installs and
#       builds nothing. docs/img/ball-detection.png was made so, in the
#       GStreamer 1.28 root: scripts/debian-root.sh forky run scripts/demo.sh
#       --picture build-forky/build
set -euo pipefail
cd "$(dirname "$0")/.."

# make_clip PATH [FRAMES]: a 1280x720 H.264 clip of videotestsrc's ball.
make_clip() {
  [[ -s $1 ]] && return 0
  echo "demo: making a ${2:-90}-frame 1280x720 H.264 clip ($1)"
  local out
  out=$(gst-launch-1.0 -q videotestsrc num-buffers="${2:-90}" pattern=ball ! \
    video/x-raw,format=I420,width=1280,height=720,framerate=30/1 ! openh264enc ! h264parse ! \
    filesink location="$1" 2>&1) || { echo "$out"; echo "demo: could not make the clip"; return 1; }
}

# picture DIR CLIP: section 4 (above), its files in DIR, CLIP made when
# missing; GST_PLUGIN_PATH must reach our plugins and tensorinfer.
picture() {
  local dir=$1 clip=$2
  echo
  if ! gst-inspect-1.0 --exists yolov8tensordec || ! gst-inspect-1.0 --exists objectdetectionoverlay; then
    echo "demo: no detection picture: yolov8tensordec and objectdetectionoverlay are GStreamer 1.28's (gstreamer1.0-plugins-bad); here $(gst-inspect-1.0 --version | sed -n 's/^GStreamer //p')"
    return 0
  fi
  if ! gst-inspect-1.0 --exists tensorinfer || ! gst-inspect-1.0 --exists tensorresultmap; then
    echo "demo: no detection picture: tensorinfer (ONNX Runtime) or tensorresultmap (GStreamer's analytics library) was not built here"
    return 0
  fi
  local py=/usr/bin/python3
  [[ -x $py ]] || py=python3
  if ! "$py" -c 'import onnx, numpy' 2>/dev/null; then
    echo "demo: no detection picture: its detector is written with python3-onnx and python3-numpy, not installed here"
    return 0
  fi
  make_clip "$clip"
  mkdir -p "$dir/models"
  "$py" tests/gst/infer_models.py make "$dir/models" >"$log" 2>&1 ||
    { cat "$log"; echo "demo: tests/gst/infer_models.py could not write ball.onnx"; return 1; }
  echo ball >"$dir/ball-labels.txt"
  local png=$dir/ball.png
  rm -f "$png"
  # The overlay draws on the full 1280x720 frame, in green; the frame is
  # scaled down after it. multifilesink rewrites one file: the last frame.
  local pipeline="filesrc location=$clip ! h264parse ! openh264dec ! tensorconvert model=$dir/models/ball.onnx resize=letterbox output=meta ! tensorinfer model=$dir/models/ball.onnx ! yolov8tensordec label-file=$dir/ball-labels.txt ! tensorresultmap name=map ! objectdetectionoverlay object-detection-outline-color=0xff00ff00 labels-color=0xff00ff00 ! videoconvert ! videoscale ! video/x-raw,width=640,height=360 ! pngenc ! multifilesink location=$png"
  echo "demo: decode -> tensor -> ball.onnx -> yolov8tensordec -> tensorresultmap -> boxes drawn on the frame"
  echo "demo: gst-launch-1.0 $pipeline"
  if ! gst-launch-1.0 -e $pipeline >"$log" 2>&1 || [[ ! -s $png ]]; then
    grep -v 'Schema error' "$log" || true
    echo "demo: the detection pipeline failed"
    return 1
  fi
  echo "  the last frame with its box, 640x360: $png"
}

if [[ ${1:-} == --picture ]]; then
  build=${2:?usage: scripts/demo.sh --picture BUILD}
  export GST_PLUGIN_PATH=$PWD/$build/gst/plugin:$PWD/$build/gst/infer
  export GST_REGISTRY=$PWD/$build/demo-picture/registry.bin
  mkdir -p "$build/demo-picture"
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  picture "$build/demo-picture" "$build/demo-picture/demo-clip-1280x720.h264"
  exit 0
fi

frames=${1:-90}
size=${2:-224x224}
width=${size%x*}
height=${size#*x}

scripts/deps.sh --demo
mkdir -p build-demo

# unpack PACKAGE DIR: PACKAGE's files under DIR/root, not installed (apt-get
# download of the candidate version, the one deps.sh installed the
# libraries of; no root needed).
unpack() {
  rm -rf "$2"
  mkdir -p "$2"
  (cd "$2" && apt-get download -qq "$1" 2>/dev/null && dpkg-deb -x ./*.deb root && rm -f ./*.deb)
}

# The two plugins of gstreamer1.0-plugins-bad the demo uses (openh264,
# h264parse), unpacked into build-demo/bad-plugins: the package itself would
# install 165 more packages (scripts/deps.sh). Where the package is installed
# already, its own plugins are used.
if ! gst-inspect-1.0 --exists openh264dec 2>/dev/null || ! gst-inspect-1.0 --exists h264parse 2>/dev/null; then
  bad=$PWD/build-demo/bad-plugins
  if [[ ! -f $bad/libgstopenh264.so || ! -f $bad/libgstvideoparsersbad.so ]]; then
    unpack gstreamer1.0-plugins-bad "$bad/deb"
    find "$bad/deb/root" \( -name libgstopenh264.so -o -name libgstvideoparsersbad.so \) -exec cp {} "$bad" \;
    rm -rf "$bad/deb"
  fi
  [[ -f $bad/libgstopenh264.so && -f $bad/libgstvideoparsersbad.so ]] ||
    { echo "demo: could not unpack openh264 and h264parse from gstreamer1.0-plugins-bad; install it"; exit 1; }
  bad_plugins=$bad
fi

# GstTensorMeta's headers (tensorinfer needs them) without their package:
# libgstreamer-plugins-bad1.0-dev depends on OpenCV's development files, 240
# packages and 195 MB on Debian 13 that nothing here uses. Where ONNX Runtime
# is installed and the analytics library's pkg-config file is not, the
# package is unpacked into build-demo/analytics-sdk (600 KB), its .pc
# pointing there and its library at the installed libgstanalytics.
if pkg-config --exists libonnxruntime && ! pkg-config --exists gstreamer-analytics-1.0; then
  sdk=$PWD/build-demo/analytics-sdk
  if [[ ! -f $sdk/pkgconfig/gstreamer-analytics-1.0.pc ]]; then
    unpack libgstreamer-plugins-bad1.0-dev "$sdk"
    mkdir -p "$sdk/pkgconfig" "$sdk/lib"
    pc=$(find "$sdk/root" -name gstreamer-analytics-1.0.pc | head -n1)
    lib=$(find /usr/lib -name 'libgstanalytics-1.0.so.0' | head -n1)
    if [[ -n $pc && -n $lib ]]; then
      ln -sf "$lib" "$sdk/lib/libgstanalytics-1.0.so"
      sed -e "s|^includedir=.*|includedir=$sdk/root/usr/include|" -e "s|^libdir=.*|libdir=$sdk/lib|" \
        "$pc" >"$sdk/pkgconfig/gstreamer-analytics-1.0.pc"
    else
      echo "demo: could not unpack GstTensorMeta's headers; tensorinfer is not built"
    fi
  fi
  export PKG_CONFIG_PATH=$sdk/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
fi
# A build of its own: the test build (build/) has other options.
scripts/build.sh build-demo -Dbuildtype=release -Dtests=disabled -Dbench=disabled -Dintrospection=disabled

export GST_PLUGIN_PATH=$PWD/build-demo/gst/plugin${bad_plugins:+:$bad_plugins}
infer=""
if [[ -f build-demo/gst/infer/libgsttensorinfer.so ]]; then
  model=build-demo/demo-classifier.onnx
  [[ -s $model ]] || python3 scripts/demo_model.py "$model"
  batch_model=build-demo/demo-classifier-batch.onnx
  [[ -s $batch_model ]] || python3 scripts/demo_model.py "$batch_model" batch
  GST_PLUGIN_PATH=$GST_PLUGIN_PATH:$PWD/build-demo/gst/infer
  infer="tensorinfer model=$model require-zero-copy=true name=infer ! "
else
  echo "demo: no tensorinfer here (no ONNX Runtime header: scripts/onnxruntime-sdk.sh); the chain runs without a model"
fi
# Where GStreamer has GstTensorMeta (1.26), tensorinfer adds the scores to
# the tensor's buffer (output=meta); before that it hands on an other/tensors
# buffer of the scores (output=tensors, its default there).
scores_from="tensorinfer's other/tensors output (GStreamer $(pkg-config --modversion gstreamer-1.0) has no GstTensorMeta)"
pkg-config --exists gstreamer-analytics-1.0 && scores_from="GstTensorMeta"
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
  grep -E 'summary:|converted [0-9]+ frame|tensor [0-9]+x[0-9]+|input [a-z0-9]+ \[' "$log" | sed -E 's/^.*<([^>]+)>[^ ]* /  \1: /' || true
}

# ---- 1. decode -> tensor -> consumer -----------------------------------------
clip=build-demo/demo-clip-1280x720.h264
make_clip "$clip" "$frames"

chain="filesrc location=$clip ! h264parse ! openh264dec ! tensorupload storage=dmabuf require-zero-copy=true name=up ! tensorconvert width=$width height=$height resize=letterbox dtype=float32 layout=nchw mean=<0.485,0.456,0.406> std=<0.229,0.224,0.225> name=convert ! ${infer}tensorcudaimport name=cuda ! tensorsync name=sync ! tensorinspect name=inspect ! fakesink sync=false"
echo
echo "demo: decode -> model tensor -> consumer"
echo "demo: gst-launch-1.0 $chain"
start=$(date +%s.%N)
if ! GST_DEBUG="tensormemtransform:4,tensorconvert:4,tensorupload:4,tensorinfer:4" GST_DEBUG_NO_COLOR=1 \
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
# The tensors of each frame's GstTensorMeta (GStreamer 1.26): tensorconvert's
# input and, with tensorinfer, the model's outputs.
tensors = {}
for m in re.finditer(r'tensorinspect-tensor, .*?id=\(string\)(\S+?), type=\(string\)(\w+), dims=\(string\)([0-9x]+).*?checksum=\(string\)([0-9a-f]+)', text):
    key = (m.group(1), m.group(2), m.group(3))
    tensors.setdefault(key, []).append(m.group(4))
for (tid, ttype, dims), sums in tensors.items():
    print(f"  inspect: GstTensorMeta tensor '{tid}' {ttype} {dims}: {len(sums)} read, last checksum {sums[-1]}")
EOF
echo "  $frames frames decoded and converted in $(elapsed "$start" "$end") s"

scorer=build-demo/examples/infer-top-scores
if [[ -n $infer && -x $scorer ]]; then
  echo
  echo "demo: the model's scores: $scorer $model $clip (top five of the 10 classes per frame, read from $scores_from)"
  if ! "$scorer" "$model" "$clip" >"$log" 2>&1; then
    cat "$log"
    echo "demo: reading the scores failed"
    exit 1
  fi
  grep '^frame ' "$log" | head -n 2 | sed 's/^/  /'
  echo "  ..."
  grep -v '^frame ' "$log" | grep -v 'Schema error' | tail -n 1 | sed 's/^/  /'
fi

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

# ---- 2. four streams, one batch ------------------------------------------------
streams=4
batch_infer=""
[[ -n $infer ]] && batch_infer="tensorinfer model=$batch_model require-zero-copy=true name=infer ! "
batched="tensorbatch name=batch storage=dmabuf require-zero-copy=true ! ${batch_infer}tensorinspect name=inspect ! fakesink sync=false"
for ((i = 0; i < streams; ++i)); do
  batched+=" filesrc location=$clip ! h264parse ! openh264dec ! tensorupload storage=dmabuf require-zero-copy=true name=up$i ! tensorconvert width=$width height=$height resize=letterbox dtype=float32 layout=nchw mean=<0.485,0.456,0.406> std=<0.229,0.224,0.225> require-zero-copy=true name=convert$i ! batch.sink_$i"
done
echo
echo "demo: $streams streams -> one batched tensor (each stream's tensorconvert writes its slot in place) -> ${batch_infer:+one model call per batch -> }consumer"
echo "demo: gst-launch-1.0 $batched"
start=$(date +%s.%N)
if ! GST_DEBUG="tensorbatch:4,tensorinfer:4" GST_DEBUG_NO_COLOR=1 gst-launch-1.0 -e -m $batched >"$log" 2>&1; then
  cat "$log"
  echo "demo: the batch pipeline failed"
  exit 1
fi
end=$(date +%s.%N)
summaries
python3 - "$log" <<'EOF'
import re, sys
text = open(sys.argv[1], errors="replace").read()
batches = re.findall(r'tensorinspect, .*?checksum=\(string\)([0-9a-f]+)', text)
print(f"  inspect: {len(batches)} batches read")
for m in sorted(set(re.findall(r'tensorinspect-tensor, .*?id=\(string\)(\S+?), type=\(string\)(\w+), dims=\(string\)([0-9x]+)', text))):
    print(f"  inspect: GstTensorMeta tensor '{m[0]}' {m[1]} {m[2]} on every batch")
EOF
echo "  $streams x $frames frames decoded, converted and batched in $(elapsed "$start" "$end") s"
if [[ -n $batch_infer && -x $scorer ]]; then
  echo
  echo "demo: the model's scores per batch: $scorer --streams=$streams $batch_model $clip (top five per slot, read from $scores_from)"
  if ! "$scorer" --streams="$streams" "$batch_model" "$clip" >"$log" 2>&1; then
    cat "$log"
    echo "demo: reading the batch scores failed"
    exit 1
  fi
  grep '^batch 0 ' "$log" | sed 's/^/  /'
  echo "  ..."
  grep -v '^batch ' "$log" | grep -v 'Schema error' | tail -n 1 | sed 's/^/  /'
fi

# ---- 3. storage round trips --------------------------------------------------
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

# ---- 4. the ball found, its box on the frame (GStreamer 1.28) ----------------
picture build-demo "$clip"
echo
echo "demo: every pipeline reached EOS; 'copied-bytes' above is what each element copied (tensorupload ran with require-zero-copy=true)"

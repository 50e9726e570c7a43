#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs a real pipeline
# through our elements on the headless defaults, then says what happened.
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

pipeline="videotestsrc num-buffers=$frames pattern=ball ! video/x-raw,format=$format,width=$width,height=$height,framerate=30/1 ! tensorupload storage=auto require-zero-copy=true name=up ! tensordownload name=down ! fakesink sync=false"
echo "demo: gst-launch-1.0 $pipeline"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s.%N)
GST_DEBUG="tensortransform:4" GST_DEBUG_NO_COLOR=1 \
  gst-launch-1.0 -e $pipeline >"$log" 2>&1 || { cat "$log"; echo "demo: the pipeline failed"; exit 1; }
end=$(date +%s.%N)
grep -E 'Setting pipeline|Got EOS|Execution ended' "$log" || true
echo "demo: summary reported by the elements:"
grep -E 'summary:' "$log" | sed -E "s/^.*<([^>]+)>.*summary:/  \\1:/" || { echo "demo: no summary from the elements"; exit 1; }
python3 -c "import sys; print(f\"demo: {sys.argv[1]} frames of {sys.argv[2]}x{sys.argv[3]} {sys.argv[4]} in {float(sys.argv[6]) - float(sys.argv[5]):.2f} s\")" "$frames" "$width" "$height" "$format" "$start" "$end"

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A real decoder writing into our DMA-BUF pool against the same decode into
# identity (issue 13): whole-process wall time of gst-launch-1.0, the two
# pipelines run alternately, median of RUNS each, for avdec_h264 and
# openh264dec on a 1080p H.264 stream of FRAMES frames encoded first with
# openh264enc. Prints a table; docs/performance.md records the latest run and
# docs/performance-history.md the earlier ones.
#
# Usage: tests/bench/decode_bench.sh [BUILD_DIR]   (default: build)
# Environment: FRAMES (120), RUNS (7), WIDTH x HEIGHT (1920x1080),
# TENSORMEM_DMABUF_SOURCE (memfd unless set: no DMA heap is needed).
set -eu

build=${1:-build}
frames=${FRAMES:-120}
runs=${RUNS:-7}
width=${WIDTH:-1920}
height=${HEIGHT:-1080}
export GST_PLUGIN_PATH="$build/gst/plugin"
export TENSORMEM_DMABUF_SOURCE="${TENSORMEM_DMABUF_SOURCE:-memfd}"

if [ ! -e "$GST_PLUGIN_PATH/libgsttensormem.so" ]; then
  echo "no plugin in $GST_PLUGIN_PATH: build first (ninja -C $build)" >&2
  exit 1
fi
for element in openh264enc h264parse; do
  if ! gst-inspect-1.0 --exists "$element"; then
    echo "$element is not installed: cannot make the stream" >&2
    exit 1
  fi
done

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
stream="$dir/stream.h264"
gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=ball \
  ! "video/x-raw,format=I420,width=$width,height=$height,framerate=30/1" \
  ! openh264enc bitrate=8000000 ! h264parse ! filesink location="$stream" >/dev/null

# Seconds one run of the pipeline middle `$2` after decoder `$1` takes.
time_run() {
  start=$(date +%s.%N)
  # shellcheck disable=SC2086 # the middle is a pipeline fragment
  gst-launch-1.0 -q filesrc location="$stream" ! h264parse ! "$1" ! $2 ! fakesink >/dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

tensor="tensorupload storage=dmabuf require-zero-copy=true ! tensordownload"
printf '| decoder | into identity (s) | into %s (s) | ratio |\n' "\`$tensor\`"
printf '|---|---|---|---|\n'
for decoder in avdec_h264 openh264dec; do
  if ! gst-inspect-1.0 --exists "$decoder"; then
    printf '| %s | not installed | | |\n' "$decoder"
    continue
  fi
  : >"$dir/plain" && : >"$dir/tensor"
  i=0
  while [ "$i" -lt "$runs" ]; do
    time_run "$decoder" identity >>"$dir/plain"
    time_run "$decoder" "$tensor" >>"$dir/tensor"
    i=$((i + 1))
  done
  plain=$(median <"$dir/plain")
  tensor_s=$(median <"$dir/tensor")
  ratio=$(printf "%.2f" "$(echo "scale=4; $tensor_s / $plain" | bc)")
  printf '| %s | %.3f | %.3f | %s× |\n' "$decoder" "$plain" "$tensor_s" "$ratio"
done
echo "($frames frames of ${width}x${height} I420, median of $runs alternating runs each, TENSORMEM_DMABUF_SOURCE=$TENSORMEM_DMABUF_SOURCE)"

#!/usr/bin/env bash
# Side-by-side wall time of whole gst-launch-1.0 processes: our elements
# against what a user would otherwise run, in one run, alternating the
# pipelines so that machine noise hits each of them alike.
#
#   tests/bench/pipelines_vs_gstreamer.sh [BUILD_DIR] [ROUNDS]
#
# Each row is the median over ROUNDS (default 7) runs of one pipeline; the
# ratio column divides it by the row it is compared with. The sink maps every
# frame (filesink to /dev/null), so a pipeline cannot win by never touching
# the bytes. GstGL needs a window system: the script re-executes itself under
# xvfb-run when DISPLAY is unset. Not a test: it asserts nothing;
# docs/performance.md quotes its latest run (earlier ones:
# docs/performance-history.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
rounds=${2:-7}
if [[ -z ${DISPLAY:-} ]] && command -v xvfb-run >/dev/null; then
  exec xvfb-run -a -s "-screen 0 1280x1024x24 -noreset" "$0" "$build" "$rounds"
fi
export GST_PLUGIN_PATH=$PWD/$build/gst/plugin
export GST_REGISTRY=$PWD/$build/bench-registry.bin
# DMA-BUF memory from memfd where the machine has no DMA heap (as the tests).
[[ -d /dev/dma_heap ]] || export TENSORMEM_DMABUF_SOURCE=${TENSORMEM_DMABUF_SOURCE:-memfd}
gst-inspect-1.0 tensorupload >/dev/null || { echo "tensorupload not found in $build/gst/plugin" >&2; exit 1; }
gst-inspect-1.0 glupload >/dev/null 2>&1 || echo "note: glupload is missing (gstreamer1.0-gl); its rows fail" >&2

# name|source and caps|middle[|environment]; every pipeline ends in the
# same sink. The
# source fills a solid colour, the cheapest fill it has, so that the rows
# differ by what the middle costs.
big="videotestsrc num-buffers=300 pattern=solid-color ! video/x-raw,format=RGBA,width=1920,height=1080,framerate=30/1"
small="videotestsrc num-buffers=20000 pattern=solid-color ! video/x-raw,format=RGBA,width=64,height=64,framerate=30/1"
sink="filesink location=/dev/null"
cases=(
  "1080p identity|$big|identity"
  "1080p glupload ! gldownload|$big|glupload ! gldownload"
  "1080p tensorupload storage=pbo ! tensordownload|$big|tensorupload storage=pbo ! tensordownload"
  # GstGL interop: GstGL's textures into our PBOs on the GPU, against
  # GstGL's own download, both with GstGL on EGL (it cannot share with our
  # EGL worker from GLX, its X11 default; docs/pbo.md).
  "1080p glupload ! gldownload (EGL)|$big|glupload ! gldownload|GST_GL_PLATFORM=egl"
  "1080p glupload ! tensorupload storage=pbo ! tensordownload (EGL)|$big|glupload ! tensorupload storage=pbo ! tensordownload|GST_GL_PLATFORM=egl"
  "64x64 identity ! identity|$small|identity ! identity"
  "64x64 glupload ! gldownload|$small|glupload ! gldownload"
  "64x64 tensorupload storage=pbo ! tensordownload|$small|tensorupload storage=pbo ! tensordownload"
  "64x64 tensorupload storage=system ! tensordownload|$small|tensorupload storage=system ! tensordownload"
  "64x64 tensorupload storage=dmabuf ! tensordownload|$small|tensorupload storage=dmabuf ! tensordownload"
)
# a row -> the row it is compared with
declare -A versus=(
  ["1080p glupload ! gldownload"]="1080p identity"
  ["1080p tensorupload storage=pbo ! tensordownload"]="1080p glupload ! gldownload"
  ["1080p glupload ! tensorupload storage=pbo ! tensordownload (EGL)"]="1080p glupload ! gldownload (EGL)"
  ["64x64 glupload ! gldownload"]="64x64 identity ! identity"
  ["64x64 tensorupload storage=pbo ! tensordownload"]="64x64 glupload ! gldownload"
  ["64x64 tensorupload storage=system ! tensordownload"]="64x64 identity ! identity"
  ["64x64 tensorupload storage=dmabuf ! tensordownload"]="64x64 identity ! identity"
)

declare -A times
for ((r = 0; r < rounds; ++r)); do
  for c in "${cases[@]}"; do
    IFS='|' read -r name src middle environment <<<"$c"
    start=$(date +%s.%N)
    # shellcheck disable=SC2086 # the pipeline text is meant to split into words
    if env ${environment:-} gst-launch-1.0 -q $src ! $middle ! $sink >/dev/null 2>&1; then
      end=$(date +%s.%N)
      times[$name]+="$(echo "$end - $start" | bc) "
    else
      times[$name]+="fail "
    fi
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
declare -A med
for c in "${cases[@]}"; do
  IFS='|' read -r name _ <<<"$c"
  if [[ ${times[$name]} == *fail* ]]; then med[$name]=fail; else med[$name]=$(echo "${times[$name]}" | median); fi
done
printf '| pipeline middle | median s (of %d) | compared with | ratio |\n|---|---|---|---|\n' "$rounds"
for c in "${cases[@]}"; do
  IFS='|' read -r name _ <<<"$c"
  ref=${versus[$name]:-}
  ratio="—"
  if [[ -n $ref && ${med[$name]} != fail && ${med[$ref]:-fail} != fail ]]; then
    ratio=$(echo "scale=2; ${med[$name]} / ${med[$ref]}" | bc)
  fi
  printf '| `%s` | %s | %s | %s |\n' "$name" "${med[$name]}" "${ref:-—}" "$ratio"
done

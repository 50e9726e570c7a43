#!/usr/bin/env bash
# Instructions per buffer of the zero-copy tensorupload ! tensordownload pairs
# beside identity ! identity, counted by valgrind's callgrind on the
# streaming thread: a figure that other processes on the machine cannot
# move, unlike the CPU times of bench-pair-overhead and
# per_buffer_overhead.sh (which it complements; instructions are not time).
#
#   tests/bench/instructions_per_buffer.sh [BUILD_DIR]
#
# Each pipeline (videotestsrc pattern=solid-color ! 64x64 RGBA ! <middle> !
# fakesink) runs under callgrind --separate-threads at N1 and at N2 buffers
# (environment; defaults 1000 and 3000); the streaming thread's count at N2
# minus that at N1, divided by N2 - N1, is what one buffer costs there.
# Asserts nothing; docs/performance.md records its latest run (earlier ones:
# docs/performance-history.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
[[ $build == /* ]] || build=$PWD/$build
n1=${N1:-1000}
n2=${N2:-3000}
command -v valgrind >/dev/null || { echo "needs valgrind (Debian package valgrind)" >&2; exit 77; }
export GST_PLUGIN_PATH=$build/gst/plugin
export GST_REGISTRY=$build/bench-registry.bin
[[ -d /dev/dma_heap ]] || export TENSORMEM_DMABUF_SOURCE=${TENSORMEM_DMABUF_SOURCE:-memfd}
# Brings the registry up to date outside the counted runs.
gst-inspect-1.0 tensorupload >/dev/null || { echo "tensorupload not found in $build/gst/plugin" >&2; exit 1; }

caps="video/x-raw,format=RGBA,width=64,height=64,framerate=30/1"
middles=(
  "identity ! identity"
  "tensorupload storage=system ! tensordownload"
  "tensorupload storage=dmabuf ! tensordownload"
)

# Instructions of the streaming thread (callgrind's second thread: the first
# is the application's) over a run of $1 buffers through middle $2.
streaming_instructions() {
  local dir
  dir=$(mktemp -d)
  # shellcheck disable=SC2086 # the pipeline text is meant to split into words
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/cg" gst-launch-1.0 -q \
    videotestsrc num-buffers="$1" pattern=solid-color ! $caps ! $2 ! fakesink >/dev/null 2>&1
  sed -n 's/^summary: //p' "$dir/cg-02"
  rm -rf "$dir"
}

echo "Instructions per buffer on the streaming thread (callgrind; runs of $n2 and $n1 buffers), 64x64 RGBA"
echo
echo "| pipeline middle | instructions per buffer | ratio |"
echo "|---|---|---|"
base=""
for middle in "${middles[@]}"; do
  a=$(streaming_instructions "$n1" "$middle")
  b=$(streaming_instructions "$n2" "$middle")
  per=$(((b - a) / (n2 - n1)))
  [[ -n $base ]] || base=$per
  echo "| \`$middle\` | $per | $(awk -v p="$per" -v b="$base" 'BEGIN {printf "%.2f", p / b}') |"
done

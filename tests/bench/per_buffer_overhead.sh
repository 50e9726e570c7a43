#!/usr/bin/env bash
# CPU time per buffer of zero-copy tensorupload ! tensordownload pairs, side
# by side with identity ! identity (issue 13: a pair must cost ≤ 1.1× it).
#
#   tests/bench/per_buffer_overhead.sh [BUILD_DIR] [ROUNDS]
#
# Each pipeline runs as a whole gst-launch-1.0 process at SHORT (20 000) and
# LONG (200 000) buffers of 64×64 RGBA; what one buffer costs is the
# difference of the two CPU times divided by LONG - SHORT, so start-up
# (plugin loading, EGL, caps negotiation) drops out. CPU time of all threads
# (perf's task-clock, or user + system from /usr/bin/time where perf cannot
# count) and not wall time, because the machine is
# shared: other processes steal wall time but not our CPU time. The runs
# alternate pipeline by pipeline, ROUNDS (default 5) times, and each figure is
# the median (and the least, see the table). Not a test: it asserts nothing;
# docs/performance-history.md records its runs, docs/performance.md the range
# of its latest.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
rounds=${2:-5}
short=${SHORT:-20000}
long=${LONG:-200000}
[[ $build == /* ]] || build=$PWD/$build
export GST_PLUGIN_PATH=$build/gst/plugin
export GST_REGISTRY=$build/bench-registry.bin
[[ -d /dev/dma_heap ]] || export TENSORMEM_DMABUF_SOURCE=${TENSORMEM_DMABUF_SOURCE:-memfd}
gst-inspect-1.0 tensorupload >/dev/null || { echo "tensorupload not found in $build/gst/plugin" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 77; }

caps="video/x-raw,format=RGBA,width=64,height=64,framerate=30/1"
middles=(
  "identity ! identity"
  "tensorupload storage=system ! tensordownload"
  "tensorupload storage=dmabuf ! tensordownload"
)

# perf's task-clock counts CPU time in nanoseconds; /usr/bin/time in 10 ms
# steps (0.06 µs per buffer here). perf where it runs, time otherwise.
if perf stat -x, -e task-clock true >/dev/null 2>&1; then clock=perf; else clock=time; fi

# CPU seconds (user + system, all threads) of one whole process.
cpu_time() {
  local n=$1 middle=$2 out
  out=$(mktemp)
  # shellcheck disable=SC2086 # the pipeline text is meant to split into words
  if [[ $clock == perf ]]; then
    if perf stat -x, -e task-clock -o "$out" gst-launch-1.0 -q videotestsrc num-buffers=$n pattern=solid-color \
      ! $caps ! $middle ! fakesink >/dev/null 2>&1; then
      awk -F, '$3 == "task-clock" {printf "%.4f", $1 / 1000}' "$out"
    else
      echo fail
    fi
  elif /usr/bin/time -o "$out" -f "%U %S" gst-launch-1.0 -q videotestsrc num-buffers=$n pattern=solid-color \
    ! $caps ! $middle ! fakesink >/dev/null 2>&1; then
    awk '{printf "%.3f", $1 + $2}' "$out"
  else
    echo fail
  fi
  rm -f "$out"
}

declare -A t_short t_long
for ((r = 0; r < rounds; ++r)); do
  for m in "${middles[@]}"; do
    t_short[$m]+="$(cpu_time "$short" "$m") "
    t_long[$m]+="$(cpu_time "$long" "$m") "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
least() { tr ' ' '\n' | grep -v '^$' | sort -g | head -1; }
load=$(cut -d' ' -f1-3 /proc/loadavg)
printf 'CPU time (%s) of %d alternating rounds; load average %s\n' \
  "$([[ $clock == perf ]] && echo "perf task-clock" || echo "user+sys from /usr/bin/time")" "$rounds" "$load"
printf 'median: the middle run of each length; least: the fastest run of each (another process on the\n'
printf 'cores only ever adds CPU time, through caches and shared execution units)\n\n'
printf '| pipeline middle | CPU s at %d (median) | CPU s at %d (median) | µs per buffer: median | ratio | least | ratio |\n' "$short" "$long"
printf '|---|---|---|---|---|---|---|\n'
ref=""
ref_least=""
for m in "${middles[@]}"; do
  if [[ ${t_short[$m]}${t_long[$m]} == *fail* ]]; then
    printf '| `%s` | fail | fail | — | — | — | — |\n' "$m"
    continue
  fi
  s=$(echo "${t_short[$m]}" | median)
  l=$(echo "${t_long[$m]}" | median)
  per=$(echo "scale=3; ($l - $s) * 1000000 / ($long - $short)" | bc)
  per_least=$(echo "scale=3; ($(echo "${t_long[$m]}" | least) - $(echo "${t_short[$m]}" | least)) * 1000000 / ($long - $short)" | bc)
  [[ -n $ref ]] || ref=$per
  [[ -n $ref_least ]] || ref_least=$per_least
  ratio=$(echo "scale=2; $per / $ref" | bc)
  ratio_least=$(echo "scale=2; $per_least / $ref_least" | bc)
  printf '| `%s` | %s | %s | %s | %s | %s | %s |\n' "$m" "$s" "$l" "$per" "$ratio" "$per_least" "$ratio_least"
done

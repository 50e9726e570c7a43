#!/usr/bin/env bash
# Many streams into one model (issue 26): N decoded 1080p H.264 streams
# batched by tensorbatch into one model call per batch, against the same N
# streams each through its own tensorconvert ! tensorinfer chain, in the
# same run.
#
#   tests/bench/batch_vs_chains.sh [BUILD_DIR] [ROUNDS] [FRAMES] [STREAMS...]
#
#   decode only: N x (filesrc ! h264parse ! openh264dec ! fakesink)
#   chains:      N x (... ! openh264dec ! tensorconvert width=S height=S ! tensorinfer model=classifier.onnx ! fakesink)
#   batched:     N x (... ! openh264dec ! tensorconvert width=S height=S ! b.sink_i)
#                tensorbatch name=b ! tensorinfer model=classifier_batch.onnx ! fakesink
#
# for each tensor size S of SIZES (environment; default "224 640") and each
# tensorconvert path of PATHS (default "cpu gl": storage=system, or storage=pbo,
# whose tensors are PBOs written by the GL pass, and batched into one PBO per
# batch, each pass writing its slot; tensorinfer reads the PBO in place).
#
# All N streams run in one gst-launch-1.0 process. The models are
# tests/gst/infer_models.py's small classifier (pre-processing and per-call
# overhead dominate) with the same weights, batch 1 and an open batch. The
# clip (FRAMES frames, default 60) is encoded once with openh264enc. Each
# cell is the median over ROUNDS (default 3) runs of wall and CPU (user +
# system) time per frame, a frame being one stream's; the ratio divides
# batched by chains. STREAMS defaults to 4 and 8. Needs tensorinfer (Debian
# 13, ONNX Runtime). Not a test: it asserts nothing; docs/performance.md
# quotes its latest run.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-debian13/build}
rounds=${2:-3}
frames=${3:-60}
shift $(($# < 3 ? $# : 3))
streams=("$@")
((${#streams[@]})) || streams=(4 8)
export GST_PLUGIN_PATH=$PWD/$build/gst/plugin:$PWD/$build/gst/infer
export GST_REGISTRY=$PWD/$build/bench-batch-registry.bin
for element in tensorinfer tensorbatch openh264enc openh264dec; do
  gst-inspect-1.0 "$element" >/dev/null 2>&1 || { echo "$element is missing (see the header)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 tests/gst/infer_models.py make "$work" 2>/dev/null >/dev/null
clip=$work/clip.h264
gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=ball ! \
  video/x-raw,format=I420,width=1920,height=1080,framerate=30/1 ! openh264enc bitrate=8000000 ! \
  h264parse ! filesink location="$clip" >/dev/null 2>&1
decode="filesrc location=$clip ! h264parse ! openh264dec"
read -r -a sizes <<<"${SIZES:-224 640}"
read -r -a paths <<<"${PATHS:-cpu gl}"
kinds=(decode)
for size in "${sizes[@]}"; do
  for path in "${paths[@]}"; do
    kinds+=("chains/$size/$path" "batched/$size/$path")
  done
done

pipeline() { # kind n; kind is decode or chains|batched/SIZE/PATH
  local kind=${1%%/*} n=$2 text="" i size path model convert
  IFS=/ read -r _ size path <<<"$1"
  model=$work/classifier$([[ $size == 224 ]] || echo "$size")
  local storage=system
  [[ $path == gl ]] && storage=pbo
  convert="tensorconvert storage=$storage width=$size height=$size resize=letterbox layout=nchw dtype=float32"
  [[ $kind == batched ]] && text="tensorbatch name=b ! tensorinfer model=${model}_batch.onnx ! fakesink "
  for ((i = 0; i < n; ++i)); do
    case $kind in
    decode) text+="$decode ! fakesink " ;;
    chains) text+="$decode ! $convert ! tensorinfer model=$model.onnx ! fakesink " ;;
    batched) text+="$decode ! $convert ! b.sink_$i " ;;
    esac
  done
  echo "$text"
}

declare -A wall cpu
TIMEFORMAT='%R %U %S'
for ((r = 0; r < rounds; ++r)); do
  for n in "${streams[@]}"; do
    for kind in "${kinds[@]}"; do
      # shellcheck disable=SC2046 # the pipeline text is meant to split into words
      if t=$({ time gst-launch-1.0 -q $(pipeline "$kind" "$n") >/dev/null 2>&1; } 2>&1); then
        read -r real user sys <<<"$t"
        wall[$n $kind]+="$real "
        cpu[$n $kind]+="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') "
      else
        wall[$n $kind]+="fail "
        cpu[$n $kind]+="fail "
      fi
    done
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
per_frame() { # seconds of the whole run, streams -> ms per stream frame
  if [[ $1 == fail ]]; then echo fail; else awk -v t="$1" -v n="$((frames * $2))" 'BEGIN { printf "%.2f", 1000 * t / n }'; fi
}
printf '%s frames of 1080p H.264 per stream, SxS float32 NCHW, median of %s runs\n\n' "$frames" "$rounds"
printf '| %-7s | %-18s | %14s | %14s | %16s | %16s |\n' streams "pipeline/S/path" "wall ms/frame" "CPU ms/frame" \
  "wall vs chains" "CPU vs chains"
printf '|---------|--------------------|----------------|----------------|------------------|------------------|\n'
for n in "${streams[@]}"; do
  for kind in "${kinds[@]}"; do
    w=$(echo "${wall[$n $kind]}" | median)
    u=$(echo "${cpu[$n $kind]}" | median)
    wr="" cr=""
    if [[ $kind == batched/* ]]; then
      gw=$(echo "${wall[$n chains/${kind#batched/}]}" | median)
      gu=$(echo "${cpu[$n chains/${kind#batched/}]}" | median)
      if [[ $w != fail && $gw != fail ]]; then
        wr=$(awk -v a="$w" -v b="$gw" 'BEGIN { printf "%.2fx", a / b }')
        cr=$(awk -v a="$u" -v b="$gu" 'BEGIN { printf "%.2fx", a / b }')
      fi
    fi
    printf '| %-7s | %-18s | %14s | %14s | %16s | %16s |\n' "$n" "$kind" "$(per_frame "$w" "$n")" \
      "$(per_frame "$u" "$n")" "$wr" "$cr"
  done
done

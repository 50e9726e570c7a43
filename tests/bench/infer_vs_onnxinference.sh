#!/usr/bin/env bash
# Side by side, the same decoded frames into the same model: GStreamer's own
# inference chain against ours (issue 25).
#
#   tests/bench/infer_vs_onnxinference.sh [BUILD_DIR] [ROUNDS] [FRAMES]
#
#   gstreamer: decode ! videoconvert ! videoscale ! RGB 224x224 ! onnxinference
#   ours:      decode ! tensorconvert width=224 height=224 (output=meta) ! tensorinfer
#
# The clip (1080p H.264, FRAMES frames, default 120) is encoded once with
# openh264enc; every row decodes it with openh264dec, and a "decode only" row
# shows what decoding costs alone. Models: the small classifier of
# tests/gst/infer_models.py (pre-processing dominates) and, where
# libonnx-testdata is installed, light_resnet50 (the model dominates); both
# carry the output-name metadata onnxinference 1.26 requires and the
# .modelinfo file 1.28's requires. Each cell is
# the median over ROUNDS (default 5) runs of wall and CPU (user + system)
# time per frame of a whole process, and of the CPU one more frame costs
# (below); the ratios divide ours by GStreamer's. Both sessions use
# ONNX Runtime's default thread count and all graph optimisations
# (onnxinference defaults to none: set to enable-all here, as a user would). Needs gst-plugins-bad's onnx plugin
# (Debian 13, GStreamer 1.26; Debian testing, 1.28). Not a test: it asserts nothing; docs/performance.md quotes
# its latest run.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-debian13/build}
rounds=${2:-5}
frames=${3:-120}
export GST_PLUGIN_PATH=$PWD/$build/gst/plugin:$PWD/$build/gst/infer
export GST_REGISTRY=$PWD/$build/bench-infer-registry.bin
for element in tensorinfer onnxinference openh264enc; do
  gst-inspect-1.0 "$element" >/dev/null 2>&1 || { echo "$element is missing (see the header)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Debian's ONNX packages print a screen of "Schema error" lines on stderr.
python3 tests/gst/infer_models.py make "$work" 2>/dev/null >/dev/null
# Both models through `annotate`: the output-name metadata onnxinference 1.26
# reads, and the .modelinfo 1.28's reads (and tensorinfer, same ids).
python3 tests/gst/infer_models.py annotate "$work/classifier.onnx" "$work/small.onnx" 2>/dev/null >/dev/null
models=("small|$work/small.onnx")
light=/usr/share/libonnx-testdata/data/light/light_resnet50.onnx
if [[ -f $light ]]; then
  python3 tests/gst/infer_models.py annotate "$light" "$work/resnet50.onnx" 2>/dev/null >/dev/null
  models+=("resnet50|$work/resnet50.onnx")
else
  echo "note: $light is missing (Debian: libonnx-testdata); the large-model rows are left out" >&2
fi

# Two clips, FRAMES and 2 x FRAMES long: a whole process costs its start
# (loading ONNX Runtime, making the session) once, so the difference of the
# two runs over FRAMES is what one more frame costs, the steady state.
for n in "$frames" $((2 * frames)); do
  gst-launch-1.0 -q videotestsrc num-buffers="$n" pattern=ball ! \
    video/x-raw,format=I420,width=1920,height=1080,framerate=30/1 ! openh264enc bitrate=8000000 ! \
    h264parse ! filesink location="$work/clip-$n.h264" >/dev/null 2>&1
done
decode_of() { echo "filesrc location=$work/clip-$1.h264 ! h264parse ! openh264dec"; }

# GStreamer 1.26's onnxinference takes its pre-processing as properties;
# 1.28's reads it from MODEL.modelinfo (ranges 0,1 from 8-bit RGB: the same
# scaling).
upstream_settings=""
# (grep reads all: with pipefail, -q's early exit would fail gst-inspect.)
if gst-inspect-1.0 onnxinference 2>/dev/null | grep -c input-image-format >/dev/null; then
  upstream_settings="input-image-format=chw input-tensor-scale=255"
fi
printf 'GStreamer %s, ONNX Runtime of onnxinference and tensorinfer alike\n' \
  "$(gst-inspect-1.0 --version | sed -n 's/^GStreamer //p')"

# name|pipeline after the decoder
cases=("decode only|fakesink")
for m in "${models[@]}"; do
  IFS='|' read -r label file <<<"$m"
  cases+=("$label gstreamer|videoconvert ! videoscale ! video/x-raw,format=RGB,width=224,height=224 ! onnxinference model-file=$file optimization-level=enable-all $upstream_settings ! fakesink")
  cases+=("$label ours|tensorconvert width=224 height=224 layout=nchw dtype=float32 output=meta ! tensorinfer model=$file ! fakesink")
done

declare -A wall cpu marginal
TIMEFORMAT='%R %U %S'
for ((r = 0; r < rounds; ++r)); do
  for c in "${cases[@]}"; do
    IFS='|' read -r name middle <<<"$c"
    long_cpu=fail
    # shellcheck disable=SC2086 # the pipeline text is meant to split into words
    if t=$({ time gst-launch-1.0 -q $(decode_of $((2 * frames))) ! $middle >/dev/null 2>&1; } 2>&1); then
      read -r _ user sys <<<"$t"
      long_cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
    fi
    # shellcheck disable=SC2086
    if t=$({ time gst-launch-1.0 -q $(decode_of "$frames") ! $middle >/dev/null 2>&1; } 2>&1) && [[ $long_cpu != fail ]]; then
      read -r real user sys <<<"$t"
      wall[$name]+="$real "
      cpu[$name]+="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') "
      marginal[$name]+="$(awk -v l="$long_cpu" -v u="$user" -v s="$sys" 'BEGIN { print l - u - s }') "
    else
      wall[$name]+="fail "
      cpu[$name]+="fail "
      marginal[$name]+="fail "
    fi
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
per_frame() { # seconds of the whole run -> ms per frame
  if [[ $1 == fail ]]; then echo fail; else awk -v t="$1" -v n="$frames" 'BEGIN { printf "%.2f", 1000 * t / n }'; fi
}
printf '%s frames of 1080p H.264, median of %s runs; "per more frame": the CPU of a\n' "$frames" "$rounds"
printf '%s-frame run less this one, over %s (the start paid once drops out)\n\n' $((2 * frames)) "$frames"
printf '| %-20s | %9s | %9s | %10s | %14s | %18s |\n' pipeline "wall ms" "CPU ms" "CPU vs gst" "CPU per more" "per more vs gst"
printf '|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..22})" "$(printf -- '-%.0s' {1..11})" "$(printf -- '-%.0s' {1..11})" \
  "$(printf -- '-%.0s' {1..12})" "$(printf -- '-%.0s' {1..16})" "$(printf -- '-%.0s' {1..20})"
ratio() { if [[ $1 == fail || $2 == fail ]]; then echo ""; else awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; fi; }
for c in "${cases[@]}"; do
  IFS='|' read -r name _ <<<"$c"
  w=$(echo "${wall[$name]}" | median)
  u=$(echo "${cpu[$name]}" | median)
  m=$(echo "${marginal[$name]}" | median)
  cr="" mr=""
  if [[ $name == *" ours" ]]; then
    other=${name% ours}" gstreamer"
    cr=$(ratio "$u" "$(echo "${cpu[$other]}" | median)")
    mr=$(ratio "$m" "$(echo "${marginal[$other]}" | median)")
  fi
  printf '| %-20s | %9s | %9s | %10s | %14s | %18s |\n' "$name" "$(per_frame "$w")" "$(per_frame "$u")" "$cr" \
    "$(per_frame "$m")" "$mr"
done

#!/usr/bin/env bash
# GstGL textures into tensor memory, side by side with GstGL's own
# gldownload: whole gst-launch-1.0 processes, 1080p RGBA, 300 frames into
# filesink location=/dev/null, alternating the pipelines each round, median
# wall time of ROUNDS (default 5). Rows by the source of the textures:
#   glupload   - GstGL keeps the CPU copy it uploaded from, so gldownload
#                hands that back without any GL transfer, while tensorupload
#                must read the texture;
#   gltestsrc  - textures drawn on the GL side: both must read them back;
# each with every readback path of ours (TENSORMEM_GL_TEXTURE_READ) on EGL,
# and the CPU route on GLX (GstGL's X11 default).
#
#   tests/bench/gstgl_texture_read.sh [BUILD_DIR] [ROUNDS]
#
# Not a test: it asserts nothing; docs/performance.md records its latest run
# (earlier ones: docs/performance-history.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
rounds=${2:-5}
if [[ -z ${DISPLAY:-} ]] && command -v xvfb-run >/dev/null; then
  exec xvfb-run -a -s "-screen 0 1280x1024x24 -noreset" "$0" "$build" "$rounds"
fi
export GST_PLUGIN_PATH=$PWD/$build/gst/plugin
export GST_REGISTRY=$PWD/$build/bench-registry.bin
gst-inspect-1.0 tensorupload >/dev/null || { echo "tensorupload not found in $build/gst/plugin" >&2; exit 1; }
gst-inspect-1.0 gltestsrc >/dev/null 2>&1 || { echo "GstGL (gstreamer1.0-gl) is missing" >&2; exit 1; }

caps="format=RGBA,width=1920,height=1080,framerate=30/1"
up="videotestsrc num-buffers=300 pattern=solid-color ! video/x-raw,$caps ! glupload"
drawn="gltestsrc num-buffers=300 pattern=white ! video/x-raw(memory:GLMemory),$caps"
ours="tensorupload storage=pbo ! tensordownload"
egl="GST_GL_PLATFORM=egl"
# name|pipeline up to the sink|environment|row compared with
cases=(
  "glupload ! gldownload (EGL)|$up ! gldownload|$egl|"
  "glupload ! ours, readpixels (auto)|$up ! $ours|$egl|glupload ! gldownload (EGL)"
  "glupload ! ours, gettexture|$up ! $ours|$egl TENSORMEM_GL_TEXTURE_READ=gettexture|glupload ! gldownload (EGL)"
  "glupload ! ours, mapped|$up ! $ours|$egl TENSORMEM_GL_TEXTURE_READ=mapped|glupload ! gldownload (EGL)"
  "glupload ! ours, compute|$up ! $ours|$egl TENSORMEM_GL_TEXTURE_READ=compute|glupload ! gldownload (EGL)"
  "gltestsrc ! gldownload (EGL)|$drawn ! gldownload|$egl|"
  "gltestsrc ! ours, readpixels (auto)|$drawn ! $ours|$egl|gltestsrc ! gldownload (EGL)"
  "gltestsrc ! ours, compute|$drawn ! $ours|$egl TENSORMEM_GL_TEXTURE_READ=compute|gltestsrc ! gldownload (EGL)"
  "glupload ! gldownload (GLX)|$up ! gldownload||"
  "glupload ! ours, CPU copy (GLX)|$up ! $ours||glupload ! gldownload (GLX)"
  "gltestsrc ! gldownload (GLX)|$drawn ! gldownload||"
  "gltestsrc ! ours, CPU copy (GLX)|$drawn ! $ours||gltestsrc ! gldownload (GLX)"
)

declare -A times
for ((r = 0; r < rounds; ++r)); do
  for c in "${cases[@]}"; do
    IFS='|' read -r name pipeline environment _ <<<"$c"
    start=$(date +%s.%N)
    # shellcheck disable=SC2086 # the pipeline text is meant to split into words
    if env -u GST_GL_PLATFORM ${environment:-} gst-launch-1.0 -q $pipeline ! filesink location=/dev/null \
      >/dev/null 2>&1; then
      times[$name]+="$(echo "$(date +%s.%N) - $start" | bc) "
    else
      times[$name]+="fail "
    fi
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
printf '| pipeline | median s (of %d) | ms a frame | compared with | ratio |\n|---|---|---|---|---|\n' "$rounds"
declare -A med
for c in "${cases[@]}"; do
  IFS='|' read -r name _ _ ref <<<"$c"
  ratio="—" per_frame="—"
  if [[ ${times[$name]} == *fail* ]]; then
    med[$name]=fail
  else
    med[$name]=$(echo "${times[$name]}" | median)
    per_frame=$(echo "scale=2; ${med[$name]} * 1000 / 300" | bc)
  fi
  if [[ -n $ref && ${med[$name]} != fail && ${med[$ref]:-fail} != fail ]]; then
    ratio=$(echo "scale=2; ${med[$name]} / ${med[$ref]}" | bc)
  fi
  printf '| `%s` | %s | %s | %s | %s |\n' "$name" "${med[$name]}" "$per_frame" "${ref:-—}" "$ratio"
done

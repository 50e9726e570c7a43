#!/usr/bin/env bash
# Installs the Debian packages that the build, the tests, the benchmarks and
# the demo need, and brings them (and the graphics and GStreamer libraries
# they load at run time) to Debian's current versions, so that a developer's
# machine and a fresh CI machine run the same code. Idempotent: when every
# package is present at its candidate version it changes nothing. The package
# lists are refreshed when they are older than a day
# (TENSORMEM_DEPS_REFRESH=always|never overrides).
#   scripts/deps.sh          everything (scripts/test.sh, CI)
#   scripts/deps.sh --demo   only what building and running the demo need
#                            (scripts/demo.sh): no test tool chain, no Wine
#   scripts/deps.sh --quick-linux
#                            what the quick Linux suites need (build/ and its
#                            tests, Python tests included), without the tools
#                            only the host's other runs use: no MinGW-w64,
#                            Wine, valgrind or debootstrap (the Debian 13
#                            root of scripts/test.sh --debian13)
# Works on Debian 12 and 13: the names below are Debian 12's, and each
# resolves to its Debian 13 name where that differs (resolve, below).
set -euo pipefail

mode=all
for arg in "$@"; do
  case "$arg" in
    --demo) mode=demo ;;
    --quick-linux) mode=quick-linux ;;
    *) echo "usage: $0 [--demo|--quick-linux]" >&2; exit 2 ;;
  esac
done

# Building libtensormem, libgsttensormem and the plugin, and running the
# demo's pipelines: headless GL, and the H.264 elements' libraries. The demo
# uses two plugins of gstreamer1.0-plugins-bad (openh264, h264parse), which
# scripts/demo.sh unpacks from the package rather than installs: installing
# it adds 165 packages (88 MB on Debian 12) that the demo never loads, 14 s
# of dpkg on a quiet fresh machine and minutes on a loaded one (docs/ci-timings.md).
# Here: their libraries (the openh264 codec, GStreamer's codec parsers).
demo_packages=(
  meson ninja-build pkg-config g++ python3
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base libgstreamer-plugins-bad1.0-0
  libxxhash-dev libdlpack-dev
  libepoxy-dev libegl-dev libegl-mesa0 libgl1-mesa-dri libglx-mesa0 libgbm1 libglapi-mesa
)
# The demo's tensorinfer step. Debian 13: ONNX Runtime's headers (its
# library comes with gstreamer1.0-plugins-bad's onnxinference); GStreamer
# 1.26's analytics headers (GstTensorMeta) are unpacked by scripts/demo.sh
# instead of installed: their package pulls in OpenCV's development files.
# Debian 12 packages no ONNX Runtime: scripts/onnxruntime-sdk.sh (below)
# takes npm's library and Debian 13's header, with npm itself where the
# machine has none. The model is written by scripts/demo_model.py with the
# standard library (no python3-onnx, numpy).
# Debian 13 and later (testing, forky, has no VERSION_ID) package it.
release=$(. /etc/os-release && echo "${VERSION_ID:-}")
own_onnxruntime=0
if [[ $release == 12 ]]; then
  demo_packages+=(libopenh264-7)
  own_onnxruntime=1
  command -v npm >/dev/null || demo_packages+=(npm)
else
  demo_packages+=(libonnxruntime-dev libopenh264-8)
fi
# GStreamer 1.28 (Debian testing, no VERSION_ID): the demo's picture
# (section 4) takes upstream's tensor decoders and overlay
# (gstreamer1.0-plugins-bad) and writes its detector with python3-onnx.
if [[ -z $release ]]; then
  demo_packages+=(gstreamer1.0-plugins-bad python3-onnx python3-numpy)
fi

packages=(
  meson ninja-build pkg-config g++ python3
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  # checksumsink, openh264, h264parse for tests and benchmarks; GstGL for the
  # benchmarks that compare against glupload/gldownload; avdec_h264 for the
  # decoder tests and tests/bench/decode_bench.sh (its cases skip without it).
  gstreamer1.0-plugins-bad gstreamer1.0-gl gstreamer1.0-libav
  # GStreamer's analytics library (GstTensorMeta, GStreamer 1.26): tensors
  # carry it where it exists (meson finds it; nothing on 1.22).
  libgstreamer-plugins-bad1.0-dev
  libgtest-dev libbenchmark-dev
  libxxhash-dev
  # DXGI format values checked against dxgiformat.h (tests/lib/d3d11).
  directx-headers-dev
  # DLPack's header (gst_tensor_mem_buffer_to_dlpack).
  libdlpack-dev
  libepoxy-dev libegl-dev libegl-mesa0 libgl1-mesa-dri libglx-mesa0 libgbm1 libglapi-mesa
  xvfb xauth
  # GObject introspection (-Dintrospection: GstTensorMem-1.0.gir/.typelib)
  # and the Python route to the tensor (examples/python, tests/python):
  # g-ir-scanner, the GI data of GStreamer's libraries, PyGObject with
  # GStreamer's overrides, numpy (from_dlpack).
  gobject-introspection libgirepository1.0-dev gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0
  python3-gi python3-gst-1.0 python3-numpy
)
# ONNX Runtime for tensorinfer (gst/infer) and its tests, which make their
# models with python3-onnx (python3-onnxruntime: the soak's RSS reference); ONNX's
# light_resnet50 (libonnx-testdata, 7 MB) is the large model of
# tests/bench/infer_vs_onnxinference.sh. Debian 13 and later package them;
# Debian 12 has python3-onnx alone.
# valgrind too: the full mode runs tensorinfer's tests under it inside the
# Debian 13 root as well as on the host.
# clang too: the full mode checks with it the units that only this release
# compiles (GstTensorMeta; scripts/clang-build.sh).
if [[ $release == 12 ]]; then
  # tensorinfer's tests make their models with python3-onnx (Debian 12: 1.12);
  # the runtime is scripts/onnxruntime-sdk.sh's (below).
  packages+=(python3-onnx)
  command -v npm >/dev/null || packages+=(npm)
else
  packages+=(libonnxruntime-dev python3-onnx python3-onnxruntime libonnx-testdata valgrind clang)
fi
# Only the host's full set: the valgrind run, the Windows cross-build under
# Wine, debootstrap for the Debian 13 root (scripts/test.sh --debian13), and
# the fuzz targets' compiler.
# clang and libFuzzer for scripts/fuzz.sh (the full mode's fuzz step):
# libclang-rt-dev is Debian's name on 12 and 13 for the current clang's
# runtime libraries (libclang_rt.fuzzer), which clang alone does not pull in.
host_only_packages=(valgrind g++-mingw-w64-x86-64-posix wine64 debootstrap clang libclang-rt-dev)
case $mode in
  demo) packages=("${demo_packages[@]}") ;;
  all) packages+=("${host_only_packages[@]}") ;;
esac

# Run-time libraries that the packages above pull in: not installed by name,
# but kept at the current version because the tests load them (Mesa's EGL
# driver, GLib, GStreamer's own libraries).
runtime=(
  libglib2.0-0 libgstreamer1.0-0 libgstreamer-plugins-base1.0-0 libgstreamer-plugins-bad1.0-0
  libgstreamer-gl1.0-0 libdrm2 libegl1 libgl1
)

sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

refresh=${TENSORMEM_DEPS_REFRESH:-auto}
lists=/var/lib/apt/lists
if [[ $refresh == always ]] ||
  { [[ $refresh == auto ]] && [[ -z $(find "$lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -n1) ]]; }; then
  echo "deps: refreshing the package lists"
  $sudo apt-get update -qq || echo "deps: apt-get update failed; using the lists this machine has" >&2
fi

# installed version vs candidate, one line per package: name installed candidate
# (a name the lists do not know prints nothing)
outdated() {
  LC_ALL=C apt-cache policy "$@" 2>/dev/null | awk '
    /^[^ ]/ { name = $1; sub(":$", "", name) }
    /Installed:/ { inst[name] = $2 }
    /Candidate:/ { cand[name] = $2 }
    END { for (n in cand) print n, inst[n], cand[n] }'
}

# resolve NAME...: each name as this machine's release spells it. Debian 13
# renamed many libraries for the 64-bit time_t transition (libglib2.0-0 ->
# libglib2.0-0t64) and left some old names only as virtual packages
# (libglapi-mesa, provided by mesa-libgallium since Mesa 25). A name with a
# candidate version stays; else its t64 name if that has one; else the single
# package that provides it; else it stays as it is, and apt says what is wrong.
resolve() {
  local -A candidate=()
  local name installed cand p
  while read -r name installed cand; do candidate[$name]=$cand; done < <(outdated "$@" "${@/%/t64}")
  for p in "$@"; do
    if [[ ${candidate[$p]:-(none)} != "(none)" ]]; then
      echo "$p"
    elif [[ ${candidate[${p}t64]:-(none)} != "(none)" ]]; then
      echo "${p}t64"
    else
      local providers
      mapfile -t providers < <(LC_ALL=C apt-cache showpkg "$p" 2>/dev/null |
        sed '1,/^Reverse Provides:/d' | awk 'NF { print $1 }' | sort -u)
      if ((${#providers[@]} == 1)); then echo "${providers[0]}"; else echo "$p"; fi
    fi
  done
}
mapfile -t packages < <(resolve "${packages[@]}")
mapfile -t runtime < <(resolve "${runtime[@]}")

todo=()
while read -r name installed candidate; do
  [[ $candidate == "(none)" ]] && continue
  if [[ -z $installed || $installed == "(none)" ]]; then
    # a run-time library that nothing here needs is not installed
    for p in "${packages[@]}"; do [[ $p == "$name" ]] && todo+=("$name"); done
  elif [[ $installed != "$candidate" ]]; then
    todo+=("$name")
  fi
done < <(outdated "${packages[@]}" "${runtime[@]}")

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

mapfile -t todo < <(printf '%s\n' "${todo[@]}" "${missing[@]}" | sed '/^$/d' | sort -u)
if ((${#todo[@]} > 0)); then
  echo "deps: installing or upgrading ${todo[*]}"
  $sudo apt-get install -y -qq --no-install-recommends "${todo[@]}"
fi

# ONNX Runtime where the distribution has none, into build-deps/onnxruntime
# (ignored by git; meson finds it there). Once: a later run finds it made.
if ((own_onnxruntime)); then
  cd "$(dirname "$0")/.."
  scripts/onnxruntime-sdk.sh build-deps/onnxruntime >/dev/null ||
    echo "deps: no ONNX Runtime for tensorinfer (scripts/onnxruntime-sdk.sh failed): it is not built" >&2
fi

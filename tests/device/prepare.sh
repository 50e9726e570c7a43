#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Prepares .device-kit/ (git-ignored) for tests/device/run.sh. The device
# machine has an NVIDIA GPU and a CUDA image, but no GStreamer, no libepoxy
# and no network, so this machine packs what it lacks:
#   gl-debs/  the GL dispatch libraries (libglvnd's libEGL and friends), which
#             run.sh unpacks into / when the device has none (as the device
#             notes advise: the NVIDIA EGL vendor library needs them there)
#   debs/     GStreamer (core, base plugins, gst-launch-1.0), libepoxy and
#             the libraries they use, unpacked by run.sh under a private
#             prefix, never into /
#   build/    a release build of the whole project plus device-check, made
#             here; run.sh falls back to building on the device when these
#             binaries cannot start there
# DEVICE_KIT names another kit directory. Run it on this machine, then pass `carry: [".device-kit"]` to the device
# run with `tests/device/run.sh` as the command.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KIT=${DEVICE_KIT:-$ROOT/.device-kit}

gl_debs=(libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
debs=(
  libepoxy0
  libgstreamer1.0-0 libgstreamer-plugins-base1.0-0 gstreamer1.0-plugins-base gstreamer1.0-tools
  libglib2.0-0 liborc-0.4-0 libunwind8 libdw1 libelf1 libcap2 libffi8 libpcre2-8-0
  libmount1 libselinux1 libblkid1 zlib1g libgudev-1.0-0 libstdc++6 libgcc-s1
)

# Debian 13 renamed many libraries for the 64-bit time_t transition
# (liborc-0.4-0 -> liborc-0.4-0t64); the old name may survive there only as a
# virtual or transitional package without the library. The t64 name wins
# wherever it exists, so one list serves Debian 12 and 13.
current_names() {
  local p
  for p in "$@"; do
    if apt-cache show "${p}t64" >/dev/null 2>&1; then echo "${p}t64"; else echo "$p"; fi
  done
}
mapfile -t gl_debs < <(current_names "${gl_debs[@]}")
mapfile -t debs < <(current_names "${debs[@]}")

rm -rf "$KIT"
mkdir -p "$KIT/gl-debs" "$KIT/debs"
(cd "$KIT/gl-debs" && apt-get download -qq "${gl_debs[@]}")
(cd "$KIT/debs" && apt-get download -qq "${debs[@]}")

meson setup "$KIT/build" "$ROOT" -Dbuildtype=release -Dgl=enabled -Dcuda=enabled -Dgst=enabled \
  -Dtests=disabled -Dbench=disabled >/dev/null
ninja -C "$KIT/build" >/dev/null
"$ROOT/tests/device/build-check.sh" "$KIT/build"
strip --strip-unneeded "$KIT"/build/lib/*.so* "$KIT"/build/gst/tensormem/*.so* "$KIT"/build/gst/plugin/*.so \
  "$KIT/build/device-check" 2>/dev/null || true
# Only what run.sh uses travels: the meson bookkeeping and objects stay here.
find "$KIT/build" \( -name '*.p' -o -name 'meson-*' \) -prune -exec rm -rf {} +
find "$KIT/build" -name '*.o' -delete
echo "device kit: $(du -sh "$KIT" | cut -f1) in $KIT"

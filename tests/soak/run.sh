#!/usr/bin/env bash
# The soak of issue 28, on demand (not part of scripts/test.sh: it takes
# 30 minutes). Needs the quick build (scripts/build.sh build).
#   tests/soak/run.sh [--minutes M] [--warmup W] [--sample S] [--pipelines N]
#                     [--plant-leak KB] [--plant-fd-leak N]
# Defaults: 8 pipelines over every storage for 30 minutes, a sample each
# minute, compared from minute 5 on (tests/soak/soak.py says what and how).
# Its output ends with 'N passed, N failed'; it exits non-zero on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ -f build/gst/plugin/libgsttensormem.so ]] ||
  { echo "soak: build/ has no plugin; run scripts/build.sh build first" >&2; exit 2; }
export GST_PLUGIN_PATH=$PWD/build/gst/plugin
export LD_LIBRARY_PATH=$PWD/build/lib:$PWD/build/gst/tensormem${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TENSORMEM_DMABUF_SOURCE=${TENSORMEM_DMABUF_SOURCE:-memfd}
export GST_DEBUG=${GST_DEBUG:-*:1}
# storage=d3d11 outside Windows: the software reference device.
export TENSORMEM_D3D11_DEVICE=${TENSORMEM_D3D11_DEVICE:-software}
# Two malloc arenas instead of glibc's 8 per core: with 41 threads the
# default arenas keep growing their free caches (heap-free in the samples,
# 11 to 75 MB in 10 minutes) while the bytes in use stay flat, and RSS
# counts the caches (docs/testing.md, "Soak"). MALLOC_ARENA_MAX=16 runs it
# with what glibc would pick on this 2-core machine.
export MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-2}
# Debian's python3: PyGObject and GStreamer's overrides are its packages (scripts/deps.sh).
exec xvfb-run -a -s "-screen 0 1280x1024x24 -noreset" /usr/bin/python3 tests/soak/soak.py "$@"

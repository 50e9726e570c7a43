#!/usr/bin/env bash
# Runs one cross-built Windows test program under Wine.
#   wine-run.sh LABEL PROGRAM.exe [ARGS...]
# LABEL names the case: its GoogleTest report (when GTEST_OUTPUT asks for
# JSON into a directory) is written as LABEL.json there, and its scratch
# directory is TM_WIN_SCRATCH_ROOT/LABEL, emptied first.
# The Wine prefix lives in the build tree and is created once, under a lock,
# by whichever case comes first. Wine's exit status is the program's.
set -euo pipefail
label=$1
program=$2
shift 2

wine=$(command -v wine64 || command -v wine || true)
[[ -n "$wine" ]] || { [[ -x /usr/lib/wine/wine64 ]] && wine=/usr/lib/wine/wine64; }
if [[ -z "$wine" ]]; then
  echo "wine-run: no Wine here (apt-get install wine64)" >&2
  exit 77
fi

# Z: is the Unix root in every Wine prefix.
winpath() { local p; p=$(realpath -m "$1"); echo "Z:${p//\//\\}"; }

build=$(dirname "$(realpath "$program")")
export WINEPREFIX=${WINEPREFIX:-$build/wineprefix}
export WINEDEBUG=${WINEDEBUG:--all}
# Direct3D 11 (win-d3d11-device, win-lib-d3d11-device): Wine 8's d3d11 runs
# on wined3d, which needs an X display, so run meson test under xvfb-run -a;
# the default wined3d renderer needs no HKCU\Software\Wine\Direct3D setting
# here. Without a display D3D11CreateDevice answers DXGI_ERROR_UNSUPPORTED
# (0x887A0004) for hardware and WARP alike and the cases fail.
export WINEDLLOVERRIDES=${WINEDLLOVERRIDES:-mscoree,mshtml=}
if [[ ! -f "$WINEPREFIX/system.reg" ]]; then
  mkdir -p "$(dirname "$WINEPREFIX")"
  (
    flock 9
    [[ -f "$WINEPREFIX/system.reg" ]] || "$wine" wineboot --init >/dev/null 2>&1 || true
  ) 9>"$WINEPREFIX.lock"
fi

# The program finds libtensormem and the MinGW runtime DLLs through PATH.
runtime_dirs=()
for dll in libstdc++-6.dll libgcc_s_seh-1.dll libwinpthread-1.dll; do
  f=$(x86_64-w64-mingw32-g++-posix -print-file-name="$dll" 2>/dev/null || true)
  [[ -f "$f" ]] && runtime_dirs+=("$(winpath "$(dirname "$f")")")
done
winepath_list=$(winpath "${TM_WIN_LIBDIR:-$build/../../lib}")
for d in "${runtime_dirs[@]}"; do winepath_list+=";$d"; done
export WINEPATH="$winepath_list${WINEPATH:+;$WINEPATH}"

if [[ -n "${TM_WIN_SCRATCH_ROOT:-}" ]]; then
  rm -rf "${TM_WIN_SCRATCH_ROOT:?}/$label"
  mkdir -p "$TM_WIN_SCRATCH_ROOT/$label"
  export TM_WIN_SCRATCH
  TM_WIN_SCRATCH=$(winpath "$TM_WIN_SCRATCH_ROOT/$label")
fi

# GTEST_OUTPUT=json:DIR/ becomes one report per case, named after LABEL.
if [[ "${GTEST_OUTPUT:-}" == json:*/ ]]; then
  dir=${GTEST_OUTPUT#json:}
  mkdir -p "$dir"
  export GTEST_OUTPUT="json:$(winpath "$dir/$label.json")"
fi

exec "$wine" "$program" "$@"

#!/usr/bin/env bash
# Checks every unit of the project with clang, configured in build-clang/ (issue 37):
# the quick build's options, so the same units (tests, benchmarks, examples,
# the fuzz targets' replay programs), with the project's warnings and werror,
# so a warning fails. clang is the compiler of the fuzz build, of macOS,
# Android and FreeBSD; g++ accepts code that it refuses.
#   scripts/clang-build.sh
#   CLANG_TESTLOG=FILE  also writes one meson-testlog line, clang-build (OK,
#                FAIL, or SKIP when clang is missing) for scripts/summarize.py
#   CLANG_BUILD_DIR=DIR  the build directory (build-clang)
#   CLANG_NAME=NAME      the result's name (clang-build)
#   CLANG_ONLY=REGEX     check only the sources whose path or text matches
#   CLANG_MESON_ARGS="..." more meson options for the setup
# The Debian 13 leg runs it inside the root on what only that root compiles
# (scripts/test.sh).
# Checks only: every compile command with -fsyntax-only (scripts/clang_syntax.py),
# a source shared by several targets once. clang's warnings come from its
# front end, so code generation, linking and introspection, the quick
# build's work, are left out. Assertions stay compiled in (b_ndebug=false),
# as in the quick build.
# Exit status: 0 every unit checked clean; 1 one did not (its errors are
# printed); 77 clang is missing (scripts/test.sh counts that as a skip).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=${CLANG_BUILD_DIR:-build-clang}
name=${CLANG_NAME:-clang-build}
read -r -a meson_args <<<"${CLANG_MESON_ARGS:-}"

# result RESULT TEXT: the testlog line, as meson writes them.
result() {
  echo "$2"
  [[ -n ${CLANG_TESTLOG:-} ]] || return 0
  python3 -c 'import json, sys; print(json.dumps({"name": sys.argv[3], "result": sys.argv[1], "stdout": sys.argv[2], "command": []}))' \
    "$1" "$2" "$name" >>"$CLANG_TESTLOG"
}

if ! command -v clang >/dev/null || ! command -v clang++ >/dev/null; then
  result SKIP "$name: skipped: clang/clang++ not found (scripts/deps.sh installs clang)"
  exit 77
fi

if [[ ! -f $dir/build.ninja ]]; then
  echo "== clang-build: configuring $dir ($(clang++ --version | head -n1), buildtype=plain)"
  CC=clang CXX=clang++ meson setup "$dir" -Dbuildtype=plain -Db_ndebug=false -Dwerror=true \
    -Dintrospection=disabled -Db_colorout=never "${meson_args[@]}" >"$dir.setup.log" 2>&1 || {
    cat "$dir.setup.log"
    result FAIL "$name: meson setup of $dir failed; see $root/$dir.setup.log"
    exit 1
  }
fi
# Regenerate first when a meson.build changed, so new units are listed.
ninja -C "$dir" build.ninja >/dev/null
# What the compile commands read that the build generates (none today).
mapfile -t objects < <(ninja -C "$dir" -t targets all | sed -n 's/: c\(pp\)\?_COMPILER$//p')
mapfile -t generated < <(ninja -C "$dir" -t inputs "${objects[@]}" | grep -v '^\.\./\|^/' || true)
if ((${#generated[@]})) && ! ninja -C "$dir" -j"$(nproc)" "${generated[@]}" >"$dir.ninja.log" 2>&1; then
  tail -n 60 "$dir.ninja.log"
  result FAIL "$name: generating sources failed; see $root/$dir.ninja.log"
  exit 1
fi
start=$SECONDS
if ! python3 scripts/clang_syntax.py "$dir" "$(nproc)" "${CLANG_ONLY:-}" >"$dir.syntax.log" 2>&1; then
  head -n 80 "$dir.syntax.log"
  result FAIL "$name: $(tail -n1 "$dir.syntax.log") to compile with clang; see $root/$dir.syntax.log"
  exit 1
fi
result OK "$name: $(tail -n1 "$dir.syntax.log") with clang, no warning, in $((SECONDS - start)) s"

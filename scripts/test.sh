#!/usr/bin/env bash
# Sets everything up and runs every test suite.
#   scripts/test.sh          quick mode: one debug-optimised build, every test,
#                            and the MinGW-w64 cross-build's tests under Wine
#   scripts/test.sh --full   also an ASan/UBSan build, a valgrind run of the
#                            core and GStreamer tests, every unit compiled
#                            with clang (scripts/clang-build.sh, build-clang/),
#                            30 s of each libFuzzer target (scripts/fuzz.sh,
#                            build-fuzz/), then the Debian 13 leg and the
#                            GStreamer 1.28 leg (what CI runs)
#   scripts/test.sh --debian13
#                            only the Debian 13 leg: the quick build and its
#                            suites (Python's included) inside a Debian 13 root
#                            (GStreamer 1.26) made once under build-debian13/
#                            (scripts/debian-root.sh trixie); with --quick,
#                            after the quick mode
#   scripts/test.sh --forky  only the GStreamer 1.28 leg: the quick build and
#                            its suites inside a Debian testing (forky) root
#                            made once under build-forky/ (scripts/debian-root.sh
#                            forky); with --quick or --debian13, after those
# Ends with "N passed, N failed, N skipped", counted from the tests' own
# results; exits non-zero when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

host=""   # the runs on this machine itself: quick, full, or none
debian13=0
forky=0
for arg in "$@"; do
  case "$arg" in
    --full) host=full debian13=1 forky=1 ;;
    --quick) host=quick ;;
    --debian13) debian13=1 ;;
    --forky) forky=1 ;;
    *) echo "usage: $0 [--quick|--full|--debian13|--forky]" >&2; exit 2 ;;
  esac
done
if [[ -z $host ]] && ((!debian13 && !forky)); then host=quick; fi
full=0
[[ $host == full ]] && full=1

scripts/deps.sh

# A full run writes about 10 GiB here (two Debian roots and six builds), a
# quick one about 1.5 GiB. Say so at the start rather than let a compiler
# stop on a full disk half an hour in.
need_gib=2
((full || debian13 || forky)) && need_gib=10
free_gib=$(df -P -k "$root" | awk 'NR == 2 { print int($4 / 1048576) }')
if ((free_gib < need_gib)); then
  echo "test.sh: warning: ${free_gib} GiB free in $root; this run writes about ${need_gib} GiB" >&2
fi

results=$root/build-results
rm -rf "$results"
mkdir -p "$results"
runs=()

# The roots are made (or brought up to date) in the background while this
# machine builds and tests: debootstrap and apt wait mostly on the network
# and the disk. Each leg waits for its own root; its log is printed there.
declare -A root_setup=()
start_root() {
  local release=$1
  scripts/debian-root.sh "$release" setup >"$results/root-$release.log" 2>&1 &
  root_setup[$release]=$!
}
wait_root() {
  local release=$1 status=0
  wait "${root_setup[$release]}" || status=$?
  cat "$results/root-$release.log"
  return "$status"
}
((debian13)) && start_root trixie
((forky)) && start_root forky

# Minutes and seconds since the script started, on every "==" line, so a
# run's log says where its time went.
elapsed() { printf '%d:%02d' $((SECONDS / 60)) $((SECONDS % 60)); }

# run_suite NAME BUILDDIR [extra meson test args...]: gtest JSON per binary
# into $results/NAME, meson's log beside it, meson test running inside
# the virtual X server (run_prefix below).
run_suite() {
  local name=$1 dir=$2
  shift 2
  mkdir -p "$results/$name"
  echo "[$(elapsed)] == $name: meson test -C $dir $*"
  # --logbase names meson's log after the run (meson still appends
  # -<wrapper> under --wrapper): two runs over one build directory must not
  # read each other's log.
  rm -f "$dir/meson-logs/$name".json "$dir/meson-logs/$name"-*.json
  GTEST_OUTPUT="json:$results/$name/" "${run_prefix[@]}" meson test -C "$dir" --no-rebuild --print-errorlogs \
    --logbase "$name" "$@" >"$results/$name.log" 2>&1 || true
  grep -E '^ *[0-9]+/[0-9]+ ' "$results/$name.log" || true
  local log
  log=$(ls -t "$dir/meson-logs/$name".json "$dir/meson-logs/$name"-*.json 2>/dev/null | grep -v junit | head -n1 || true)
  if [[ -n $log ]]; then cp "$log" "$results/$name.testlog.json"; fi
  runs+=("$name")
}

# Every run has a virtual X server: GL prefers the surfaceless EGL platform
# and never needs one, but the test of the last fallback (the default EGL
# display) can only pass where a window system exists. -noreset: by default
# Xvfb resets when its last client disconnects, and a client of a test running
# in parallel that connects during the reset fails xcb_connect (4 of 120
# parallel xdpyinfo runs failed without it, none with it). The search for a
# free display starts at a number of this run's own, so runs started side by
# side do not both reach for :99.
run_prefix=(xvfb-run -a -n $((100 + $$ % 800)) -s "-screen 0 1280x1024x24 -noreset")

# The runs on this machine itself.
if [[ -n $host ]]; then
  echo "[$(elapsed)] == build (debugoptimized) in build/"
  scripts/build.sh build
  run_suite quick build

  # Windows: libtensormem and its portable tests cross-built with MinGW-w64, run
  # under Wine (tests/windows/wine-run.sh).
  echo "[$(elapsed)] == cross-build (MinGW-w64, Windows x86_64) in build-win/"
  scripts/build.sh build-win --cross-file tests/windows/mingw-w64-x86_64.ini \
    -Dgst=disabled -Dgl=disabled -Dbench=disabled
  run_suite windows build-win

  if ((full)); then
    echo "[$(elapsed)] == build (ASan + UBSan) in build-asan/"
    scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug \
      -Dcpp_args=-fno-sanitize-recover=all -Dc_args=-fno-sanitize-recover=all -Dbench=disabled
    GST_REGISTRY_FORK=no G_SLICE=always-malloc G_DEBUG=gc-friendly \
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:fast_unwind_on_malloc=0 \
      LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0" \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      run_suite asan build-asan --timeout-multiplier 4 --no-suite device

    echo "[$(elapsed)] == valgrind (memcheck) over the quick build"
    # --fair-sched=yes: valgrind runs one thread at a time, and its default
    # lock let a test polling an appsink starve the streaming threads for
    # 20 s and more (gst-batch, seen two runs in ten); a ticket lock takes
    # the threads in turn.
    GST_REGISTRY_FORK=no G_SLICE=always-malloc G_DEBUG=gc-friendly \
      run_suite valgrind build --suite lib --suite gst --no-suite leaks-on-purpose --no-suite no-valgrind --timeout-multiplier 10 \
      --wrapper "valgrind --quiet --fair-sched=yes --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --suppressions=$root/tests/sanitizers/valgrind.supp --suppressions=$root/tests/lib/gl/gl.supp --num-callers=30"

    # Every unit compiled with clang too (issue 37; g++ builds everything
    # else): front end only, in build-clang/, a warning fails. One result,
    # clang-build; no clang is one skip.
    echo "[$(elapsed)] == clang: every unit with clang, -Werror, in build-clang/ (scripts/clang-build.sh)"
    CLANG_TESTLOG=$results/clang.testlog.json scripts/clang-build.sh >"$results/clang.log" 2>&1 || true
    cat "$results/clang.log"
    [[ -s $results/clang.testlog.json ]] || rm -f "$results/clang.testlog.json"
    runs+=(clang)

    # The libFuzzer targets (issue 28): built with clang into build-fuzz/
    # (only they and the libraries they link), each run 30 s from its corpus,
    # two at a time. One result per target (fuzz-NAME); a crash fails it and
    # scripts/fuzz.sh prints the reproducer's path; no clang is one skip.
    echo "[$(elapsed)] == fuzz: libFuzzer targets, 30 s each, in build-fuzz/ (scripts/fuzz.sh 30)"
    FUZZ_TESTLOG=$results/fuzz.testlog.json scripts/fuzz.sh 30 >"$results/fuzz.log" 2>&1 || true
    if grep -q '^fuzz: .* FAILED$\|^fuzz: skipped\|failed; see' "$results/fuzz.log"; then
      cat "$results/fuzz.log"
    else
      grep '^fuzz: ' "$results/fuzz.log" || true
    fi
    [[ -s $results/fuzz.testlog.json ]] || rm -f "$results/fuzz.testlog.json"
    runs+=(fuzz)
  fi
fi

# Debian 13: the quick build and run once more on the next Debian release's
# GStreamer, compiler and Mesa, inside a root of its own (scripts/debian13.sh;
# made once, then reused). The quick build's options, with the parts it must
# not quietly lose made required: GStreamer, GL, introspection for the
# Python tests (tests/python), and GstTensorMeta (tests/gst/test_tensor_meta.cpp).
x_prefix=("${run_prefix[@]}")
if ((debian13)); then
  echo "[$(elapsed)] == Debian 13 root (trixie) in build-debian13/root"
  wait_root trixie
  echo "[$(elapsed)] == build (debugoptimized) in build-debian13/build, inside the Debian 13 root"
  scripts/debian13.sh run scripts/build.sh build-debian13/build -Dgst=enabled -Dgl=enabled -Dintrospection=enabled \
    -Danalytics=enabled
  # meson test and the virtual X server run inside the root; the build's
  # paths are the same inside and outside, so its logs read alike here.
  run_prefix=(scripts/debian13.sh run "${x_prefix[@]}")
  run_suite debian13 build-debian13/build

  if ((full)); then
    # tensorinfer's GstTensorMeta cases exist only here (GStreamer 1.26):
    # its tests under ASan + UBSan and under valgrind here too (the host's
    # runs cover its other/tensors build and everything else). The
    # sanitizer build makes only what gst-infer loads.
    echo "[$(elapsed)] == build (ASan + UBSan) in build-debian13/asan, inside the Debian 13 root: tensorinfer's tests"
    scripts/debian13.sh run scripts/build.sh build-debian13/asan -Db_sanitize=address,undefined -Db_lundef=false \
      -Dbuildtype=debug -Dcpp_args=-fno-sanitize-recover=all -Dc_args=-fno-sanitize-recover=all -Dbench=disabled \
      -Dgst=enabled -Dgl=enabled -Danalytics=enabled -Dintrospection=disabled -- \
      tests/gst/test-gst-infer tests/gst/infer-reference gst/plugin/libgsttensormem.so gst/infer/libgsttensorinfer.so
    run_prefix=(scripts/debian13.sh run env GST_REGISTRY_FORK=no G_SLICE=always-malloc G_DEBUG=gc-friendly
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:fast_unwind_on_malloc=0
      LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0"
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "${x_prefix[@]}")
    run_suite debian13-asan build-debian13/asan --timeout-multiplier 4 gst-infer gst-infer-gl
    echo "[$(elapsed)] == valgrind (memcheck) of tensorinfer's tests over build-debian13/build"
    run_prefix=(scripts/debian13.sh run env GST_REGISTRY_FORK=no G_SLICE=always-malloc G_DEBUG=gc-friendly
      "${x_prefix[@]}")
    run_suite debian13-valgrind build-debian13/build --timeout-multiplier 10 \
      --wrapper "valgrind --quiet --fair-sched=yes --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --suppressions=$root/tests/sanitizers/valgrind.supp --suppressions=$root/tests/lib/gl/gl.supp --num-callers=30" \
      gst-infer gst-infer-gl

    # tensorinfer opens ONNX Runtime at run time: its tests once more on
    # npm's builds of the oldest runtime it supports and of a recent one
    # (scripts/onnxruntime-npm.sh; the library only, kept in build-debian13/).
    # Not its GL cases: what they add (PBO memory mapped for the run) does
    # not depend on the runtime's version, and Debian's runtime runs them.
    for version in 1.16.3 1.31.1; do
      echo "[$(elapsed)] == tensorinfer's tests on ONNX Runtime $version from npm (TENSORMEM_ONNXRUNTIME)"
      if lib=$(scripts/onnxruntime-npm.sh "$version" "build-debian13/onnxruntime-npm/$version"); then
        run_prefix=(scripts/debian13.sh run env "TENSORMEM_ONNXRUNTIME=$root/$lib" "${x_prefix[@]}")
        run_suite "debian13-onnxruntime-$version" build-debian13/build gst-infer
      else
        # No result file: scripts/summarize.py counts the missing run as a failure.
        mkdir -p "$results/debian13-onnxruntime-$version"
        runs+=("debian13-onnxruntime-$version")
      fi
    done

    # clang over what only this root compiles (the host's clang-build
    # checks the rest): tensorinfer and every source that reads GstTensorMeta.
    echo "[$(elapsed)] == clang: tensorinfer and the GstTensorMeta units with clang, -Werror, in build-debian13/clang"
    scripts/debian13.sh run env CLANG_BUILD_DIR=build-debian13/clang CLANG_NAME=debian13-clang-build \
      CLANG_ONLY='gst/infer/|test_infer|GST_TENSOR_MEM_HAVE_TENSOR_META|gst/analytics/' \
      CLANG_MESON_ARGS='-Dgst=enabled -Dgl=enabled -Danalytics=enabled' \
      CLANG_TESTLOG=$results/debian13-clang.testlog.json scripts/clang-build.sh >"$results/debian13-clang.log" 2>&1 || true
    cat "$results/debian13-clang.log"
    [[ -s $results/debian13-clang.testlog.json ]] || rm -f "$results/debian13-clang.testlog.json"
    runs+=(debian13-clang)
  fi
fi

# GStreamer 1.28 (Debian testing, forky): the quick build and its suites
# once more, tensorinfer's included, on the current GStreamer release with
# its analytics stack and the distribution's ONNX Runtime (1.23). Not the
# Python tests (no introspection here: the Debian 13 leg runs them).
if ((forky)); then
  echo "[$(elapsed)] == GStreamer 1.28 root (Debian testing, forky) in build-forky/root"
  wait_root forky
  echo "[$(elapsed)] == build (debugoptimized) in build-forky/build, inside the forky root"
  scripts/debian-root.sh forky run scripts/build.sh build-forky/build -Dgst=enabled -Dgl=enabled \
    -Danalytics=enabled -Donnxruntime=enabled -Dintrospection=disabled -Dbench=disabled
  run_prefix=(scripts/debian-root.sh forky run "${x_prefix[@]}")
  # Not the device suite: its kit packs the host release's libraries for a
  # GPU machine of this kind; the host's runs check it.
  run_suite forky build-forky/build --no-suite device
fi

# The full mode (CI) and the Debian 13 leg alone (a CI leg, on a root this
# script made) accept only the skips tests/expected-skips.txt names.
strict=()
if ((full)) || [[ -z $host ]]; then strict=(--expected-skips tests/expected-skips.txt); fi
python3 scripts/summarize.py "${strict[@]}" "$results" "${runs[@]}"

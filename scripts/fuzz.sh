#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang into build-fuzz/ and
# runs each from its seed corpus (issue 28).
#   scripts/fuzz.sh [SECONDS] [NAME...]
#     SECONDS  how long each target runs (default 30); 0 only builds
#     NAME     only these targets (convert, mapstate, ...; default: all)
#   FUZZ_JOBS=N  targets run N at a time (default 2)
#   FUZZ_TESTLOG=FILE  also writes one meson-testlog line per target (OK or
#                FAIL; one SKIP when clang is missing) for scripts/summarize.py
# Each target runs as fuzz-NAME -max_total_time=SECONDS over a scratch copy of
# tests/fuzz/corpus/NAME plus tests/fuzz/regressions/NAME (the committed
# corpus is only read), with a 10 s per-input timeout and a 2 GiB RSS limit.
# A crash, leak, timeout or broken invariant fails the run and prints the
# reproducer's path and the command that replays it; a reproducer belongs in
# tests/fuzz/regressions/NAME/ with its fix.
# Exit status: 0 every target ran clean; 1 one failed; 77 clang or libFuzzer
# is missing, so nothing was fuzzed (scripts/test.sh counts that as a skip).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# testlog NAME RESULT TEXT: one line of FUZZ_TESTLOG, as meson writes them.
testlog() {
  [[ -n ${FUZZ_TESTLOG:-} ]] || return 0
  python3 -c 'import json, sys; print(json.dumps({"name": sys.argv[1], "result": sys.argv[2], "stdout": sys.argv[3], "command": []}))' \
    "$1" "$2" "$3" >>"$FUZZ_TESTLOG"
}
# skip WHY: nothing can be fuzzed here; exit 77, counted as a skip, never a pass.
skip() {
  echo "fuzz: skipped: $1"
  testlog fuzz SKIP "fuzz: skipped: $1"
  exit 77
}
seconds=30
names=()
for arg in "$@"; do
  if [[ $arg =~ ^[0-9]+$ ]]; then seconds=$arg; else names+=("$arg"); fi
done
jobs=${FUZZ_JOBS:-2}
dir=build-fuzz

if ! command -v clang >/dev/null || ! command -v clang++ >/dev/null; then
  skip "clang/clang++ not found (scripts/deps.sh installs clang and libclang-rt-dev)"
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char *, unsigned long) { return 0; }' >"$probe/t.cpp"
if ! clang++ -fsanitize=fuzzer,address,undefined "$probe/t.cpp" -o "$probe/t" 2>"$probe/err"; then
  sed 's/^/  /' "$probe/err" | head -n 5
  skip "clang++ cannot link -fsanitize=fuzzer,address,undefined (libFuzzer missing; Debian: libclang-rt-dev)"
fi

if [[ ! -f $dir/build.ninja ]]; then
  echo "== fuzz: configuring $dir (clang, -Dfuzz=enabled)"
  CC=clang CXX=clang++ meson setup "$dir" -Dfuzz=enabled -Db_lundef=false -Dtests=disabled -Dbench=disabled \
    -Dintrospection=disabled >"$dir.setup.log" 2>&1 || {
    cat "$dir.setup.log"
    testlog fuzz FAIL "fuzz: meson setup of $dir failed; see $root/$dir.setup.log"
    exit 1
  }
fi
# Regenerate first when meson.build changed, so new targets are listed.
ninja -C "$dir" build.ninja >/dev/null
mapfile -t all < <(ninja -C "$dir" -t targets all | sed -n 's|^tests/fuzz/fuzz-\([a-z0-9_-]*\): .*LINKER.*|\1|p' | sort)
((${#all[@]})) || { echo "fuzz: $dir has no fuzz target" >&2; exit 1; }
((${#names[@]})) || names=("${all[@]}")
targets=()
for n in "${names[@]}"; do
  [[ " ${all[*]} " == *" $n "* ]] || { echo "fuzz: no target '$n' (have: ${all[*]})" >&2; exit 2; }
  targets+=("tests/fuzz/fuzz-$n")
done
echo "== fuzz: building ${names[*]} in $dir"
start=$SECONDS
ninja -C "$dir" -j"$(nproc)" "${targets[@]}" >"$dir.ninja.log" 2>&1 || {
  tail -n 60 "$dir.ninja.log"
  testlog fuzz FAIL "fuzz: building the targets failed; see $root/$dir.ninja.log"
  exit 1
}
echo "fuzz: built in $((SECONDS - start)) s"
((seconds > 0)) || exit 0

export GST_REGISTRY_FORK=no G_SLICE=always-malloc
export ASAN_OPTIONS=abort_on_error=0:fast_unwind_on_malloc=0:detect_leaks=1
cat tests/sanitizers/lsan.supp tests/fuzz/lsan.supp >"$dir/lsan.supp"
export LSAN_OPTIONS="suppressions=$root/$dir/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TENSORMEM_DMABUF_SOURCE=memfd
out=$dir/fuzz-runs
rm -rf "$out"
mkdir -p "$out"

# run_one NAME: one target, its log in $out/NAME.log, its findings in $out/NAME-artifacts/.
run_one() {
  local n=$1 work=$out/$1-corpus art=$out/$1-artifacts/
  mkdir -p "$work" "$art"
  local seeds=(tests/fuzz/corpus/"$n")
  [[ -d tests/fuzz/regressions/$n ]] && seeds+=(tests/fuzz/regressions/"$n")
  "$dir/tests/fuzz/fuzz-$n" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$art" "$work" "${seeds[@]}" >"$out/$n.log" 2>&1
}
export -f run_one
export dir out seconds
echo "== fuzz: ${#names[@]} target(s), $seconds s each, $jobs at a time"
start=$SECONDS
status=0
printf '%s\n' "${names[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {} && echo "fuzz: {} ok" || echo "fuzz: {} FAILED"' \
  >"$out/summary" || true
cat "$out/summary"
for n in "${names[@]}"; do
  log=$out/$n.log
  # libFuzzer's last status line (#runs, cov, ft, corp) and its final stats.
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  line="fuzz: $n: ${execs:-?} execs in $seconds s; ${done_line:-no DONE line}"
  echo "$line"
  if ! grep -q "^fuzz: $n FAILED" "$out/summary"; then
    testlog "fuzz-$n" OK "$line"
  else
    status=1
    testlog "fuzz-$n" FAIL "$line; see $root/$log and the reproducer under $root/$out/$n-artifacts/"
    echo "---- fuzz: $n failed; the end of $log:"
    tail -n 40 "$log"
    for a in "$out/$n-artifacts"/*; do
      [[ -e $a ]] || continue
      echo "fuzz: reproducer: $root/$a"
      echo "fuzz: replay it:  $dir/tests/fuzz/fuzz-$n $root/$a"
    done
  fi
done
echo "fuzz: ran in $((SECONDS - start)) s"
exit $status

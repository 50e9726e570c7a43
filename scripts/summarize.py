#!/usr/bin/env python3
"""Counts test results from GoogleTest's JSON reports and meson's testlog.

Usage: summarize.py RESULTS_DIR RUN [RUN ...]

Each gtest case counts once per run: passed, failed, or skipped (GTEST_SKIP).
A test program that meson saw fail but whose report shows no failing case
(a crash, a sanitizer or valgrind error at exit, a timeout) counts as one
failure of its own; a program that exited 77 without a report counts as one
skip. Prints the failures, then 'N passed, N failed, N skipped' and exits 1
if anything failed.
"""
import json
import os
import sys


def program_of(entry):
    for arg in entry.get("command", []):
        base = os.path.basename(arg)
        if base.startswith("test-") and os.path.exists(arg):
            return base
    return None


def main():
    results, runs = sys.argv[1], sys.argv[2:]
    passed = failed = skipped = 0
    failures = []
    for run in runs:
        reports = {}
        run_dir = os.path.join(results, run)
        for name in sorted(os.listdir(run_dir)) if os.path.isdir(run_dir) else []:
            if not name.endswith(".json"):
                continue
            with open(os.path.join(run_dir, name)) as f:
                try:
                    report = json.load(f)
                except json.JSONDecodeError:
                    continue
            program = name[: -len(".json")]
            bad = 0
            for suite in report.get("testsuites", []):
                for case in suite.get("testsuite", []):
                    label = f"{run}: {suite['name']}.{case['name']}"
                    if case.get("failures"):
                        failed += 1
                        bad += 1
                        failures.append(label)
                    elif case.get("result") == "SKIPPED":
                        skipped += 1
                        print(f"skipped {label}")
                    elif case.get("status", "RUN") == "RUN":
                        passed += 1
            reports[program] = bad

        log = os.path.join(results, f"{run}.testlog.json")
        if not os.path.exists(log):
            failed += 1
            failures.append(f"{run}: no test log (the build or meson test did not run)")
            continue
        with open(log) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                entry = json.loads(line)
                result = entry.get("result")
                # A wrapped program (tests/windows/wine-run.sh) writes its
                # report under the meson test's own name.
                program = entry["name"] if entry.get("name") in reports else program_of(entry)
                if result in ("OK", "EXPECTEDFAIL"):
                    if program not in reports:
                        passed += 1  # a non-gtest program that passed
                    continue
                if result == "SKIP":
                    if program not in reports:
                        skipped += 1
                        print(f"skipped {run}: {entry['name']} (whole program)")
                    continue
                if program in reports and reports[program] > 0 and result == "FAIL":
                    continue  # its failing cases are already counted
                failed += 1
                failures.append(f"{run}: {entry['name']} ended {result} (exit {entry.get('returncode')})"
                                " outside any failing test case; see build-results/" + run + ".log")
    for f in failures:
        print(f"FAILED {f}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

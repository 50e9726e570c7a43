#!/usr/bin/env python3
"""Counts test results from GoogleTest's JSON reports and meson's testlog.

Usage: summarize.py [--expected-skips FILE] RESULTS_DIR RUN [RUN ...]

Each gtest case counts once per run: passed, failed, or skipped (GTEST_SKIP).
A test program that meson saw fail but whose report shows no failing case
(a crash, a sanitizer or valgrind error at exit, a timeout) counts as one
failure of its own; a program that exited 77 without a report counts as one
skip. Every skip is printed with its reason (taken from the test's output).
With --expected-skips, a skip that matches none of the file's patterns is a
failure: a broken setup must not turn tests into skips unseen. Prints the
failures, then 'N passed, N failed, N skipped' and exits 1 if anything failed.
"""
import fnmatch
import json
import os
import re
import sys

SKIP_BLOCK = re.compile(r"^\[ RUN      \] (\S+)\n(.*?)^\[  SKIPPED \] \1\b", re.M | re.S)


def program_of(entry):
    for arg in entry.get("command", []):
        base = os.path.basename(arg)
        if base.startswith("test-") and os.path.exists(arg):
            return base
    return None


def skip_reasons(output):
    """{Suite.case: reason} for every skipped case in a program's output."""
    reasons = {}
    # Programs under Wine end their lines with CR LF.
    output = (output or "").replace("\r\n", "\n")
    for case, body in SKIP_BLOCK.findall(output):
        lines = body.strip().splitlines()
        # gtest prints "<file>:<line>: Skipped" and then the message.
        for i, line in enumerate(lines):
            if line.endswith(": Skipped"):
                lines = lines[i + 1:]
                break
        reasons[case] = " ".join(l.strip() for l in lines if l.strip()) or "(no reason given)"
    return reasons


def load_patterns(path):
    if not path:
        return None
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]


def main():
    args = sys.argv[1:]
    patterns = None
    if args[:1] == ["--expected-skips"]:
        patterns = load_patterns(args[1])
        args = args[2:]
    results, runs = args[0], args[1:]
    passed = failed = skipped = 0
    failures = []

    def skip(run, label, reason):
        nonlocal skipped, failed
        text = f"{label}: {reason}"
        if patterns is not None and not any(fnmatch.fnmatchcase(text, p) for p in patterns):
            failed += 1
            failures.append(f"{run}: unexpected skip of {text}")
            return
        skipped += 1
        print(f"skipped {run}: {text}")

    for run in runs:
        entries = []
        log = os.path.join(results, f"{run}.testlog.json")
        if os.path.exists(log):
            with open(log) as f:
                entries = [json.loads(line) for line in f if line.strip()]
        reasons = {}
        for entry in entries:
            reasons.update(skip_reasons(entry.get("stdout")))

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
                    full = f"{suite['name']}.{case['name']}"
                    if case.get("failures"):
                        failed += 1
                        bad += 1
                        failures.append(f"{run}: {full}")
                    elif case.get("result") == "SKIPPED":
                        skip(run, full, reasons.get(full, "(reason not found in the output)"))
                    elif case.get("status", "RUN") == "RUN":
                        passed += 1
            # Every process of a program writes program.pid<N>.json
            # (tests/gtest_main.cpp); the wrapped Windows programs write
            # their meson test's name. Failing cases count for the program.
            key = re.sub(r"\.pid\d+$", "", program)
            reports[key] = reports.get(key, 0) + bad

        if not os.path.exists(log):
            failed += 1
            failures.append(f"{run}: no test log (the build or meson test did not run)")
            continue
        for entry in entries:
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
                    lines = ((entry.get("stdout") or "") + (entry.get("stderr") or "")).strip().splitlines()
                    skip(run, f"{entry['name']} (whole program)", lines[-1] if lines else "(no output)")
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

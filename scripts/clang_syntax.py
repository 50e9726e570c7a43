#!/usr/bin/env python3
"""Runs every compile command of a meson build directory with -fsyntax-only.

Usage: clang_syntax.py BUILDDIR JOBS [REGEX]

With REGEX, only the sources whose path or text matches it are checked (the
Debian 13 leg checks only what the host cannot compile: tensorinfer and the
GstTensorMeta code).

scripts/clang-build.sh's compile pass: the front end alone (parsing,
semantic checks, template instantiation: where clang's warnings come from),
no code generation, no object files. A source that several targets compile
with the same flags (tests/gst/gst_test_env.cpp, in 32 test programs) is
checked once. Prints each failing unit's diagnostics, then one line
'N of M units failed' or 'M units clean'; exits 1 if any failed.
"""
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys

# Arguments that name where one target's object and dependency file go: they
# neither change what the compiler checks nor survive -fsyntax-only.
WITH_VALUE = {"-o", "-MQ", "-MF", "-MT"}
ALONE = {"-c", "-MD", "-MMD"}


def unit(entry):
    """(key, argv): argv checks the entry's source; equal keys check the same."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    argv, key = [], []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in WITH_VALUE:
            skip = True
            continue
        if arg in ALONE:
            continue
        argv.append(arg)
        # The target's private folder (-I<target>.p) holds nothing of the source's.
        if not (arg.startswith("-I") and arg.endswith(".p")):
            key.append(arg)
    return (entry["directory"], tuple(key)), argv + ["-fsyntax-only"]


def mentions(directory, source, pattern):
    """Whether the source's path or text matches `pattern`."""
    if pattern.search(source):
        return True
    with open(os.path.join(directory, source), encoding="utf-8", errors="replace") as f:
        return pattern.search(f.read()) is not None


def check(directory, argv):
    run = subprocess.run(argv, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return run.returncode, run.stdout


def main():
    builddir, jobs = sys.argv[1], int(sys.argv[2])
    only = re.compile(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else None
    with open(os.path.join(builddir, "compile_commands.json")) as f:
        entries = json.load(f)
    units = {}
    for entry in entries:
        key, argv = unit(entry)
        if only and not mentions(entry["directory"], entry["file"], only):
            continue
        units.setdefault(key, (entry["directory"], entry["file"], argv))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        runs = {pool.submit(check, d, argv): source for d, source, argv in units.values()}
        for done in concurrent.futures.as_completed(runs):
            rc, output = done.result()
            if rc != 0 or output.strip():
                failed += 1
                print(f"FAILED: {runs[done]}\n{output}", end="" if output.endswith("\n") else "\n")
    total = len(units)
    print(f"{failed} of {total} units failed" if failed else f"{total} units clean")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

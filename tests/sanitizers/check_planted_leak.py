#!/usr/bin/env python3
"""Runs planted-egl-leak under LeakSanitizer with the project's suppressions
and checks that they are narrow: the clean run reports nothing (whatever the
EGL driver leaks during its own initialisation is suppressed), the planted
run reports exactly our leak, with our function on its stack.

Usage: check_planted_leak.py PROGRAM SUPPRESSIONS
Exit 0 when both hold, 77 when there is no headless GL, 1 otherwise.
"""
import os
import re
import subprocess
import sys

LSAN_EXIT = 23  # LeakSanitizer's default exitcode


def run(program, supp, mode):
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = "detect_leaks=1:fast_unwind_on_malloc=0:exitcode=%d" % LSAN_EXIT
    env["LSAN_OPTIONS"] = "suppressions=%s:print_suppressions=1" % supp
    proc = subprocess.run([program, mode], env=env, capture_output=True, text=True, timeout=240)
    return proc.returncode, proc.stdout + proc.stderr


def leak_reports(output):
    """The 'Direct leak'/'Indirect leak' blocks: header line plus stack."""
    blocks = re.split(r"\n(?=(?:Direct|Indirect) leak of )", output)
    return [b for b in blocks if re.match(r"(?:Direct|Indirect) leak of ", b)]


def main(program, supp):
    code, out = run(program, supp, "--clean")
    if code == 77:
        print(out.strip())
        return 77
    failures = []
    if code != 0 or leak_reports(out):
        failures.append("clean run: exit %d, %d leak report(s); a leak the suppressions do not cover:\n%s"
                        % (code, len(leak_reports(out)), out))
    used = re.findall(r"^\s*\d+\s+\d+\s+(leak:\S+)", out, re.M)
    print("clean run: no leak reported; suppressions used: %s" % (", ".join(used) or "none"))

    code, out = run(program, supp, "--plant")
    reports = leak_reports(out)
    ours = [r for r in reports if "planted_leak_behind_egl" in r]
    if code != LSAN_EXIT:
        failures.append("planted run: exit %d, expected LeakSanitizer's %d" % (code, LSAN_EXIT))
    if len(ours) != 1 or len(reports) != 1 or not ours[0].startswith("Direct leak of "):
        failures.append("planted run: expected exactly one direct leak from planted_leak_behind_egl, got:\n%s"
                        % out)
    else:
        print("planted run: reported: " + ours[0].splitlines()[0])

    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))

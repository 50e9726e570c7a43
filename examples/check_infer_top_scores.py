# SPDX-License-Identifier: Apache-2.0
"""Runs examples/infer_top_scores.c on the small classifier of
tests/gst/infer_models.py and checks what it printed: one line per frame
with five class:score pairs, best first, probabilities (the model ends in a
Softmax); then a missing model must end in exit status 1 and tensorinfer's
error. With PYTHON_EXAMPLE (examples/python/infer_scores.py), that must
print the very same frame lines, read through GstAnalytics from Python.
Exits 77 (skip) when the models cannot be made here (no python3-onnx) or the
Python example cannot import GstAnalytics.

  check_infer_top_scores.py EXAMPLE INFER_MODELS_PY [PYTHON_EXAMPLE]
"""

import os
import subprocess
import sys
import tempfile


def main(example, models_script, python_example=None):
    with tempfile.TemporaryDirectory() as directory:
        made = subprocess.run([sys.executable, models_script, "make", directory], capture_output=True, text=True)
        if made.returncode == 77:
            print(made.stdout.strip())
            return 77
        if made.returncode != 0:
            print("infer_models.py make failed:", made.stdout, made.stderr)
            return 1
        run = subprocess.run([example, os.path.join(directory, "classifier.onnx")], capture_output=True, text=True,
                             timeout=120)
        print(run.stdout)
        if run.returncode != 0:
            print("example failed (%d): %s" % (run.returncode, run.stderr[-2000:]))
            return 1
        lines = [l for l in run.stdout.splitlines() if l.startswith("frame ")]
        if len(lines) != 10 or "10 frames, 10 with scores" not in run.stdout:
            print("wanted 10 frame lines, got %d" % len(lines))
            return 1
        for line in lines:
            fields = line.split()
            if fields[2] != "scores":
                print("the scores tensor should be named after the model's output 'scores':", line)
                return 1
            pairs = [f.split(":") for f in fields[3:]]
            scores = [float(s) for _, s in pairs]
            classes = {int(c) for c, _ in pairs}
            if len(pairs) != 5 or len(classes) != 5 or not all(0 <= c < 10 for c in classes):
                print("wanted five distinct classes of ten:", line)
                return 1
            if scores != sorted(scores, reverse=True) or not all(0 <= s <= 1 for s in scores) or sum(scores) > 1.0001:
                print("wanted probabilities, best first:", line)
                return 1
        if python_example:
            py = subprocess.run([sys.executable, python_example, os.path.join(directory, "classifier.onnx")],
                                capture_output=True, text=True, timeout=120)
            if py.returncode == 77:
                print(py.stdout.strip())
                return 77
            py_lines = [l for l in py.stdout.splitlines() if l.startswith("frame ")]
            if py.returncode != 0 or py_lines != lines:
                print("the Python example printed otherwise (%d):\n%s%s" % (py.returncode, py.stdout, py.stderr[-2000:]))
                return 1
        missing = subprocess.run([example, os.path.join(directory, "absent.onnx")], capture_output=True, text=True,
                                 timeout=120)
        if missing.returncode != 1 or "does not exist" not in missing.stderr:
            print("a missing model should fail with tensorinfer's error:", missing.returncode, missing.stderr[-2000:])
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

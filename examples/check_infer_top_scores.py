# SPDX-License-Identifier: Apache-2.0
"""Runs examples/infer_top_scores.c on the small classifier of
tests/gst/infer_models.py and checks what it printed: one line per frame
with five class:score pairs, best first, probabilities (the model ends in a
Softmax); then three streams in one batch through the batch model, a line
per slot; then a missing model must end in exit status 1 and tensorinfer's
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


def top_five(text):
    """Whether `text` ("scores 7:0.41 ...") is five distinct classes of ten
    with probabilities, best first; says why not."""
    fields = text.split()
    if fields[0] != "scores":
        print("the scores tensor should be named after the model's output 'scores':", text)
        return False
    pairs = [f.split(":") for f in fields[1:]]
    scores = [float(s) for _, s in pairs]
    classes = {int(c) for c, _ in pairs}
    if len(pairs) != 5 or len(classes) != 5 or not all(0 <= c < 10 for c in classes):
        print("wanted five distinct classes of ten:", text)
        return False
    if scores != sorted(scores, reverse=True) or not all(0 <= s <= 1 for s in scores) or sum(scores) > 1.0001:
        print("wanted probabilities, best first:", text)
        return False
    return True


def check_batches(example, directory):
    """--streams=3: three videotestsrc patterns into one batch, the model once
    per batch: ten batches, each with a line per slot, whose scores differ
    from slot to slot (each stream its own pattern)."""
    run = subprocess.run([example, "--streams=3", os.path.join(directory, "classifier_batch.onnx")],
                         capture_output=True, text=True, timeout=120)
    print(run.stdout)
    if run.returncode != 0 or "10 batches, 10 with scores" not in run.stdout:
        print("the batch run failed (%d): %s" % (run.returncode, run.stderr[-2000:]))
        return False
    rows = {}
    for line in run.stdout.splitlines():
        if line.startswith("batch "):
            label, text = line.split(": ", 1)
            _, batch, _, slot = label.split()
            rows[(int(batch), int(slot))] = text
            if not top_five(text):
                return False
    if sorted(rows) != [(b, s) for b in range(10) for s in range(3)]:
        print("wanted slots 0 to 2 of batches 0 to 9, got", sorted(rows))
        return False
    if all(len({rows[(b, s)] for s in range(3)}) == 1 for b in range(10)):
        print("every slot of every batch has the same scores: the slots are not each stream's")
        return False
    return True


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
        if not all(top_five(line.split(": ", 1)[1]) for line in lines):
            return 1
        if not python_example and not check_batches(example, directory):
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

#!/usr/bin/env python3
"""Runs examples/decode-to-tensor on a short H.264 clip encoded here and
checks what it printed against numbers computed without it.

Usage: check_decode_to_tensor.py EXAMPLE STORAGE

The clip (videotestsrc, 12 frames of 320x200, openh264enc) is decoded once
more by plain GStreamer elements (openh264dec ! tensorconvert, system
memory, no tensorupload, no DLPack) into a raw file; plain Python computes
each frame's per-channel means of that NCHW float32 tensor, and every line the
example printed must match them to 1e-4, with the shape it reported. Exit 77
(skip) is passed on from the example (no headless GL for storage=pbo)."""

import array
import math
import os
import re
import subprocess
import sys
import tempfile



WIDTH, HEIGHT, FRAMES = 96, 64, 12


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)


def reference_env(example):
    """The environment for gst-launch-1.0 next to `example`: under the ASan
    build our plugin is sanitized, so a plain gst-launch-1.0 that loads it
    needs the ASan runtime preloaded (its own leaks are not ours to check)."""
    env = dict(os.environ)
    linked = run(["ldd", example]).stdout
    asan = re.search(r"libasan\.so\S* => (\S+)", linked)
    if asan:
        env["LD_PRELOAD"] = asan.group(1)
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return env


def main():
    example, storage = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="tensormem-example-") as tmp:
        clip = os.path.join(tmp, "clip.h264")
        raw = os.path.join(tmp, "tensors.f32")
        env = reference_env(example)
        made = run(["gst-launch-1.0", "-q", "videotestsrc", f"num-buffers={FRAMES}", "pattern=smpte", "!",
                    "video/x-raw,format=I420,width=320,height=200,framerate=30/1", "!", "openh264enc", "!",
                    "h264parse", "!", "filesink", f"location={clip}"], env=env)
        if made.returncode != 0:
            print("encoding the clip failed:", made.stderr)
            return 1
        ref = run(["gst-launch-1.0", "-q", "filesrc", f"location={clip}", "!", "h264parse", "!", "openh264dec", "!",
                   "tensorconvert", f"width={WIDTH}", f"height={HEIGHT}", "resize=letterbox", "dtype=float32",
                   "layout=nchw", "!", "filesink", f"location={raw}"], env=env)
        if ref.returncode != 0:
            print("the reference decode failed:", ref.stderr)
            return 1
        out = run([example, f"--storage={storage}", clip, str(WIDTH), str(HEIGHT)])
        print(out.stdout, end="")
        if out.returncode == 77:
            return 77
        if out.returncode != 0:
            print("the example failed:", out.stderr)
            return 1
        values = array.array("f")
        with open(raw, "rb") as f:
            values.frombytes(f.read())
        plane = HEIGHT * WIDTH
        tensors = [values[i:i + 3 * plane] for i in range(0, len(values), 3 * plane)]
        lines = re.findall(r"^frame (\d+): device (\w+) shape (\S+) mean (\S+) (\S+) (\S+)$", out.stdout, re.M)
        if len(lines) != len(tensors) or len(lines) != FRAMES:
            print(f"the example printed {len(lines)} frames, the reference decoded {len(tensors)}, "
                  f"the clip has {FRAMES}")
            return 1
        for (index, device, shape, *means), tensor in zip(lines, tensors):
            if shape != f"1x3x{HEIGHT}x{WIDTH}":
                print(f"frame {index}: shape {shape}")
                return 1
            want = [math.fsum(tensor[c * plane:(c + 1) * plane]) / plane for c in range(3)]
            got = [float(m) for m in means]
            if any(abs(g - w) > 1e-4 for g, w in zip(got, want)):
                print(f"frame {index} ({device}): means {got} but the reference gives {want}")
                return 1
        print(f"{len(lines)} frames match the reference means")
        return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""RSS over READY<->PAUSED cycles (issue 37's "also seen"), on demand:

  state_cycles.py gst MODEL|none|plain N
      N cycles of videotestsrc ! tensorconvert ! tensorinfer model=MODEL !
      fakesink (none: without tensorinfer; plain: videoconvert in place of
      every element of ours), each prerolling one frame
  state_cycles.py ort MODEL N
      N ONNX Runtime sessions of MODEL made, run once and dropped through
      its Python API, for comparison

Prints the RSS after the first tenth of the cycles and after the last, and
the growth per cycle in between. Run with GST_PLUGIN_PATH naming the build's
gst/plugin and gst/infer (docs/tensorinfer.md has the commands and figures).
"""
import gc
import sys


def rss_kb():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def ort_cycles(model, n):
    import numpy as np
    import onnxruntime as ort
    x = np.zeros((1, 3, 16, 16), dtype=np.float32)
    samples = []
    for _ in range(n):
        session = ort.InferenceSession(model, providers=['CPUExecutionProvider'])
        session.run(None, {session.get_inputs()[0].name: x})
        del session
        gc.collect()
        samples.append(rss_kb())
    return samples


def gst_cycles(model, n):
    import gi
    gi.require_version('Gst', '1.0')
    from gi.repository import Gst
    Gst.init(None)
    head = 'videotestsrc ! video/x-raw,format=RGBA,width=16,height=16 ! '
    if model == 'plain':
        chain = 'videoconvert ! '
    else:
        chain = 'tensorconvert width=16 height=16 layout=nchw dtype=float32 ! '
        if model != 'none':
            chain += 'tensorinfer model=%s ! ' % model
    pipeline = Gst.parse_launch(head + chain + 'fakesink')
    samples = []
    for _ in range(n):
        for state in (Gst.State.PAUSED, Gst.State.READY):
            pipeline.set_state(state)
            pipeline.get_state(Gst.CLOCK_TIME_NONE)
        samples.append(rss_kb())
    pipeline.set_state(Gst.State.NULL)
    return samples


def main(argv):
    if len(argv) != 4 or argv[1] not in ('gst', 'ort'):
        print(__doc__, file=sys.stderr)
        return 2
    n = int(argv[3])
    samples = (gst_cycles if argv[1] == 'gst' else ort_cycles)(argv[2], n)
    start = n // 10
    print('%s %s: %d cycles, RSS %d kB after %d, %d kB after %d: %.1f kB per cycle' %
          (argv[1], argv[2], n, samples[start], start, samples[-1], n, (samples[-1] - samples[start]) / (n - start)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))

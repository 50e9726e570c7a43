#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The top five scores of each frame, read from tensorinfer's output in the
frame's GstTensorMeta through GStreamer's analytics library (GstAnalytics,
1.26) from Python: the same lines as examples/infer_top_scores.c prints.

Usage:
  infer_scores.py MODEL.onnx [VIDEO_FILE]

The model takes a float32 [1,3,224,224] image (ImageNet normalisation) and
gives one float32 [1,N] score tensor; without a file, ten frames of
videotestsrc stand in for the video. Needs PyGObject with GStreamer and the
GstAnalytics-1.0 typelib (Debian 13: python3-gi, python3-gst-1.0,
gir1.2-gst-plugins-bad-1.0), and tensorinfer (GST_PLUGIN_PATH=build/gst/plugin:build/gst/infer
for an uninstalled build). Exits 77 when PyGObject or a typelib is missing.
"""

import array
import sys

try:
    import gi

    gi.require_version("Gst", "1.0")
    gi.require_version("GstAnalytics", "1.0")
    from gi.repository import GLib, Gst, GstAnalytics
except (ImportError, ValueError) as e:
    print("PyGObject with Gst and GstAnalytics 1.0 is needed (Debian: python3-gst-1.0, gir1.2-gst-plugins-bad-1.0): %s" % e)
    sys.exit(77)

TOP = 5


def scores_of(buffer):
    """The first float32 [1,N] tensor of the buffer's GstTensorMeta."""
    meta = GstAnalytics.buffer_get_tensor_meta(buffer)
    if meta is None:
        return None
    for i in range(meta.num_tensors):
        tensor = meta.get(i)
        dims = tensor.get_dims()
        if tensor.data_type == GstAnalytics.TensorDataType.FLOAT32 and len(dims) == 2 and dims[0] == 1:
            return tensor
    return None


def top_line(frame, tensor):
    ok, info = tensor.data.map(Gst.MapFlags.READ)
    if not ok:
        return None
    values = array.array("f", bytes(info.data))
    tensor.data.unmap(info)
    n = min(tensor.get_dims()[1], len(values))
    # Stable, best first, ties to the lower class: as the C example's selection.
    best = sorted(range(n), key=lambda c: (-values[c], c))[:TOP]
    pairs = " ".join("%d:%.6f" % (c, values[c]) for c in best)
    return "frame %d: %s %s" % (frame, GLib.quark_to_string(tensor.id), pairs)


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    Gst.init(None)
    source = (
        'filesrc location="%s" ! decodebin' % argv[2]
        if len(argv) == 3
        else "videotestsrc num-buffers=10 pattern=ball ! video/x-raw,width=640,height=480"
    )
    pipeline = Gst.parse_launch(
        source + " ! tensorconvert width=224 height=224 layout=nchw dtype=float32 mean=<0.485,0.456,0.406> "
        'std=<0.229,0.224,0.225> output=meta ! tensorinfer model="%s" ! appsink name=sink sync=false' % argv[1]
    )
    sink = pipeline.get_by_name("sink")
    bus = pipeline.get_bus()
    failure = None
    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        failure = bus.pop_filtered(Gst.MessageType.ERROR)
    frames = scored = 0
    while failure is None:
        sample = sink.emit("try-pull-sample", 100 * Gst.MSECOND)
        if sample is not None:
            tensor = scores_of(sample.get_buffer())
            line = top_line(frames, tensor) if tensor is not None else None
            if line is not None:
                print(line)
                scored += 1
            frames += 1
        elif sink.get_property("eos"):
            break
        else:
            failure = bus.pop_filtered(Gst.MessageType.ERROR)
    status = 0 if frames > 0 and scored == frames else 1
    if failure is not None:
        error, _ = failure.parse_error()
        print("error from %s: %s" % (failure.src.get_name(), error.message), file=sys.stderr)
        status = 1
    pipeline.set_state(Gst.State.NULL)
    print("%d frames, %d with scores" % (frames, scored))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))

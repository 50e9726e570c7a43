#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Runs examples/python/tensor_to_numpy.py on a short pipeline and compares
every numpy array it makes with the bytes `tensordownload ! filesink` writes
for the same input.

Usage: test_numpy_compare.py EXAMPLE HEAD FRAMES SHAPE DTYPE STRIDES

HEAD is the pipeline up to the sink (videotestsrc num-buffers=FRAMES ...);
SHAPE and STRIDES are comma-separated (strides in bytes, as numpy gives
them). Each array must have exactly that shape, dtype and strides, must be
a view of the buffer's mapped memory (its data address is the one the
DLPack tensor points at, and it owns no data), and its bytes in C order must
equal the frame tensordownload wrote (a raw video frame without its row
padding). Exit 77 when gi or numpy is missing."""

import os
import sys
import tempfile

import pyenv


def main(example_path, head, frames, shape, dtype, strides):
    pyenv.require()
    import numpy as np
    from gi.repository import Gst

    example = pyenv.load_example(example_path)
    frames = int(frames)
    shape = tuple(int(v) for v in shape.split(","))
    strides = tuple(int(v) for v in strides.split(","))
    dtype = np.dtype(dtype)

    arrays = []
    for array, wrapper in example.frames(head + " ! appsink name=sink"):
        address = array.__array_interface__["data"][0]
        if address != wrapper.data_address:
            return fail("frame %d: the array starts at %#x, the DLPack tensor at %#x: a copy" %
                        (len(arrays), address, wrapper.data_address))
        if array.flags.owndata:
            return fail("frame %d: the array owns its data: a copy" % len(arrays))
        arrays.append(array)
    if len(arrays) != frames:
        return fail("%d frames through the example, expected %d" % (len(arrays), frames))

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "frames.bin")
        pipeline = Gst.parse_launch(head + " ! tensordownload ! filesink location=" + path)
        pipeline.set_state(Gst.State.PLAYING)
        message = pipeline.get_bus().timed_pop_filtered(60 * Gst.SECOND,
                                                        Gst.MessageType.EOS | Gst.MessageType.ERROR)
        pipeline.set_state(Gst.State.NULL)
        if message is None or message.type != Gst.MessageType.EOS:
            return fail("the tensordownload ! filesink pipeline did not reach EOS: %s" %
                        (message.parse_error()[0].message if message else "timeout"))
        with open(path, "rb") as f:
            reference = f.read()

    # A tensor is written compact; a raw video frame (height, width,
    # channels) in GStreamer's default layout, whose rows may be padded.
    frame_bytes = int(np.prod(shape)) * dtype.itemsize
    if len(reference) % frames:
        return fail("tensordownload wrote %d bytes, not %d whole frames" % (len(reference), frames))
    written = len(reference) // frames
    row_bytes = frame_bytes // shape[0]
    row_stride = written // shape[0] if len(shape) == 3 else row_bytes
    if written != (frame_bytes if len(shape) != 3 else row_stride * shape[0]) or row_stride < row_bytes:
        return fail("tensordownload wrote %d-byte frames, which do not hold %s %s" % (written, shape, dtype))
    for i, array in enumerate(arrays):
        if array.shape != shape or array.dtype != dtype or array.strides != strides:
            return fail("frame %d: shape %s dtype %s strides %s, expected %s %s %s" %
                        (i, array.shape, array.dtype, array.strides, shape, dtype, strides))
        frame = reference[i * written:(i + 1) * written]
        expected = b"".join(frame[r * row_stride:r * row_stride + row_bytes] for r in range(shape[0]))
        got = array.tobytes()
        if got != expected:
            first = next(k for k in range(frame_bytes) if got[k] != expected[k])
            return fail("frame %d: bytes differ from tensordownload's first at byte %d (%d vs %d)" %
                        (i, first, got[first], expected[first]))
    print("%d frames: shape %s dtype %s strides %s, views of the buffers, equal to tensordownload's bytes" %
          (frames, shape, dtype, strides))
    return 0


def fail(text):
    print("FAIL: " + text)
    return 1


if __name__ == "__main__":
    if len(sys.argv) != 7:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Lifetime of a numpy array made through examples/python/tensor_to_numpy.py.

Usage: test_lifetime.py EXAMPLE

Checked with gst_tensor_mem_dlpack_get_stats() (tensors made and released
by their deleter) and the buffer's own reference count:
- the array outlives the sample, its wrapper and the stopped pipeline (whose
  pool is gone): its bytes stay what they were, and the buffer stays
  referenced once more while the array lives;
- the deleter runs exactly once when the array is freed (numpy consumed the
  capsule), and exactly once when a wrapper is dropped unconsumed;
- a second __dlpack__, a copy and another device are refused (and a refusal
  leaves the tensor to the wrapper), and a refused buffer (NV12, two planes)
  makes no tensor. Exit 77 when gi or numpy is missing."""

import gc
import sys

import pyenv


def main(example_path):
    pyenv.require()
    import numpy as np
    from gi.repository import GLib, Gst, GstTensorMem

    example = pyenv.load_example(example_path)
    failures = []

    def check(ok, text):
        if not ok:
            failures.append(text)
            print("FAIL: " + text)

    def alive():
        made, released = GstTensorMem.dlpack_get_stats()
        return made - released

    def stats():
        return tuple(GstTensorMem.dlpack_get_stats())

    check(alive() == 0, "tensors alive before the test: %d" % alive())

    # One frame of tensor memory from a pool, then the pipeline is stopped
    # and dropped: the array must keep its buffer (and so its memory).
    pipeline = Gst.parse_launch("videotestsrc num-buffers=1 pattern=ball ! "
                                "video/x-raw,format=RGBA,width=65,height=33 ! tensorupload ! "
                                "appsink name=sink sync=false")
    sink = pipeline.get_by_name("sink")
    pipeline.set_state(Gst.State.PLAYING)
    sample = sink.emit("try-pull-sample", 10 * Gst.SECOND)
    check(sample is not None, "no sample")
    buffer = sample.get_buffer()
    wrapper = example.DLPackBuffer(buffer, sample.get_caps())
    check(wrapper.__dlpack_device__() == (example.KDL_CPU, 0),
          "device %s, expected (kDLCPU, 0)" % (wrapper.__dlpack_device__(),))
    array = np.from_dlpack(wrapper)
    snapshot = array.copy()
    try:
        wrapper.__dlpack__()
        check(False, "a second __dlpack__ was not refused")
    except BufferError:
        pass
    check(alive() == 1, "%d tensors alive with one array, expected 1" % alive())
    made = stats()[0]
    del wrapper
    gc.collect()
    check(stats()[1] == made - 1, "dropping a consumed wrapper released the tensor it handed out")
    del buffer, sample
    pipeline.set_state(Gst.State.NULL)
    del sink, pipeline
    gc.collect()
    check(alive() == 1, "the array's tensor did not outlive the sample and the pipeline")
    check(np.array_equal(array, snapshot), "the array's bytes changed after the pipeline stopped")
    released = stats()[1]
    del array
    gc.collect()
    check(stats() == (made, released + 1),
          "freeing the array released %d tensors, expected exactly 1" % (stats()[1] - released))

    # A buffer only this test holds, so its reference count says who else
    # does. A wrapper nobody consumes: its capsule's destructor runs the
    # deleter.
    buffer = Gst.Buffer.new_wrapped(bytes(range(64)) * 3)
    caps = Gst.Caps.from_string("video/x-raw,format=RGB,width=4,height=4")
    refs_before = buffer.mini_object.refcount
    before = stats()
    wrapper = example.DLPackBuffer(buffer, caps)
    check(stats() == (before[0] + 1, before[1]), "making a wrapper did not make exactly one tensor")
    check(buffer.mini_object.refcount == refs_before + 1,
          "the DLPack tensor holds %d buffer references, expected one" %
          (buffer.mini_object.refcount - refs_before))
    for request in ({"copy": True}, {"dl_device": (2, 0)}):
        try:
            wrapper.__dlpack__(**request)
            check(False, "__dlpack__(%s) was not refused" % request)
        except BufferError:
            pass
    del wrapper
    gc.collect()
    check(stats() == (before[0] + 1, before[1] + 1),
          "dropping an unconsumed wrapper released %d tensors, expected 1" % (stats()[1] - before[1]))
    check(buffer.mini_object.refcount == refs_before, "the buffer kept a reference after the release")

    # Consumed and then the array dropped at once: still exactly one release.
    before = stats()
    array = np.from_dlpack(example.DLPackBuffer(buffer, caps))
    check(array.shape == (4, 4, 3) and array[0, 1, 0] == 3, "the wrapped bytes read back wrong: %s" % array[0])
    check(buffer.mini_object.refcount == refs_before + 1, "the array does not hold its buffer")
    del array
    gc.collect()
    check(stats() == (before[0] + 1, before[1] + 1), "a consumed tensor was not released exactly once")
    check(buffer.mini_object.refcount == refs_before, "the buffer kept a reference after the array")

    # A refusal makes no tensor and leaks nothing.
    before = stats()
    nv12 = Gst.Caps.from_string("video/x-raw,format=NV12,width=4,height=4")
    try:
        example.DLPackBuffer(Gst.Buffer.new_wrapped(bytes(24)), nv12)
        check(False, "NV12 (two planes) was not refused")
    except GLib.Error as e:
        check("one plane" in e.message, "refusal without the reason: %s" % e.message)
    check(stats() == before, "a refused buffer changed the counters")
    check(alive() == 0, "%d tensors still alive at the end" % alive())

    if failures:
        return 1
    print("lifetime: the array outlives sample and pipeline; one release per tensor, consumed or not")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))

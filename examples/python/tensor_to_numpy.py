#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Pulls buffers from an appsink and hands each to numpy without a copy.

Every buffer is wrapped in a `DLPackBuffer`, an object with `__dlpack__` and
`__dlpack_device__` (the DLPack Python protocol), built on
`GstTensorMem.buffer_to_dlpack()` (C: gst_tensor_mem_buffer_to_dlpack_address(),
the introspectable form of gst_tensor_mem_buffer_to_dlpack()).
`numpy.from_dlpack()` turns it into an array over the buffer's own mapped
memory; the array keeps the buffer referenced and mapped until it is freed.
The same object feeds `torch.from_dlpack()` or `cupy.from_dlpack()`, which
also take the CUDA tensors that `tensorcudaimport` provides.

Usage:
  tensor_to_numpy.py [--frames N] [PIPELINE]

PIPELINE is a gst-launch description ending in `appsink name=sink`; by default
a 320x240 RGBA test picture goes through `tensorconvert` into a 1x3x224x224
float32 tensor. For each frame the shape, dtype, strides and per-channel mean
are printed.

Needs PyGObject with GStreamer (Debian: python3-gi, python3-gst-1.0,
gir1.2-gstreamer-1.0), numpy >= 1.22 and the GstTensorMem-1.0 typelib: for
an uninstalled build, GI_TYPELIB_PATH=build/gst/tensormem,
LD_LIBRARY_PATH=build/gst/tensormem and GST_PLUGIN_PATH=build/gst/plugin.
"""

import argparse
import ctypes
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstTensorMem", "1.0")
from gi.repository import Gst, GstTensorMem  # noqa: E402

DEFAULT_PIPELINE = (
    "videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=320,height=240 ! "
    "tensorupload ! tensorconvert width=224 height=224 dtype=float32 layout=nchw "
    'mean="<0.485,0.456,0.406>" std="<0.229,0.224,0.225>" ! appsink name=sink'
)

# DLPack's C structs (dlpack/dlpack.h), as far as a consumer reads them.
KDL_CPU = 1


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))),
]

# The capsule protocol: a fresh capsule is named "dltensor"; a consumer that
# takes the tensor renames it "used_dltensor" and calls the deleter itself
# later. So the capsule's destructor calls the deleter only while the name
# is still "dltensor": exactly once either way.
_api = ctypes.pythonapi
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CapsuleDestructor]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

_DLTENSOR = b"dltensor"


def _destroy_capsule(capsule):
    # The capsule arrives as a bare address: it is being deallocated, and a
    # Python object made of it would be freed a second time.
    if _api.PyCapsule_IsValid(capsule, _DLTENSOR):
        managed = ctypes.cast(_api.PyCapsule_GetPointer(capsule, _DLTENSOR), ctypes.POINTER(DLManagedTensor))
        managed.contents.deleter(managed)


_DESTROY_CAPSULE = _CapsuleDestructor(_destroy_capsule)
# The capsule keeps pointers to the name and to the destructor's thunk; a
# capsule freed at interpreter exit may outlive this module's globals, so
# both are kept alive for good.
_api.Py_IncRef.argtypes = [ctypes.py_object]
_api.Py_IncRef(_DLTENSOR)
_api.Py_IncRef(_DESTROY_CAPSULE)


class DLPackBuffer:
    """A GstBuffer offered to DLPack consumers (numpy, PyTorch, CuPy).

    The tensor is made at once (so a refusal, e.g. NV12 or a buffer of several
    memories, raises GLib.Error here) and owned by a capsule until a consumer
    takes it. `__dlpack__` may be called once."""

    def __init__(self, buffer, caps, writable=False):
        flags = Gst.MapFlags.READ | Gst.MapFlags.WRITE if writable else Gst.MapFlags.READ
        address = GstTensorMem.buffer_to_dlpack(buffer, caps, flags)
        tensor = ctypes.cast(address, ctypes.POINTER(DLManagedTensor)).contents.dl_tensor
        self.device = (tensor.device.device_type, tensor.device.device_id)
        #: Where the first element lies: the array numpy makes starts here.
        self.data_address = (tensor.data or 0) + tensor.byte_offset
        self._capsule = _api.PyCapsule_New(address, _DLTENSOR, _DESTROY_CAPSULE)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        # The tensor is ready when it is handed out (a fence on the buffer was
        # waited for on the CPU), so there is nothing to order on `stream`.
        # Newer consumers (numpy 2, the 2023 array API) may pass max_version:
        # an unversioned "dltensor" capsule is the answer a producer without
        # DLPack 1.0 support gives. A copy or another device is not offered.
        if copy:
            raise BufferError("DLPackBuffer hands out the buffer's own memory, never a copy")
        if dl_device is not None and tuple(dl_device) != self.device:
            raise BufferError("the tensor is on device %s, not %s" % (self.device, tuple(dl_device)))
        if self._capsule is None:
            raise BufferError("this buffer's DLPack tensor was already handed out")
        capsule, self._capsule = self._capsule, None
        return capsule


def sample_to_numpy(sample):
    """The array over `sample`'s buffer (no copy), and the wrapper it came from."""
    import numpy

    wrapped = DLPackBuffer(sample.get_buffer(), sample.get_caps())
    return numpy.from_dlpack(wrapped), wrapped


def frames(description, limit=None):
    """Runs `description` and yields (array, wrapper) for each buffer its
    `appsink name=sink` receives, up to `limit`. Raises RuntimeError on a
    pipeline error."""
    Gst.init(None)
    GstTensorMem.init()
    pipeline = Gst.parse_launch(description)
    sink = pipeline.get_by_name("sink")
    if sink is None:
        raise RuntimeError("the pipeline has no element named 'sink' (an appsink)")
    sink.set_property("sync", False)
    pipeline.set_state(Gst.State.PLAYING)
    try:
        count = 0
        while limit is None or count < limit:
            sample = sink.emit("try-pull-sample", 10 * Gst.SECOND)
            if sample is None:
                message = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
                if message is not None:
                    error, debug = message.parse_error()
                    raise RuntimeError("%s (%s)" % (error.message, debug))
                if sink.get_property("eos"):
                    return
                raise RuntimeError("no buffer within 10 s")
            count += 1
            yield sample_to_numpy(sample)
    finally:
        pipeline.set_state(Gst.State.NULL)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=None, help="stop after this many buffers")
    parser.add_argument("pipeline", nargs="?", default=DEFAULT_PIPELINE)
    args = parser.parse_args(argv)
    for index, (array, _) in enumerate(frames(args.pipeline, args.frames)):
        # One mean per channel: axis 1 of NCHW, the last axis of NHWC/video.
        channels = 1 if array.ndim == 4 and array.shape[1] in (1, 3, 4) else array.ndim - 1
        axes = tuple(a for a in range(array.ndim) if a != channels)
        means = array.mean(axis=axes)
        print(
            "frame %d: shape %s dtype %s strides %s mean %s"
            % (index, array.shape, array.dtype, array.strides, " ".join("%.4f" % m for m in means))
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

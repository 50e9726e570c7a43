# SPDX-License-Identifier: Apache-2.0
"""What the Python tests share: the skip when PyGObject, GStreamer's GI
data, numpy or the GstTensorMem typelib is missing, and loading the example
as a module."""

import importlib.util
import sys

SKIP = 77


def require(numpy=True):
    """Imports gi (Gst, GstTensorMem) and numpy, or exits 77 saying which is
    missing and which Debian package brings it."""
    try:
        import gi
    except ImportError as e:
        skip("PyGObject is not installed for %s (Debian: python3-gi): %s" % (sys.executable, e))
    for namespace, package in (("Gst", "gir1.2-gstreamer-1.0"), ("GstTensorMem", None)):
        try:
            gi.require_version(namespace, "1.0")
        except ValueError as e:
            if package is None:
                skip("the GstTensorMem-1.0 typelib is not on GI_TYPELIB_PATH (-Dintrospection): %s" % e)
            skip("no %s-1.0 typelib (Debian: %s): %s" % (namespace, package, e))
    if numpy:
        try:
            import numpy as np
        except ImportError as e:
            skip("numpy is not installed for %s (Debian: python3-numpy): %s" % (sys.executable, e))
        if not hasattr(np, "from_dlpack"):
            skip("numpy %s has no from_dlpack (needs 1.22)" % np.__version__)
    from gi.repository import Gst, GstTensorMem

    Gst.init(None)
    GstTensorMem.init()


def skip(reason):
    print("SKIP: " + reason)
    sys.exit(SKIP)


def load_example(path):
    """examples/python/tensor_to_numpy.py as a module."""
    spec = importlib.util.spec_from_file_location("tensor_to_numpy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

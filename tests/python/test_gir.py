#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The GstTensorMem-1.0 introspection data covers the C API and loads.

Usage: test_gir.py GIR HEADER...

- The installed C HEADERs are C only (the C++ entry points live in
  the .hpp companions), and the GIR names its functions with at most two
  symbol prefixes (gst_tensor_mem, and gst for gst_buffer_* and the like),
  and every function name says tensor_mem (gst_buffer_get_tensor_mem_cuda_meta).
- Every function that the installed HEADERs declare (GST_TENSOR_MEM_API) is in GIR, and introspectable unless it is
  one of NOT_INTROSPECTABLE below (each with the reason).
- The typelib loads (GI_TYPELIB_PATH) and its function list is the GIR's;
  the annotations come through to Python: (out) parameters return tuples,
  (rename-to) gives buffer_to_dlpack, (transfer full) constructors return
  owned objects.
Prints the functions, one per line. Exit 77 when gi is missing."""

import re
import sys
import xml.etree.ElementTree as ET

import pyenv

# C functions introspection cannot use, and why (the doc comment says so
# too, with (skip)).
NOT_INTROSPECTABLE = {
    # DLManagedTensor is DLPack's plain C struct; bindings call
    # gst_tensor_mem_buffer_to_dlpack_address() (rename-to
    # gst_tensor_mem_buffer_to_dlpack) instead.
    "gst_tensor_mem_buffer_to_dlpack",
    # In-parameters that are the address of an element's slot, read under its
    # object lock: a binding cannot pass one (elements written in C call them).
    "gst_tensor_mem_gl_worker_handle_context_query",
    "gst_tensor_mem_d3d11_device_handle_context_query",
}

CORE = "{http://www.gtk.org/introspection/core/1.0}"
C_ID = "{http://www.gtk.org/introspection/c/1.0}identifier"


def code_of(path):
    """`path` without its comments."""
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def cxx_in(path):
    """The C++ constructs left in a header once comments are gone."""
    return sorted(set(re.findall(r"__cplusplus|\bstd::|\bnamespace\b|\btensormem::|\btemplate\s*<", code_of(path))))


def c_declarations(path):
    """The functions a C compiler sees in `path` with GST_TENSOR_MEM_API."""
    text = code_of(path)
    return set(re.findall(r"GST_TENSOR_MEM_API\s+[^;(]*?\b(gst_\w+)\s*\(", text))


def main(gir_path, headers):
    failures = []

    def check(ok, text):
        if not ok:
            failures.append(text)
            print("FAIL: " + text)

    declared = set()
    skipped = set()
    for header in headers:
        declared |= c_declarations(header)
        check(not cxx_in(header), "%s: C++ in an installed C header: %s" % (header, cxx_in(header)))
    namespace = ET.parse(gir_path).getroot().find(CORE + "namespace")
    prefixes = namespace.get("{http://www.gtk.org/introspection/c/1.0}symbol-prefixes", "").split(",")
    check(1 <= len(prefixes) <= 2, "the GIR uses %d symbol prefixes: %s" % (len(prefixes), prefixes))
    check(len(declared) > 50, "only %d C functions found in the headers" % len(declared))
    # One naming rule within the gst prefix: every function says whose it is.
    # Our types' functions are gst_tensor_mem_<type>_*; a function named
    # after the GStreamer object it extends (gst_buffer_*, gst_context_*,
    # gst_is_*) names tensor_mem after that object's part of the name.
    for name in sorted(declared):
        check(name.startswith("gst_tensor_mem_") or "_tensor_mem_" in name + "_",
              "%s: a gst_ function that does not say tensor_mem" % name)

    functions = {}
    for element in ET.parse(gir_path).iter():
        if element.tag in (CORE + "function", CORE + "method", CORE + "constructor") and element.get(C_ID):
            functions[element.get(C_ID)] = element
    for name in sorted(declared):
        if name.endswith("_get_type"):
            continue  # the GType of a class, boxed or enum: an attribute, not a function
        element = functions.get(name)
        if element is None:
            check(False, "%s is declared to C but missing from the GIR" % name)
            continue
        introspectable = element.get("introspectable", "1") == "1"
        expected = name not in NOT_INTROSPECTABLE
        if not expected:
            skipped.add(name)
        check(introspectable == expected, "%s: introspectable=%s, expected %s" % (name, introspectable, expected))
        shown = element.get("shadows") or element.get("name")
        print("%-50s %s%s" % (name, shown, "" if introspectable else "  (skip)"))

    pyenv.require(numpy=False)
    from gi import _gi
    from gi.repository import Gst, GstTensorMem

    repo = _gi.Repository.get_default()
    loaded = set()
    for info in repo.get_infos("GstTensorMem"):
        if isinstance(info, _gi.FunctionInfo):
            loaded.add(info.get_symbol())
        elif hasattr(info, "get_methods"):
            loaded |= {m.get_symbol() for m in info.get_methods()}
    wanted = {n for n, e in functions.items() if e.get("introspectable", "1") == "1" and n in declared}
    check(wanted <= loaded, "functions of the GIR missing from the typelib: %s" % sorted(wanted - loaded))

    check(GstTensorMem.buffer_to_dlpack.get_symbol() == "gst_tensor_mem_buffer_to_dlpack_address",
          "GstTensorMem.buffer_to_dlpack is not the introspectable form")
    stats = GstTensorMem.dlpack_get_stats()
    check(len(stats) == 2 and stats.made >= stats.released, "dlpack_get_stats() (out) pair: %s" % (stats,))
    copies = GstTensorMem.get_copy_stats(GstTensorMem.Storage.SYSTEM)
    check(len(copies) == 2, "get_copy_stats() (out) pair: %s" % (copies,))
    check(GstTensorMem.storage_resolve(GstTensorMem.Storage.AUTO) != GstTensorMem.Storage.AUTO,
          "storage_resolve(AUTO) stayed AUTO")
    allocator = GstTensorMem.SystemAllocator.get()
    memory = allocator.alloc(256, None)
    check(GstTensorMem.is_tensor_mem_memory(memory), "system tensor allocator memory is not tensor memory")
    check(GstTensorMem.memory_get_storage(memory) == GstTensorMem.Storage.SYSTEM, "storage of system memory")
    pool = GstTensorMem.BufferPool.new_for_storage(GstTensorMem.Storage.SYSTEM)
    check(isinstance(pool, Gst.BufferPool) and GstTensorMem.BufferPool.get_storage(pool) == GstTensorMem.Storage.SYSTEM,
          "BufferPool.new_for_storage(SYSTEM): %r" % pool)
    buffer = Gst.Buffer.new()
    check(GstTensorMem.buffer_get_tensor_mem_cuda_meta(buffer) is None, "a plain buffer has a CUDA meta")
    check(not GstTensorMem.buffer_has_tensor_mem_fence(buffer), "a plain buffer has a fence")
    # tensorbatch's per-slot metadata reads from Python.
    check(GstTensorMem.buffer_get_tensor_mem_batch_meta(buffer) is None, "a plain buffer has a batch meta")
    GstTensorMem.buffer_add_tensor_mem_batch_meta(buffer, 3)
    batch = GstTensorMem.buffer_get_tensor_mem_batch_meta(buffer)
    check(batch is not None and batch.n_slots == 3 and batch.n_filled == 0, "batch meta of 3 slots: %r" % batch)
    slot = batch.get_slot(2)
    check(slot is not None and not slot.filled and slot.pts == Gst.CLOCK_TIME_NONE and slot.scale_x == 1.0,
          "an empty slot reads as empty: %r" % slot)
    check(batch.get_slot(3) is None, "a slot past the last")
    # The per-stream events between tensorbatch and tensorunbatch, made and
    # read from Python as an application watching the split would.
    end = GstTensorMem.stream_end_event_new("sink_2", True)
    ok, stream, released = GstTensorMem.stream_end_event_parse(end)
    check(ok and stream == "sink_2" and released, "stream-end event round trip: %r" % ((ok, stream, released),))
    check(not GstTensorMem.stream_end_event_parse(Gst.Event.new_eos())[0], "EOS read as a stream end")
    segment = Gst.Segment()
    segment.init(Gst.Format.TIME)
    segment.base = 7 * Gst.SECOND
    moved = GstTensorMem.stream_segment_event_new("sink_1", segment)
    ok, stream, got = GstTensorMem.stream_segment_event_parse(moved)
    check(ok and stream == "sink_1" and got.base == 7 * Gst.SECOND and got.format == Gst.Format.TIME,
          "stream-segment event round trip: %r" % ((ok, stream, got),))
    check(not GstTensorMem.stream_segment_event_parse(end)[0], "a stream end read as a stream segment")
    tags = Gst.TagList.new_empty()
    tags.add_value(Gst.TagMergeMode.REPLACE, Gst.TAG_TITLE, "camera 3")
    tags.set_scope(Gst.TagScope.GLOBAL)
    tagged = GstTensorMem.stream_tags_event_new("sink_3", tags)
    ok, stream, got = GstTensorMem.stream_tags_event_parse(tagged)
    check(ok and stream == "sink_3" and got.get_string(Gst.TAG_TITLE) == (True, "camera 3") and
          got.get_scope() == Gst.TagScope.GLOBAL, "stream-tags event round trip: %r" % ((ok, stream, got),))
    check(not GstTensorMem.stream_tags_event_parse(moved)[0], "a stream segment read as stream tags")
    frame_caps = Gst.Caps.from_string("video/x-raw,format=RGBA,width=64,height=48")
    ok, stream, got = GstTensorMem.stream_caps_event_parse(GstTensorMem.stream_caps_event_new("sink_4", frame_caps))
    check(ok and stream == "sink_4" and got.is_equal(frame_caps),
          "stream-caps event round trip: %r" % ((ok, stream, got),))
    tensor = Gst.Caps.from_string("other/tensors,format=static,num_tensors=1,types=float32,dimensions=32:24:3:1")
    described = GstTensorMem.frame_tensor_event_new(tensor)
    ok, got = GstTensorMem.frame_tensor_event_parse(described)
    check(ok and got.is_equal(tensor) and described.type == Gst.EventType.CUSTOM_DOWNSTREAM_STICKY,
          "frame-tensor event round trip (sticky): %r" % ((ok, got),))
    check(not GstTensorMem.frame_tensor_event_parse(tagged)[0], "stream tags read as a frame's tensor")

    if failures:
        return 1
    print("%d C functions: in the GIR and the typelib, %d of them not introspectable" %
          (len([n for n in declared if not n.endswith("_get_type")]), len(skipped)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2:]))

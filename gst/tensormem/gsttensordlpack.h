// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

#include <dlpack/dlpack.h>

G_BEGIN_DECLS

/**
 * gst_tensor_mem_buffer_to_dlpack:
 * @buffer: a buffer with exactly one memory
 * @caps: what @buffer holds: `other/tensors` with one static tensor (its
 *   `types` and innermost-first `dimensions`, as NNStreamer writes them) or
 *   single-plane raw video (RGBA, BGRx, RGB, GRAY8, …; a #GstVideoMeta's
 *   stride and offset are honoured)
 * @flags: %GST_MAP_READ, or %GST_MAP_READ | %GST_MAP_WRITE for a consumer
 *   that writes (the buffer must then be writable)
 * @error: where a refusal is described
 *
 * Hands @buffer to a DLPack consumer (PyTorch, CuPy, TVM, numpy) without a
 * copy. With a #GstTensorMemCudaMeta (added by `tensorcudaimport`) that maps,
 * the tensor is a CUDA device pointer (device type kDLCUDA); otherwise it is
 * a CPU map of the buffer (kDLCPU). A fence on the buffer is waited for on
 * the CPU first (bounded, 5 s). The result keeps a reference to @buffer and
 * its map until its deleter runs; the consumer calls the deleter exactly
 * once, as DLPack requires.
 *
 * Multi-plane video (NV12, I420) and buffers of several memories are
 * refused: a DLPack tensor is one strided array, and mapping several
 * memories as one would copy them.
 *
 * Not introspectable: #DLManagedTensor is DLPack's plain C struct, which
 * GObject introspection cannot describe (it is neither a GType nor a record
 * of this library's headers), so bindings use
 * gst_tensor_mem_buffer_to_dlpack_address() instead.
 *
 * Returns: (transfer full) (nullable) (skip): a tensor for the consumer, or
 * %NULL with @error set
 *
 * Since: 0.1
 */
GST_TENSOR_MEM_API
DLManagedTensor *gst_tensor_mem_buffer_to_dlpack(GstBuffer *buffer, GstCaps *caps, GstMapFlags flags, GError **error);

/**
 * gst_tensor_mem_buffer_to_dlpack_address: (rename-to gst_tensor_mem_buffer_to_dlpack)
 * @buffer: a buffer with exactly one memory
 * @caps: what @buffer holds, as for gst_tensor_mem_buffer_to_dlpack()
 * @flags: %GST_MAP_READ, or %GST_MAP_READ | %GST_MAP_WRITE
 * @error: where a refusal is described
 *
 * gst_tensor_mem_buffer_to_dlpack() for language bindings: the same
 * `DLManagedTensor *`, returned as an untyped pointer, because
 * introspection cannot describe DLPack's struct. In Python it arrives as an
 * integer address, which the caller wraps in a `PyCapsule` named
 * "dltensor" whose destructor calls the tensor's deleter unless a consumer
 * renamed the capsule to "used_dltensor" (the DLPack Python protocol; see
 * `examples/python/tensor_to_numpy.py`). The caller owns the tensor: its
 * deleter must run exactly once, or @buffer stays mapped and referenced.
 *
 * Returns: (transfer full) (nullable): the address of a `DLManagedTensor`,
 * or %NULL with @error set
 *
 * Since: 0.1
 */
GST_TENSOR_MEM_API
gpointer gst_tensor_mem_buffer_to_dlpack_address(GstBuffer *buffer, GstCaps *caps, GstMapFlags flags, GError **error);

/**
 * gst_tensor_mem_dlpack_get_stats:
 * @made: (out) (optional): DLPack tensors handed out so far in this process
 * @released: (out) (optional): how many of them their deleter has released
 *
 * Counters of gst_tensor_mem_buffer_to_dlpack() (and its binding form), for
 * leak checks: @made - @released tensors are alive, each holding a buffer
 * reference and a map. A deleter that ran twice would count twice (and is
 * a use after free the sanitizers report).
 *
 * Since: 0.1
 */
GST_TENSOR_MEM_API
void gst_tensor_mem_dlpack_get_stats(guint64 *made, guint64 *released);

G_END_DECLS

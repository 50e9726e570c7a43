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
 * Returns: (transfer full) (nullable) (skip): a tensor for the consumer, or
 * %NULL with @error set
 *
 * Since: 0.1
 */
GST_TENSORMEM_API
DLManagedTensor *gst_tensor_mem_buffer_to_dlpack(GstBuffer *buffer, GstCaps *caps, GstMapFlags flags, GError **error);

G_END_DECLS

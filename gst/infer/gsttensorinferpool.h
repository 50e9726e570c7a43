// SPDX-License-Identifier: Apache-2.0
/* tensorinfer's output pool: each buffer holds one system memory per model
 * output, of that output's size, so that ONNX Runtime writes every output
 * straight into a pooled buffer and nothing is allocated per frame. A
 * plain GstBufferPool makes one memory per buffer; other/tensors (NNStreamer)
 * wants one memory per tensor. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_INFER_POOL (gst_tensor_infer_pool_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemInferPool, gst_tensor_infer_pool, GST, TENSOR_INFER_POOL, GstBufferPool)

/* A configured, active pool of buffers made of `n_sizes` memories of
 * `sizes` bytes (64-byte aligned), at least `min_buffers` of them made up
 * front; NULL when activation fails. */
GstBufferPool *gst_tensor_infer_pool_new(const gsize *sizes, guint n_sizes, guint min_buffers);

G_END_DECLS

// SPDX-License-Identifier: Apache-2.0
#include "gsttensorinferpool.h"

struct _GstTensorMemInferPool {
  GstBufferPool parent;
  gsize *sizes; // set once, before the pool is configured
  guint n_sizes;
};

G_DEFINE_TYPE(GstTensorMemInferPool, gst_tensor_infer_pool, GST_TYPE_BUFFER_POOL)

static GstFlowReturn gst_tensor_infer_pool_alloc_buffer(GstBufferPool *pool, GstBuffer **buffer,
                                                        GstBufferPoolAcquireParams *) {
  auto *self = GST_TENSOR_INFER_POOL(pool);
  // 64-byte rows of memory: what ORT's vectorised kernels prefer for their operands.
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 63;
  GstBuffer *out = gst_buffer_new();
  for (guint i = 0; i < self->n_sizes; ++i) {
    GstMemory *memory = gst_allocator_alloc(nullptr, self->sizes[i], &params);
    if (!memory) {
      gst_buffer_unref(out);
      return GST_FLOW_ERROR;
    }
    gst_buffer_append_memory(out, memory);
  }
  *buffer = out;
  return GST_FLOW_OK;
}

static void gst_tensor_infer_pool_finalize(GObject *object) {
  g_free(GST_TENSOR_INFER_POOL(object)->sizes);
  G_OBJECT_CLASS(gst_tensor_infer_pool_parent_class)->finalize(object);
}

static void gst_tensor_infer_pool_class_init(GstTensorMemInferPoolClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = gst_tensor_infer_pool_finalize;
  GST_BUFFER_POOL_CLASS(klass)->alloc_buffer = gst_tensor_infer_pool_alloc_buffer;
}

static void gst_tensor_infer_pool_init(GstTensorMemInferPool *) {}

GstBufferPool *gst_tensor_infer_pool_new(const gsize *sizes, guint n_sizes, guint min_buffers) {
  auto *self = GST_TENSOR_INFER_POOL(g_object_new(GST_TYPE_TENSOR_INFER_POOL, nullptr));
  gst_object_ref_sink(self);
  self->sizes = static_cast<gsize *>(g_memdup2(sizes, sizeof(gsize) * n_sizes));
  self->n_sizes = n_sizes;
  gsize total = 0;
  for (guint i = 0; i < n_sizes; ++i)
    total += sizes[i];
  GstBufferPool *pool = GST_BUFFER_POOL(self);
  GstStructure *config = gst_buffer_pool_get_config(pool);
  // The total: the base class resets a recycled buffer to this size.
  gst_buffer_pool_config_set_params(config, nullptr, static_cast<guint>(total), min_buffers, 0);
  if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
    gst_object_unref(pool);
    return nullptr;
  }
  return pool;
}

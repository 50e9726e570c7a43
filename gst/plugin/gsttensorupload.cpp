// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensorupload
 * @title: tensorupload
 *
 * Moves raw video into tensor memory. It offers a #GstTensorBufferPool
 * upstream, so a producer that takes it (videotestsrc, decoders) writes
 * straight into tensor memory and the buffer passes through untouched; any
 * other buffer is copied once into the element's own pool, and the bytes
 * copied are counted in #GstTensorUpload:copied-bytes.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc ! tensorupload ! tensordownload ! autovideosink
 * ]|
 *
 * Since: 0.1
 */
#include "gsttensorupload.h"

#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensormemory.h>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_upload_debug);
#define GST_CAT_DEFAULT gst_tensor_upload_debug

struct _GstTensorUpload {
  GstTensorTransform parent;
  GstTensorStorage storage; // guarded by the object lock
};

namespace {

enum { PROP_0, PROP_STORAGE };

constexpr guint kProposedMinBuffers = 2;

GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(GST_TENSOR_VIDEO_FORMATS)));
GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(GST_TENSOR_VIDEO_FORMATS)));

bool all_tensor_memory(GstBuffer *buffer) {
  const guint n = gst_buffer_n_memory(buffer);
  if (n == 0)
    return false;
  for (guint i = 0; i < n; ++i) {
    if (!gst_is_tensor_memory(gst_buffer_peek_memory(buffer, i)))
      return false;
  }
  return true;
}

/* A tensor pool configured for `caps`; NULL after a warning when the pool
 * refuses the config. */
GstBufferPool *make_pool(GstElement *element, GstCaps *caps, guint size, guint min_buffers, guint max_buffers,
                         guint *aligned_size) {
  GstBufferPool *pool = gst_tensor_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, size, min_buffers, max_buffers);
  if (!gst_buffer_pool_set_config(pool, config)) {
    GST_WARNING_OBJECT(element, "tensor buffer pool refused caps %" GST_PTR_FORMAT, caps);
    gst_object_unref(pool);
    return nullptr;
  }
  config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_get_params(config, nullptr, aligned_size, nullptr, nullptr);
  gst_structure_free(config);
  return pool;
}

} // namespace

G_DEFINE_TYPE_WITH_CODE(GstTensorUpload, gst_tensor_upload, GST_TYPE_TENSOR_TRANSFORM,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_upload_debug, "tensorupload", 0,
                                                "system memory to tensor memory"))

static void gst_tensor_upload_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_UPLOAD(object);
  switch (prop_id) {
  case PROP_STORAGE:
    GST_OBJECT_LOCK(self);
    self->storage = static_cast<GstTensorStorage>(g_value_get_enum(value));
    GST_OBJECT_UNLOCK(self);
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    break;
  }
}

static void gst_tensor_upload_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_UPLOAD(object);
  switch (prop_id) {
  case PROP_STORAGE:
    GST_OBJECT_LOCK(self);
    g_value_set_enum(value, self->storage);
    GST_OBJECT_UNLOCK(self);
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    break;
  }
}

static gboolean gst_tensor_upload_start(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_UPLOAD(trans);
  GST_OBJECT_LOCK(self);
  const GstTensorStorage storage = self->storage;
  GST_OBJECT_UNLOCK(self);
  if (storage == GST_TENSOR_STORAGE_AUTO)
    GST_INFO_OBJECT(self, "storage=auto resolves to system memory, the only tensor storage in this build");
  return TRUE;
}

/* Offers a tensor pool, the tensor allocator and GstVideoMeta upstream, so
 * the producer writes straight into tensor memory. */
static gboolean gst_tensor_upload_propose_allocation(GstBaseTransform *trans, GstQuery *decide_query,
                                                     GstQuery *query) {
  // Pass on the metas downstream accepts: a buffer that needs no copy keeps its metas.
  if (decide_query &&
      !GST_BASE_TRANSFORM_CLASS(gst_tensor_upload_parent_class)->propose_allocation(trans, decide_query, query))
    return FALSE;

  GstCaps *caps = nullptr;
  gboolean need_pool = FALSE;
  gst_query_parse_allocation(query, &caps, &need_pool);
  GstVideoInfo info;
  if (!caps || !gst_video_info_from_caps(&info, caps)) {
    GST_DEBUG_OBJECT(trans, "allocation query without raw video caps: %" GST_PTR_FORMAT, caps);
    return FALSE;
  }

  GstAllocator *allocator = gst_tensor_system_allocator_get();
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN - 1;

  if (need_pool) {
    guint size = 0;
    GstBufferPool *pool = make_pool(GST_ELEMENT(trans), caps, GST_VIDEO_INFO_SIZE(&info), kProposedMinBuffers, 0, &size);
    if (!pool) {
      gst_object_unref(allocator);
      return FALSE;
    }
    gst_query_add_allocation_pool(query, pool, size, kProposedMinBuffers, 0);
    gst_object_unref(pool);
  }
  gst_query_add_allocation_param(query, allocator, &params);
  gst_object_unref(allocator);
  if (!gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr))
    gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  return TRUE;
}

/* The output pool is always ours; it is only activated when a buffer must
 * be copied. */
static gboolean gst_tensor_upload_decide_allocation(GstBaseTransform *trans, GstQuery *query) {
  GstCaps *caps = nullptr;
  gst_query_parse_allocation(query, &caps, nullptr);
  GstVideoInfo info;
  if (!caps || !gst_video_info_from_caps(&info, caps)) {
    GST_WARNING_OBJECT(trans, "allocation query without raw video caps: %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  guint min_buffers = 0, max_buffers = 0;
  const bool have_pool = gst_query_get_n_allocation_pools(query) > 0;
  if (have_pool)
    gst_query_parse_nth_allocation_pool(query, 0, nullptr, nullptr, &min_buffers, &max_buffers);

  guint size = 0;
  GstBufferPool *pool = make_pool(GST_ELEMENT(trans), caps, GST_VIDEO_INFO_SIZE(&info), min_buffers, max_buffers, &size);
  if (!pool)
    return FALSE;
  if (have_pool)
    gst_query_set_nth_allocation_pool(query, 0, pool, size, min_buffers, max_buffers);
  else
    gst_query_add_allocation_pool(query, pool, size, min_buffers, max_buffers);
  gst_object_unref(pool);
  return TRUE;
}

static GstFlowReturn gst_tensor_upload_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *inbuf,
                                                             GstBuffer **outbuf) {
  auto *self = GST_TENSOR_UPLOAD(trans);
  if (all_tensor_memory(inbuf)) {
    GST_LOG_OBJECT(self, "%" GST_PTR_FORMAT " is tensor memory already, passing it through", inbuf);
    *outbuf = inbuf;
    return GST_FLOW_OK;
  }
  GstFlowReturn ret = gst_tensor_transform_allow_copy(GST_TENSOR_TRANSFORM(self), inbuf);
  if (ret != GST_FLOW_OK)
    return ret;

  GstBufferPool *pool = gst_base_transform_get_buffer_pool(trans);
  if (!pool) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("No output buffer pool."), ("decide_allocation did not run"));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (!gst_buffer_pool_is_active(pool) && !gst_buffer_pool_set_active(pool, TRUE)) {
    gst_object_unref(pool);
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Cannot activate the tensor buffer pool."), (nullptr));
    return GST_FLOW_ERROR;
  }
  ret = gst_buffer_pool_acquire_buffer(pool, outbuf, nullptr);
  gst_object_unref(pool);
  if (ret != GST_FLOW_OK) {
    GST_DEBUG_OBJECT(self, "no buffer from the tensor pool: %s", gst_flow_get_name(ret));
    return ret;
  }
  gst_tensor_transform_copy_metadata(GST_TENSOR_TRANSFORM(self), inbuf, *outbuf);
  return GST_FLOW_OK;
}

static void gst_tensor_upload_class_init(GstTensorUploadClass *klass) {
  auto *gobject_class = G_OBJECT_CLASS(klass);
  auto *element_class = GST_ELEMENT_CLASS(klass);
  auto *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->set_property = gst_tensor_upload_set_property;
  gobject_class->get_property = gst_tensor_upload_get_property;

  g_object_class_install_property(
      gobject_class, PROP_STORAGE,
      g_param_spec_enum("storage", "Storage",
                        "Tensor storage for the output buffers (auto picks the best one available; in this build "
                        "that is system memory)",
                        GST_TYPE_TENSOR_STORAGE, GST_TENSOR_STORAGE_AUTO,
                        static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));

  gst_element_class_set_static_metadata(element_class, "Tensor upload", "Filter/Video",
                                        "Moves raw video into tensor memory: zero-copy when upstream writes into the "
                                        "offered tensor buffer pool, one counted copy otherwise",
                                        "gst-tensormem developers");
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);

  trans_class->start = gst_tensor_upload_start;
  trans_class->propose_allocation = gst_tensor_upload_propose_allocation;
  trans_class->decide_allocation = gst_tensor_upload_decide_allocation;
  trans_class->prepare_output_buffer = gst_tensor_upload_prepare_output_buffer;

  gst_type_mark_as_plugin_api(GST_TYPE_TENSOR_STORAGE, static_cast<GstPluginAPIFlags>(0));
}

static void gst_tensor_upload_init(GstTensorUpload *self) { self->storage = GST_TENSOR_STORAGE_AUTO; }

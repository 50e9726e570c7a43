// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensoruploader.h>

#include <gst/allocators/gstdmabuf.h>
#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensord3d11.h>
#include <gst/tensormem/gsttensordmabuf.h>
#include <gst/tensormem/gsttensorframecopy-private.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensormemory.h>
#include <gst/tensormem/gsttensormethodtable-private.h>

#include <utility>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_uploader_debug);
#define GST_CAT_DEFAULT gst_tensor_uploader_debug

namespace gst_tensormem {

namespace {

constexpr guint kProposedMinBuffers = 2;

void ensure_debug_category() {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    GST_DEBUG_CATEGORY_INIT(gst_tensor_uploader_debug, "tensormemuploader", 0, "upload paths into tensor memory");
    g_once_init_leave(&done, 1);
  }
}

bool all_memories(GstBuffer *buffer, bool (*is_kind)(const UploadContext &, GstMemory *), const UploadContext &ctx) {
  const guint n = gst_buffer_n_memory(buffer);
  if (n == 0)
    return false;
  for (guint i = 0; i < n; ++i) {
    if (!is_kind(ctx, gst_buffer_peek_memory(buffer, i)))
      return false;
  }
  return true;
}

bool caps_have_dmabuf(GstCaps *caps) {
  if (!caps || gst_caps_is_empty(caps) || gst_caps_is_any(caps))
    return false;
  GstCapsFeatures *features = gst_caps_get_features(caps, 0);
  return features && !gst_caps_features_is_any(features) &&
         gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_DMABUF);
}

/* ---- pass-through: the input is tensor memory of the element's storage ---- */

/* One interface lookup per memory (gst_tensor_memory_get_storage() would
 * repeat it three times): this runs for every memory of every buffer. */
bool is_our_storage(const UploadContext &ctx, GstMemory *mem) {
  const tensormem::Tensor *tensor = gst_tensor_memory_get_tensor(mem);
  return tensor && tensor->storage_kind() == ctx.backend->kind;
}

gboolean passthrough_accept(const UploadContext &ctx, GstBuffer *in) { return all_memories(in, is_our_storage, ctx); }

/* Our pool, the allocator and GstVideoMeta, so the producer writes straight
 * into tensor memory and the buffer passes through. An upstream that
 * negotiated memory:DMABuf gets a DMA-BUF pool whatever the storage. */
gboolean passthrough_propose(const UploadContext &ctx, GstQuery *query) {
  GstCaps *caps = nullptr;
  gboolean need_pool = FALSE;
  gst_query_parse_allocation(query, &caps, &need_pool);
  GstVideoInfo info;
  if (!caps || !gst_video_info_from_caps(&info, caps)) {
    GST_DEBUG_OBJECT(ctx.element, "allocation query without raw video caps: %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  const Backend &backend = caps_have_dmabuf(caps) ? dmabuf_backend() : *ctx.backend;
  GstAllocator *allocator = &backend == ctx.backend ? (ctx.allocator ? GST_ALLOCATOR_CAST(gst_object_ref(ctx.allocator)) : nullptr)
                                                    : backend.new_allocator(nullptr);
  if (!allocator) {
    GST_DEBUG_OBJECT(ctx.element, "no %s allocator yet: nothing to propose", backend.memory_name);
    return FALSE;
  }
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = GST_TENSOR_BUFFER_POOL_STRIDE_ALIGN - 1;
  if (need_pool) {
    guint size = 0;
    GstBufferPool *pool = backend_make_pool(backend, ctx.element, allocator, caps, GST_VIDEO_INFO_SIZE(&info),
                                            kProposedMinBuffers, 0, &size);
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

GstFlowReturn passthrough_perform(const UploadContext &ctx, GstBuffer *in, GstBuffer **out, gsize *) {
  GST_LOG_OBJECT(ctx.element, "%" GST_PTR_FORMAT " is %s tensor memory already, passing it through", in,
                 ctx.backend->memory_name);
  *out = in;
  return GST_FLOW_OK;
}

/* ---- fd import: DMA-BUF memory from elsewhere, for DMA-BUF storage ---- */

bool is_dmabuf(const UploadContext &, GstMemory *mem) { return gst_is_dmabuf_memory(mem); }

gboolean fd_import_accept(const UploadContext &ctx, GstBuffer *in) {
  return ctx.backend == &dmabuf_backend() && all_memories(in, is_dmabuf, ctx);
}

/* Upstream's own DMA-BUF pool is what this path wants: nothing to ask. */
gboolean fd_import_propose(const UploadContext &, GstQuery *) { return FALSE; }

/* Wraps each DMA-BUF memory of `in` as DMA-BUF tensor memory of the same
 * buffer (the import is cached per buffer, see
 * gst_tensor_dmabuf_memory_import_storage()), without a copy. */
GstFlowReturn fd_import_perform(const UploadContext &ctx, GstBuffer *in, GstBuffer **outbuf, gsize *) {
  GST_LOG_OBJECT(ctx.element, "%" GST_PTR_FORMAT " is DMA-BUF memory, importing it", in);
  GstAllocator *allocator = gst_tensor_dmabuf_allocator_get();
  GstBuffer *out = gst_buffer_new();
  auto fail = [&](GstFlowReturn ret) {
    gst_buffer_unref(out);
    gst_object_unref(allocator);
    return ret;
  };
  const guint n = gst_buffer_n_memory(in);
  for (guint i = 0; i < n; ++i) {
    GstMemory *mem = gst_buffer_peek_memory(in, i);
    auto storage = gst_tensor_dmabuf_memory_import_storage(mem);
    if (!storage) {
      GST_ELEMENT_ERROR(ctx.element, STREAM, FAILED, ("Cannot import the input's DMA-BUF."),
                        ("memory %u of %" GST_PTR_FORMAT " (fd %d): %s", i, in, gst_dmabuf_memory_get_fd(mem),
                         storage.error().message().c_str()));
      return fail(GST_FLOW_ERROR);
    }
    const gsize capacity = (*storage)->size_bytes();
    if (mem->offset > capacity || mem->size > capacity - mem->offset) {
      GST_ELEMENT_ERROR(ctx.element, STREAM, FAILED, ("The input's DMA-BUF memory runs past the end of its buffer."),
                        ("memory %u (fd %d): offset %" G_GSIZE_FORMAT " + size %" G_GSIZE_FORMAT
                         " exceeds the %" G_GSIZE_FORMAT "-byte DMA-BUF",
                         i, gst_dmabuf_memory_get_fd(mem), mem->offset, mem->size, capacity));
      return fail(GST_FLOW_ERROR);
    }
    GstMemory *ours = gst_tensor_dmabuf_allocator_import(allocator, std::move(*storage));
    if (!ours) {
      GST_ELEMENT_ERROR(ctx.element, RESOURCE, FAILED, ("Cannot wrap the input's DMA-BUF."),
                        ("memory %u of %" GST_PTR_FORMAT, i, in));
      return fail(GST_FLOW_ERROR);
    }
    gst_memory_resize(ours, static_cast<gssize>(mem->offset), mem->size);
    gst_buffer_append_memory(out, ours);
  }
  gst_object_unref(allocator);
  ctx.copy_metadata(ctx.element, in, out);
  const GstVideoMeta *meta = gst_buffer_get_video_meta(in);
  if (meta && !gst_buffer_get_video_meta(out)) {
    GstVideoMeta *copy =
        gst_buffer_add_video_meta_full(out, meta->flags, meta->format, meta->width, meta->height, meta->n_planes,
                                       const_cast<gsize *>(meta->offset), const_cast<gint *>(meta->stride));
    copy->alignment = meta->alignment;
  }
  // The upstream buffer stays ours until `out` goes: its pool cannot recycle it under a reader.
  gst_buffer_add_parent_buffer_meta(out, in);
  *outbuf = out;
  return GST_FLOW_OK;
}

/* ---- copy: anything else, once, into the element's output pool ---- */

gboolean copy_accept(const UploadContext &, GstBuffer *) { return TRUE; }

gboolean copy_propose(const UploadContext &, GstQuery *) { return FALSE; }

GstFlowReturn copy_perform(const UploadContext &ctx, GstBuffer *in, GstBuffer **out, gsize *copied) {
  const GstFlowReturn ret = copy_frame_into_pool(ctx.element, ctx.output_pool, ctx.info, in, out, ctx.copy_metadata);
  if (ret == GST_FLOW_OK)
    *copied = GST_VIDEO_INFO_SIZE(ctx.info);
  return ret;
}

const UploadMethod kMethods[] = {
    {"pass-through", FALSE, passthrough_accept, passthrough_propose, passthrough_perform},
    {"fd-import", FALSE, fd_import_accept, fd_import_propose, fd_import_perform},
    {"copy", TRUE, copy_accept, copy_propose, copy_perform},
};

} // namespace

bool upload_method_is_passthrough(const UploadMethod &method) { return &method == &kMethods[0]; }

const UploadMethod &upload_method_for(const UploadContext &ctx, GstBuffer *in) {
  ensure_debug_category();
  return first_accepting(kMethods, ctx, in);
}

gboolean upload_propose_allocation(const UploadContext &ctx, GstQuery *query) {
  ensure_debug_category();
  return propose_all(kMethods, ctx, query);
}

} // namespace gst_tensormem

// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensordownload
 * @title: tensordownload
 *
 * Hands tensor memory (or any system memory) to elements that expect plain
 * system-memory video. A buffer passes through untouched when downstream
 * has shown it reads #GstVideoMeta (its allocation answer carries
 * %GST_VIDEO_META_API_TYPE and its caps are not ANY) or when its planes
 * already sit where the default layout for the caps puts them; otherwise it
 * is copied once into a default-layout buffer and the bytes are counted in
 * #GstTensorMemDownload:copied-bytes. A consumer such as `filesink` therefore
 * receives the same bytes as without tensor elements.
 *
 * Before a buffer is passed on or copied, tensordownload waits on the CPU for
 * the #GstTensorMemFenceMeta fences it carries (bounded by
 * %GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT; a fence that does not signal in time
 * is an element error naming it), so system-memory consumers read complete
 * bytes.
 *
 * DMA-BUF memory is CPU-mappable as it is, so it passes through the same
 * way. The sink pad takes `video/x-raw(memory:DMABuf)` as well as plain
 * caps; the source pad keeps `memory:DMABuf` when downstream's own caps list
 * it and drops the feature (plain system-memory caps) otherwise, ANY caps
 * included.
 *
 * OpenGL PBO memory (`video/x-raw(memory:TensorPBO)`, #GstTensorMemPboMemory)
 * is CPU-mappable through gst_memory_map() (the map runs on its GL worker),
 * so it follows the same rule as system memory: it goes downstream under
 * plain caps without a copy, as `gldownload` hands on GL memory, unless its
 * layout needs one.
 *
 * Copies go into a pool of default-layout system-memory frames that the
 * element recycles; a frame is never allocated per buffer.
 *
 * Built against GStreamer 1.26 (GST_TENSOR_MEM_HAVE_TENSOR_META), the tensors
 * of the buffer's #GstTensorMeta (`tensorconvert output=meta`,
 * `tensorinfer`, `onnxinference`, an application) follow the frame's rule:
 * before the buffer goes on, tensordownload checks each tensor (data
 * present, a data type GStreamer defines, a data buffer at least as long as
 * its dims say; an element error naming the tensor otherwise) and waits for
 * the fences its data buffer carries, so a consumer that maps #GstTensor.data
 * reads complete bytes. The data stays where it is, with no copy and nothing
 * counted: system, DMA-BUF, PBO and D3D11 memory all map for the CPU
 * through gst_memory_map() (a PBO's map runs on its GL worker), which is
 * what a tensor decoder or an application does with the data. Data in
 * memory flagged %GST_MEMORY_FLAG_NOT_MAPPABLE cannot reach a CPU consumer
 * at all: an element error naming the tensor and its allocator. When the
 * frame is copied into the default layout, the copy carries the
 * #GstTensorMeta too (GStreamer 1.26's meta has no transform function, so
 * GStreamer's own copy would drop it), its tensors' data shared, not copied.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc ! tensorupload ! tensordownload ! fakesink
 * gst-launch-1.0 videotestsrc ! tensorupload storage=pbo ! tensordownload ! autovideosink
 * ]|
 *
 * Since: 0.1
 */
#include "gsttensordownload.h"
#include "gsttensormetaread.h"

#include <gst/allocators/gstdmabuf.h>
#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorcaps.h>
#include <gst/tensormem/gsttensordownloader.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensormemvalidate.h>
#include <gst/tensormem/gsttensorwritable-private.h>

#include <string>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_download_debug);
#define GST_CAT_DEFAULT gst_tensor_download_debug

struct _GstTensorMemDownload {
  GstTensorMemTransform parent;
  gboolean downstream_video_meta; // learnt in decide_allocation, streaming thread only
  gboolean output_dmabuf;         // the source caps carry memory:DMABuf; set in set_caps
  GstBufferPool *copy_pool;       // made in decide_allocation, streaming thread only
  guint64 tensor_bytes;           // other/tensors caps: the tensor's bytes (set in set_caps); 0 for video
};

namespace {

#define DOWNLOAD_PLAIN_CAPS GST_VIDEO_CAPS_MAKE(GST_TENSOR_MEM_VIDEO_FORMATS)

/* The pad templates, from the backend table: frames and tensors (tensorconvert,
 * NNStreamer) in every family's memory in, in memory the CPU can read out.
 * The tensor caps take any other/tensors so that what the element cannot
 * handle (more than one tensor, flexible or sparse formats) reaches set_caps
 * and is refused there by name, not as a bare not-negotiated. */
void add_pad_templates(GstElementClass *element_class) {
  using gst_tensormem::TemplateFamilies;
  GstCaps *sink = gst_tensormem::template_caps(DOWNLOAD_PLAIN_CAPS, TemplateFamilies::All);
  gst_caps_append(sink, gst_tensormem::template_caps("other/tensors", TemplateFamilies::All));
  GstCaps *src = gst_tensormem::template_caps(DOWNLOAD_PLAIN_CAPS, TemplateFamilies::CpuReadableShared);
  gst_caps_append(src, gst_tensormem::template_caps("other/tensors", TemplateFamilies::CpuReadableShared));
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, sink));
  gst_element_class_add_pad_template(element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, src));
  gst_caps_unref(sink);
  gst_caps_unref(src);
}

/* The require-zero-copy error for a frame whose consumer cannot read its
 * layout. */
constexpr const char *kLayoutCopyMessage =
    "The frame is padded, downstream has not shown it reads GstVideoMeta (no video meta in its allocation answer, or "
    "ANY caps), so it needs a copy into the default layout, and require-zero-copy is set.";

void copy_metadata(GstElement *element, GstBuffer *in, GstBuffer *out) {
  gst_tensor_transform_copy_metadata(GST_TENSOR_TRANSFORM_CAST(element), in, out);
}

gst_tensormem::DownloadContext download_context(GstTensorMemDownload *self) {
  return {GST_ELEMENT_CAST(self),
          gst_tensor_transform_get_info(GST_TENSOR_TRANSFORM_CAST(self)),
          self->downstream_video_meta,
          self->output_dmabuf,
          self->copy_pool,
          copy_metadata};
}

} // namespace

G_DEFINE_TYPE_WITH_CODE(GstTensorMemDownload, gst_tensor_download, GST_TYPE_TENSOR_TRANSFORM,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_download_debug, "tensordownload", 0,
                                                "tensor memory to system memory"))

static GstCaps *gst_tensor_download_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                                   GstCaps *filter) {
  GstCaps *templ = gst_pad_get_pad_template_caps(direction == GST_PAD_SINK ? trans->srcpad : trans->sinkpad);
  GstCaps *result = gst_tensormem::download_transform_caps(direction, caps, filter, templ);
  gst_caps_unref(templ);
  GST_DEBUG_OBJECT(trans, "%s %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT, direction == GST_PAD_SINK ? "sink" : "src",
                   caps, result);
  return result;
}

static GstCaps *gst_tensor_download_fixate_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                                GstCaps *othercaps) {
  if (direction == GST_PAD_SINK)
    othercaps = gst_tensormem::download_restrict_output_caps(trans->srcpad, othercaps);
  return GST_BASE_TRANSFORM_CLASS(gst_tensor_download_parent_class)->fixate_caps(trans, direction, caps, othercaps);
}

static gboolean gst_tensor_download_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_TENSOR_DOWNLOAD(trans);
  if (!gst_tensormem::element_read_tensor_caps(GST_ELEMENT(self), incaps, &self->tensor_bytes))
    return FALSE;
  // A tensor has no video layout: the video base class has nothing to check.
  if (!self->tensor_bytes &&
      !GST_BASE_TRANSFORM_CLASS(gst_tensor_download_parent_class)->set_caps(trans, incaps, outcaps))
    return FALSE;
  self->output_dmabuf = gst_tensormem::download_output_keeps_memory(outcaps);
  GST_DEBUG_OBJECT(self, "output caps %s memory:DMABuf", self->output_dmabuf ? "keep" : "drop");
  return TRUE;
}

static gboolean gst_tensor_download_propose_allocation(GstBaseTransform *trans, GstQuery *decide_query,
                                                       GstQuery *query) {
  if (decide_query &&
      !GST_BASE_TRANSFORM_CLASS(gst_tensor_download_parent_class)->propose_allocation(trans, decide_query, query))
    return FALSE;
  if (GST_TENSOR_DOWNLOAD(trans)->tensor_bytes)
    return TRUE; // tensors pass through: nothing to ask of upstream
  gst_tensormem::download_propose_allocation(download_context(GST_TENSOR_DOWNLOAD(trans)), query);
  return TRUE;
}

/* What downstream reads, and the pool copies go into (made once per caps). */
static gboolean gst_tensor_download_decide_allocation(GstBaseTransform *trans, GstQuery *query) {
  auto *self = GST_TENSOR_DOWNLOAD(trans);
  self->downstream_video_meta = gst_tensormem::download_downstream_reads_video_meta(trans->srcpad, query);
  GST_DEBUG_OBJECT(self, "downstream %s GstVideoMeta", self->downstream_video_meta ? "reads" : "does not read");
  GstCaps *caps = nullptr;
  gst_query_parse_allocation(query, &caps, nullptr);
  if (self->copy_pool) {
    gst_buffer_pool_set_active(self->copy_pool, FALSE);
    gst_clear_object(&self->copy_pool);
  }
  if (self->tensor_bytes)
    return TRUE; // tensors pass through: no copy pool
  self->copy_pool = gst_tensormem::download_make_copy_pool(GST_ELEMENT(self), caps);
  return self->copy_pool != nullptr;
}

static gboolean gst_tensor_download_stop(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_DOWNLOAD(trans);
  if (self->copy_pool) {
    gst_buffer_pool_set_active(self->copy_pool, FALSE);
    gst_clear_object(&self->copy_pool);
  }
  return GST_BASE_TRANSFORM_CLASS(gst_tensor_download_parent_class)->stop(trans);
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* The buffer's GstTensorMeta tensors, checked and readable by a CPU consumer
 * once their data's fences have passed (see the section comment). */
static GstFlowReturn download_meta_tensors(GstTensorMemDownload *self, GstBuffer *inbuf) {
  std::vector<gst_tensormem::MetaTensor> tensors;
  if (!gst_tensormem::element_read_tensor_meta(GST_ELEMENT_CAST(self), inbuf, &tensors))
    return GST_FLOW_ERROR;
  for (const gst_tensormem::MetaTensor &t : tensors) {
    for (guint m = 0; m < gst_buffer_n_memory(t.tensor->data); ++m) {
      GstMemory *memory = gst_buffer_peek_memory(t.tensor->data, m);
      if (GST_MEMORY_FLAG_IS_SET(memory, GST_MEMORY_FLAG_NOT_MAPPABLE)) {
        GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                          ("Tensor %" G_GSIZE_FORMAT " ('%s') of the buffer's GstTensorMeta is in memory the CPU "
                           "cannot map (allocator %s): no system-memory consumer can read it.",
                           t.index, gst_tensormem::tensor_id_text(t.tensor),
                           memory->allocator ? memory->allocator->mem_type : "(none)"),
                          (nullptr));
        return GST_FLOW_ERROR;
      }
    }
  }
  return gst_tensormem::element_wait_tensor_fences(GST_ELEMENT_CAST(self), inbuf, tensors,
                                                   gst_tensor_transform_get_waits(GST_TENSOR_TRANSFORM_CAST(self)));
}
#endif

/* \brief A tensor buffer goes downstream as it is, once its bytes are
 * complete: every memory of ours maps for the CPU, and a tensor has no
 * layout a consumer could misread. */
static GstFlowReturn download_tensor(GstTensorMemDownload *self, GstBuffer *inbuf, GstBuffer **outbuf) {
  if (gst_tensor_mem_element_validate_tensor_buffer(GST_ELEMENT_CAST(self), inbuf, self->tensor_bytes) != GST_FLOW_OK)
    return GST_FLOW_ERROR;
  const GstFlowReturn ret =
      gst_tensor_mem_element_wait_fences(GST_ELEMENT_CAST(self), inbuf, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT,
                                         gst_tensor_transform_get_waits(GST_TENSOR_TRANSFORM_CAST(self)), nullptr);
  if (ret != GST_FLOW_OK)
    return ret;
  *outbuf = inbuf;
  gst_tensor_transform_count_buffer(GST_TENSOR_TRANSFORM_CAST(self), 0);
  return GST_FLOW_OK;
}

/* The path is chosen and taken here, copy included. */
static GstFlowReturn gst_tensor_download_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *inbuf,
                                                               GstBuffer **outbuf) {
  auto *self = GST_TENSOR_DOWNLOAD_CAST(trans);
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  if (const GstFlowReturn tensors = download_meta_tensors(self, inbuf); tensors != GST_FLOW_OK)
    return tensors;
#endif
  if (self->tensor_bytes)
    return download_tensor(self, inbuf, outbuf);
  const gst_tensormem::DownloadContext ctx = download_context(self);
  GstFlowReturn ret = gst_tensor_mem_element_validate_buffer(GST_ELEMENT_CAST(self), inbuf, ctx.info);
  // Downstream reads the bytes, passed through or copied: they must be complete
  // (a buffer without a fence meta skips the deadline's clock read; a GstGLSyncMeta is still waited for).
  if (ret == GST_FLOW_OK && gst_buffer_get_meta(inbuf, GST_TENSOR_MEM_FENCE_META_API_TYPE))
    ret = gst_tensor_mem_element_wait_fences(GST_ELEMENT_CAST(self), inbuf, GST_TENSOR_MEM_FENCE_DEFAULT_TIMEOUT,
                                             gst_tensor_transform_get_waits(GST_TENSOR_TRANSFORM_CAST(self)), nullptr);
  else if (ret == GST_FLOW_OK)
    gst_buffer_wait_tensor_mem_gl_sync_metas(inbuf);
  if (ret != GST_FLOW_OK)
    return ret;
  const gst_tensormem::DownloadMethod &method = gst_tensormem::download_method_for(ctx, inbuf);
  if (method.copies) {
    ret = gst_tensor_transform_allow_copy(GST_TENSOR_TRANSFORM_CAST(self), inbuf, kLayoutCopyMessage, nullptr);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  gsize copied = 0;
  ret = method.perform(ctx, inbuf, outbuf, &copied);
  if (ret == GST_FLOW_OK && *outbuf != inbuf)
    gst_tensormem::copy_buffer_metas(inbuf, *outbuf);
  if (ret == GST_FLOW_OK) {
    GST_LOG_OBJECT(self, "%" GST_PTR_FORMAT " took the %s path", inbuf, method.name);
    gst_tensor_transform_count_buffer(GST_TENSOR_TRANSFORM_CAST(self), copied);
  }
  return ret;
}

static void gst_tensor_download_class_init(GstTensorMemDownloadClass *klass) {
  auto *element_class = GST_ELEMENT_CLASS(klass);
  auto *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gst_element_class_set_static_metadata(element_class, "Tensor download", "Filter/Video",
                                        "Hands tensor memory (system, DMA-BUF or OpenGL PBO) to system-memory video "
                                        "consumers: zero-copy when downstream reads GstVideoMeta or the layout is "
                                        "already the default one, one counted copy into a pool of default-layout "
                                        "frames otherwise",
                                        GST_TENSOR_MEM_AUTHOR);
  add_pad_templates(element_class);

  trans_class->transform_caps = gst_tensor_download_transform_caps;
  trans_class->fixate_caps = gst_tensor_download_fixate_caps;
  trans_class->set_caps = gst_tensor_download_set_caps;
  trans_class->propose_allocation = gst_tensor_download_propose_allocation;
  trans_class->decide_allocation = gst_tensor_download_decide_allocation;
  trans_class->prepare_output_buffer = gst_tensor_download_prepare_output_buffer;
  trans_class->stop = gst_tensor_download_stop;
}

static void gst_tensor_download_init(GstTensorMemDownload *) {}

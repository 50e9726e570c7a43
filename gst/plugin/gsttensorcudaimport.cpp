// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:element-tensorcudaimport
 * @title: tensorcudaimport
 *
 * Gives CUDA access to tensor memory: for each buffer whose single memory is
 * DMA-BUF tensor memory (imported as CUDA external memory) or OpenGL PBO
 * tensor memory (registered with CUDA on the memory's GL worker), it attaches
 * a #GstTensorMemCudaMeta. The CUDA handle is cached on the memory, so a pooled
 * buffer is imported once, not once per frame (#GstTensorMemCudaImport:imports
 * counts the imports made).
 *
 * The bytes are never touched or copied. When CUDA is unavailable (no
 * runtime, no device, no driver) buffers pass through without a meta after
 * ONE element warning, and #GstTensorMemCudaImport:cuda-available is %FALSE.
 * #GstTensorMemCudaImport:cuda-backend says which CUDA API is in use: CUDA's
 * runtime library, or the driver API where only the NVIDIA driver is
 * installed (docs/cuda.md).
 * An import that fails also degrades to passing the buffer through without a
 * meta (one warning per cause). With #GstTensorMemCudaImport:require-cuda set,
 * either case is an element error instead.
 *
 * Built against GStreamer 1.26 (GST_TENSOR_MEM_HAVE_TENSOR_META), it also
 * imports the tensors of the buffer's #GstTensorMeta: each tensor's data
 * buffer (#GstTensor.data) whose single memory is DMA-BUF or PBO tensor
 * memory gets a #GstTensorMemCudaMeta of its own, so a CUDA consumer of the
 * meta finds the device pointer where it finds the tensor. That is how a
 * tensor beside a video frame (`tensorconvert output=meta`) reaches CUDA;
 * for `other/tensors` whose meta describes the buffer's own memory, the
 * import is the buffer's (cached on the memory, counted once). A data
 * buffer shared with another holder is replaced in the meta by a buffer
 * over the same memories (no bytes copied) before the meta is added. The
 * frame of a buffer that carries tensors is imported only when it is
 * tensor memory itself; a decoder's system-memory frame beside the tensor
 * draws no warning. Data in other memory (an `onnxinference` output in
 * system memory) follows the rule above: one warning, or an error under
 * require-cuda. A tensor without data, of a type GStreamer does not define,
 * or whose data buffer is shorter than its dims say is an element error.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc ! tensorupload storage=dmabuf ! tensorcudaimport ! tensorinspect ! fakesink
 * ]|
 *
 * Since: 0.1
 */
#include "gsttensorcudaimport.h"
#include "gsttensormetaread.h"

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorcaps.h>
#include <gst/tensormem/gsttensorcudameta.h>
#include <gst/tensormem/gsttensorcudameta.hpp>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensormemvalidate.h>
#include <gst/tensormem/gsttensorwritable-private.h>

#include <new>
#include <set>
#include <string>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_cuda_import_debug);
#define GST_CAT_DEFAULT gst_tensor_cuda_import_debug

struct _GstTensorMemCudaImport {
  GstBaseTransform parent;
  gboolean require_cuda; // object lock
  guint64 imports;       // object lock
  // Streaming thread only (reset in start()).
  std::set<std::string> *warned;
  GstVideoInfo info;    // from set_caps: what every buffer is validated against
  guint64 tensor_bytes; // other/tensors caps: the tensor's bytes, validated instead of `info`; 0 for video
};

namespace {

enum { PROP_0, PROP_CUDA_AVAILABLE, PROP_REQUIRE_CUDA, PROP_IMPORTS, PROP_CUDA_BACKEND };

/* "runtime" or "driver" for the API in use; "none" when CUDA is unavailable
 * (whatever library may have loaded). */
const char *backend_in_use() {
  const gchar *api = "none";
  gst_tensor_mem_cuda_get_status(&api, nullptr, nullptr, nullptr);
  return api;
}

GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
                                                             GST_STATIC_CAPS("video/x-raw(ANY); other/tensors(ANY)"));
GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS,
                                                            GST_STATIC_CAPS("video/x-raw(ANY); other/tensors(ANY)"));

/* The cause of a failure without the varying parts (fd numbers, sizes): the
 * error kind and the message up to its first '(' or ':'. */
std::string cause_of(const tensormem::Error &e) {
  const std::string &m = e.message();
  std::string head = m.substr(0, m.find_first_of("(:"));
  return std::string(tensormem::error_kind_name(e.kind())) + ": " + head;
}

/* Without CUDA for `buffer`: an element error under require-cuda, otherwise
 * one warning per cause and the buffer passes without a meta. */
GstFlowReturn no_cuda(GstTensorMemCudaImport *self, GstBuffer *buffer, const std::string &cause,
                      const std::string &detail) {
  GST_OBJECT_LOCK(self);
  const gboolean strict = self->require_cuda;
  GST_OBJECT_UNLOCK(self);
  if (strict) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("No CUDA access for the buffer (require-cuda=true)"),
                      ("buffer %" GST_TIME_FORMAT ": %s", GST_TIME_ARGS(GST_BUFFER_PTS(buffer)), detail.c_str()));
    return GST_FLOW_ERROR;
  }
  if (!self->warned || self->warned->insert(cause).second) {
    GST_ELEMENT_WARNING(self, RESOURCE, FAILED, ("Buffers pass through without CUDA access"), ("%s", detail.c_str()));
  } else {
    GST_LOG_OBJECT(self, "no CUDA access again: %s", detail.c_str());
  }
  return GST_FLOW_OK;
}

/* Imports the one tensor memory of `target` (the buffer itself, or a meta
 * tensor's data buffer; writable) and attaches its CUDA meta there. `what`
 * ("" for the buffer, "tensor N ('id'): " for a meta tensor) leads every
 * message and keys its warning apart from the buffer's. */
GstFlowReturn import_into(GstTensorMemCudaImport *self, GstBuffer *buffer, GstBuffer *target, const std::string &what) {
  if (gst_buffer_get_tensor_mem_cuda_meta(target))
    return GST_FLOW_OK; // imported upstream already
  const gchar *unavailable = nullptr;
  if (!gst_tensor_mem_cuda_get_status(nullptr, nullptr, nullptr, &unavailable))
    return no_cuda(self, buffer, "unavailable", std::string("CUDA is unavailable: ") + unavailable);
  const std::string key = what.empty() ? "" : "tensor ";
  if (gst_buffer_n_memory(target) != 1)
    return no_cuda(self, buffer, key + "memories",
                   what + "a buffer of " + std::to_string(gst_buffer_n_memory(target)) +
                       " memories (CUDA import takes buffers of one tensor memory)");
  GstMemory *mem = gst_buffer_peek_memory(target, 0);
  if (!gst_is_tensor_mem_memory(mem))
    return no_cuda(self, buffer, key + "memory-kind",
                   what + "memory from allocator " + (mem->allocator ? mem->allocator->mem_type : "(none)") +
                       " is not tensor memory");
  gst_tensormem::prepare_cuda_import(target, mem); // what the memory's family needs first (D3D11: its fences)
  gboolean imported = FALSE;
  tensormem::Result<std::shared_ptr<tensormem::CudaHandle>> handle = gst_tensor_mem_memory_import_cuda(mem, &imported);
  if (!handle)
    return no_cuda(self, buffer, key + cause_of(handle.error()),
                   what + "CUDA import failed: " + handle.error().message());
  if (imported) {
    GST_OBJECT_LOCK(self);
    ++self->imports;
    GST_OBJECT_UNLOCK(self);
    GST_DEBUG_OBJECT(self, "%simported %s", what.c_str(), (*handle)->describe().c_str());
  }
  if (!gst_buffer_add_tensor_mem_cuda_meta(target, *handle, mem->offset, mem->size))
    return no_cuda(self, buffer, key + "meta",
                   what + "the CUDA handle (" + (*handle)->describe() + ") does not cover the memory's range");
  return GST_FLOW_OK;
}

#if GST_TENSOR_MEM_HAVE_TENSOR_META
/* The meta tensor's data buffer, writable: one this meta alone holds as it
 * is, else a new buffer over the same memories with the old one's metadata
 * (its fences included) put in its place. */
GstBuffer *writable_data(GstTensor *tensor) {
  GstBuffer *data = tensor->data;
  if (gst_buffer_is_writable(data))
    return data;
  GstBuffer *view = gst_buffer_new();
  for (guint i = 0; i < gst_buffer_n_memory(data); ++i)
    gst_buffer_append_memory(view, gst_memory_ref(gst_buffer_peek_memory(data, i)));
  gst_buffer_copy_into(view, data, GST_BUFFER_COPY_METADATA, 0, static_cast<gsize>(-1));
  tensor->data = view;
  gst_buffer_unref(data);
  return view;
}
#endif

GstFlowReturn import_ip(GstTensorMemCudaImport *self, GstBuffer *buffer) {
  // CUDA maps the memory's fd: a memory longer than its fd must not get there.
  std::vector<gst_tensormem::MetaTensor> tensors;
  const GstFlowReturn valid =
      gst_tensormem::element_validate_input(GST_ELEMENT(self), buffer, self->tensor_bytes, &self->info, &tensors);
  if (valid != GST_FLOW_OK)
    return valid;
#if GST_TENSOR_MEM_HAVE_TENSOR_META
  for (const gst_tensormem::MetaTensor &t : tensors) {
    GstBuffer *data = gst_buffer_get_tensor_mem_cuda_meta(t.tensor->data) ? t.tensor->data : writable_data(t.tensor);
    gst_buffer_wait_tensor_mem_gl_sync_metas(data);
    const std::string what =
        "tensor " + std::to_string(t.index) + " ('" + gst_tensormem::tensor_id_text(t.tensor) + "'): ";
    const GstFlowReturn ret = import_into(self, buffer, data, what);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  // The frame beside the tensors is imported where it is tensor memory; a
  // decoder's frame in other memory is no failure to warn about.
  if (!tensors.empty() &&
      (gst_buffer_n_memory(buffer) != 1 || !gst_is_tensor_mem_memory(gst_buffer_peek_memory(buffer, 0))))
    return GST_FLOW_OK;
#endif
  return import_into(self, buffer, buffer, "");
}

} // namespace

G_DEFINE_TYPE(GstTensorMemCudaImport, gst_tensor_cuda_import, GST_TYPE_BASE_TRANSFORM)

static void gst_tensor_cuda_import_finalize(GObject *object) {
  auto *self = GST_TENSOR_CUDA_IMPORT(object);
  delete self->warned;
  G_OBJECT_CLASS(gst_tensor_cuda_import_parent_class)->finalize(object);
}

static void gst_tensor_cuda_import_set_property(GObject *object, guint prop_id, const GValue *value,
                                                GParamSpec *pspec) {
  auto *self = GST_TENSOR_CUDA_IMPORT(object);
  switch (prop_id) {
  case PROP_REQUIRE_CUDA:
    GST_OBJECT_LOCK(self);
    self->require_cuda = g_value_get_boolean(value);
    GST_OBJECT_UNLOCK(self);
    break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

static void gst_tensor_cuda_import_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_TENSOR_CUDA_IMPORT(object);
  switch (prop_id) {
  case PROP_CUDA_AVAILABLE: g_value_set_boolean(value, gst_tensor_mem_cuda_get_status(nullptr, nullptr, nullptr, nullptr)); break;
  case PROP_CUDA_BACKEND: g_value_set_string(value, backend_in_use()); break;
  case PROP_REQUIRE_CUDA:
    GST_OBJECT_LOCK(self);
    g_value_set_boolean(value, self->require_cuda);
    GST_OBJECT_UNLOCK(self);
    break;
  case PROP_IMPORTS:
    GST_OBJECT_LOCK(self);
    g_value_set_uint64(value, self->imports);
    GST_OBJECT_UNLOCK(self);
    break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

/* A stopped pipeline holds no foreign DMA-BUF through the imports kept for
 * re-wrapping producers. */
static gboolean gst_tensor_cuda_import_stop(GstBaseTransform *) {
  gst_tensormem::forget_foreign_imports();
  return TRUE;
}

static gboolean gst_tensor_cuda_import_start(GstBaseTransform *trans) {
  auto *self = GST_TENSOR_CUDA_IMPORT(trans);
  if (self->warned)
    self->warned->clear();
  const gchar *api = nullptr, *library = nullptr, *reason = nullptr;
  gint devices = 0;
  if (gst_tensor_mem_cuda_get_status(&api, &library, &devices, &reason))
    GST_INFO_OBJECT(self, "CUDA %s API from %s, %d device(s)", api, library, devices);
  else
    GST_INFO_OBJECT(self, "CUDA unavailable: %s", reason);
  return TRUE;
}

static gboolean gst_tensor_cuda_import_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *) {
  auto *self = GST_TENSOR_CUDA_IMPORT(trans);
  if (!gst_tensormem::element_read_tensor_caps(GST_ELEMENT(self), incaps, &self->tensor_bytes))
    return FALSE;
  if (self->tensor_bytes)
    return TRUE;
  return gst_tensor_mem_element_video_info_from_caps(GST_ELEMENT(self), &self->info, incaps);
}

static GstFlowReturn gst_tensor_cuda_import_transform_ip(GstBaseTransform *trans, GstBuffer *buffer) {
  auto *self = GST_TENSOR_CUDA_IMPORT(trans);
  // CUDA cannot queue a wait on a GstGL fence: it has passed before the import.
  gst_buffer_wait_tensor_mem_gl_sync_metas(buffer);
  return import_ip(self, buffer);
}

/* In place, the base class makes a shared buffer writable with
 * gst_buffer_copy(), which drops the GstTensorMeta whose tensors are imported
 * here (and a CUDA meta of upstream's): the copy keeps them. */
static GstFlowReturn gst_tensor_cuda_import_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *inbuf,
                                                                  GstBuffer **outbuf) {
  const GstFlowReturn ret =
      GST_BASE_TRANSFORM_CLASS(gst_tensor_cuda_import_parent_class)->prepare_output_buffer(trans, inbuf, outbuf);
  if (ret == GST_FLOW_OK && *outbuf != inbuf)
    gst_tensormem::copy_buffer_metas(inbuf, *outbuf);
  return ret;
}

static void gst_tensor_cuda_import_class_init(GstTensorMemCudaImportClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->finalize = gst_tensor_cuda_import_finalize;
  gobject_class->set_property = gst_tensor_cuda_import_set_property;
  gobject_class->get_property = gst_tensor_cuda_import_get_property;

  g_object_class_install_property(
      gobject_class, PROP_CUDA_AVAILABLE,
      g_param_spec_boolean("cuda-available", "CUDA available",
                           "Whether a CUDA runtime with at least one device was found (FALSE: buffers pass "
                           "through without a CUDA meta)",
                           FALSE, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      gobject_class, PROP_CUDA_BACKEND,
      g_param_spec_string("cuda-backend", "CUDA backend",
                          "The CUDA API in use: \"runtime\" (libcudart), \"driver\" (libcuda, where only the NVIDIA "
                          "driver is installed) or \"none\" (CUDA unavailable)",
                          "none", static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      gobject_class, PROP_REQUIRE_CUDA,
      g_param_spec_boolean(
          "require-cuda", "Require CUDA",
          "Post an element error instead of passing a buffer through without CUDA access", FALSE,
          static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property(
      gobject_class, PROP_IMPORTS,
      g_param_spec_uint64("imports", "Imports",
                          "CUDA imports made (one per distinct memory; pooled memories reuse theirs)", 0, G_MAXUINT64,
                          0, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(element_class, "Tensor CUDA import", "Filter/Video/Hardware",
                                        "Attaches CUDA device access (GstTensorMemCudaMeta) to DMA-BUF and PBO tensor "
                                        "memory, importing each memory once",
                                        GST_TENSOR_MEM_AUTHOR);

  trans_class->start = GST_DEBUG_FUNCPTR(gst_tensor_cuda_import_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_tensor_cuda_import_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR(gst_tensor_cuda_import_set_caps);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_tensor_cuda_import_transform_ip);
  trans_class->prepare_output_buffer = GST_DEBUG_FUNCPTR(gst_tensor_cuda_import_prepare_output_buffer);
  trans_class->passthrough_on_same_caps = FALSE;
  trans_class->transform_ip_on_passthrough = FALSE;

  GST_DEBUG_CATEGORY_INIT(gst_tensor_cuda_import_debug, "tensorcudaimport", 0, "Tensor CUDA import");
}

static void gst_tensor_cuda_import_init(GstTensorMemCudaImport *self) {
  self->require_cuda = FALSE;
  self->imports = 0;
  self->warned = new (std::nothrow) std::set<std::string>(); // never throws out of instance_init
  gst_video_info_init(&self->info);
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
  gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), FALSE);
}

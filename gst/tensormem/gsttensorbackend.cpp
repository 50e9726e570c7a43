// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorwritable-private.h>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_backend_debug);
#define GST_CAT_DEFAULT gst_tensor_backend_debug

namespace gst_tensormem {

namespace {

void ensure_debug_category() {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    GST_DEBUG_CATEGORY_INIT(gst_tensor_backend_debug, "tensormembackend", 0, "storage backends of elements");
    g_once_init_leave(&done, 1);
  }
}

/* Takes the object out of `slot` under the element's lock; the caller unrefs it. */
GstObject *take(GstElement *element, GstObject **slot) {
  GST_OBJECT_LOCK(element);
  GstObject *object = *slot;
  *slot = nullptr;
  GST_OBJECT_UNLOCK(element);
  return object;
}

GstObject *peek_ref(GstElement *element, GstObject *const *slot) {
  GST_OBJECT_LOCK(element);
  GstObject *object = *slot ? GST_OBJECT_CAST(gst_object_ref(*slot)) : nullptr;
  GST_OBJECT_UNLOCK(element);
  return object;
}

} // namespace

const Backend &backend_for(GstTensorMemStorage storage) {
  switch (gst_tensor_mem_storage_resolve(storage)) {
  case GST_TENSOR_MEM_STORAGE_DMABUF: return dmabuf_backend();
  case GST_TENSOR_MEM_STORAGE_PBO: return pbo_backend();
  case GST_TENSOR_MEM_STORAGE_D3D11: return d3d11_backend();
  default: return system_backend();
  }
}

const Backend &backend_at(std::size_t i) {
  switch (i) {
  case 1: return dmabuf_backend();
  case 2: return pbo_backend();
  case 3: return d3d11_backend();
  default: return system_backend();
  }
}

const Backend *backend_of_memory(GstMemory *mem) {
  if (!mem)
    return nullptr;
  // Most memories come straight from a family's allocator: one type compare
  // each, before asking the families (which also know shares and imports).
  if (mem->allocator) {
    const GType type = G_OBJECT_TYPE(mem->allocator);
    for (std::size_t i = 0; i < kBackendCount; ++i) {
      const Backend &backend = backend_at(i);
      if (backend.allocator_type && type == backend.allocator_type())
        return &backend;
    }
  }
  for (std::size_t i = 0; i < kBackendCount; ++i) {
    const Backend &backend = backend_at(i);
    if (backend.owns_memory && backend.owns_memory(mem))
      return &backend;
  }
  return nullptr;
}

const Backend *backend_of_caps(const GstCaps *caps, guint index) {
  if (!caps || gst_caps_is_any(caps) || index >= gst_caps_get_size(caps))
    return nullptr;
  const GstCapsFeatures *features = gst_caps_get_features(caps, index);
  const bool plain = !features || gst_caps_features_is_equal(features, GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY);
  for (std::size_t i = 0; i < kBackendCount; ++i) {
    const Backend &backend = backend_at(i);
    if (backend.caps_feature ? caps_have_feature(caps, index, backend.caps_feature) : plain)
      return &backend;
  }
  return nullptr;
}

GstMemory *memory_new_window(GstMemory *mem, gsize offset, gsize size) {
  const Backend *backend = backend_of_memory(mem);
  return backend && backend->new_window ? backend->new_window(mem, offset, size) : nullptr;
}

void prepare_cuda_import(GstBuffer *buffer, GstMemory *mem) {
  const Backend *backend = backend_of_memory(mem);
  if (backend && backend->prepare_cuda)
    backend->prepare_cuda(buffer, mem);
}

void forget_foreign_imports() {
  for (std::size_t i = 0; i < kBackendCount; ++i) {
    if (backend_at(i).forget_foreign_imports)
      backend_at(i).forget_foreign_imports();
  }
}

const Backend *gl_pass_backend() {
  if (!GST_TENSOR_MEM_HAVE_GL)
    return nullptr;
  for (std::size_t i = 0; i < kBackendCount; ++i) {
    if (backend_at(i).written_by_gl_pass)
      return &backend_at(i);
  }
  return nullptr;
}

GstCaps *template_caps(const char *plain, TemplateFamilies families) {
  const bool cpu_only = families == TemplateFamilies::CpuReadable || families == TemplateFamilies::CpuReadableShared;
  const bool shared_first = families == TemplateFamilies::AllShared || families == TemplateFamilies::CpuReadableShared;
  GstCaps *base = gst_caps_from_string(plain);
  const bool video =
      gst_caps_get_size(base) > 0 && gst_structure_has_name(gst_caps_get_structure(base, 0), "video/x-raw");
  GstCaps *out = gst_caps_new_empty();
  auto add = [&](const Backend &backend) {
    gst_caps_append(out, caps_with_feature(base, backend.caps_feature));
    if (video && backend.extra_template[0])
      gst_caps_append(out, gst_caps_from_string(backend.extra_template));
  };
  // Pass 0: the shared families that map as system (when they lead); pass 1: the rest, in table order.
  for (int pass = shared_first ? 0 : 1; pass < 2; ++pass) {
    for (std::size_t i = 0; i < kBackendCount; ++i) {
      const Backend &backend = backend_at(i);
      const bool leading = backend.caps_feature && backend.maps_as_system;
      if ((cpu_only && !backend.maps_as_system) || (shared_first && leading != (pass == 0)) ||
          (families == TemplateFamilies::Batches && !backend.holds_batches))
        continue;
      add(backend);
    }
  }
  gst_caps_unref(base);
  return out;
}

const char *storage_nick(GstTensorMemStorage storage) {
  auto *klass = static_cast<GEnumClass *>(g_type_class_ref(GST_TYPE_TENSOR_MEM_STORAGE));
  GEnumValue *value = g_enum_get_value(klass, storage);
  const char *nick = value ? value->value_nick : "auto";
  g_type_class_unref(klass); // a static enum type's class lives as long as the type
  return nick;
}

GstCaps *caps_with_feature(GstCaps *caps, const char *feature) {
  GstCaps *out = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); ++i)
    gst_caps_append_structure_full(out, gst_structure_copy(gst_caps_get_structure(caps, i)),
                                   feature ? gst_caps_features_new(feature, nullptr) : nullptr);
  return out;
}

bool caps_have_feature(const GstCaps *caps, guint index, const char *feature) {
  if (!caps || gst_caps_is_any(caps) || index >= gst_caps_get_size(caps))
    return false;
  const GstCapsFeatures *features = gst_caps_get_features(caps, index);
  return features && !gst_caps_features_is_any(features) && gst_caps_features_contains(features, feature);
}

GstBufferPool *backend_make_pool(const Backend &backend, GstElement *element, GstAllocator *allocator, GstCaps *caps,
                                 guint size, guint min_buffers, guint max_buffers, guint *aligned_size) {
  ensure_debug_category();
  if (!allocator) {
    GST_WARNING_OBJECT(element, "no %s allocator: the element has not started", backend.memory_name);
    return nullptr;
  }
  GstBufferPool *pool = backend.new_pool(allocator);
  if (!pool) {
    GST_WARNING_OBJECT(element, "%" GST_PTR_FORMAT " is not a %s allocator", allocator, backend.memory_name);
    return nullptr;
  }
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, size, min_buffers, max_buffers);
  if (!gst_buffer_pool_set_config(pool, config)) {
    GST_WARNING_OBJECT(element, "%s tensor buffer pool refused caps %" GST_PTR_FORMAT, backend.memory_name, caps);
    gst_object_unref(pool);
    return nullptr;
  }
  config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_get_params(config, nullptr, aligned_size, nullptr, nullptr);
  gst_structure_free(config);
  return pool;
}

/* ---- ElementBackend ---- */

ElementBackend::ElementBackend(GstElement *element, GstTensorMemStorage storage)
    : element_(element), storage_(storage) {
  ensure_debug_category();
}

ElementBackend::~ElementBackend() {
  for (GstObject *&device : devices_)
    gst_clear_object(&device);
  gst_clear_object(&allocator_);
}

GstObject **ElementBackend::slot_of(const Backend &backend) {
  for (std::size_t i = 0; i < kSlots; ++i) {
    if (&backend_at(i) == &backend)
      return &devices_[i];
  }
  return &devices_[0];
}

void ElementBackend::set_storage(GstTensorMemStorage storage) {
  GST_OBJECT_LOCK(element_);
  storage_ = storage;
  GST_OBJECT_UNLOCK(element_);
}

GstTensorMemStorage ElementBackend::storage() const {
  GST_OBJECT_LOCK(element_);
  const GstTensorMemStorage storage = storage_;
  GST_OBJECT_UNLOCK(element_);
  return storage;
}

const Backend &ElementBackend::backend() const { return backend_for(storage()); }

gboolean ElementBackend::find_device(const Backend &backend, GError **error) {
  return !backend.ensure_device || backend.ensure_device(element_, slot_of(backend), error);
}

GstObject *ElementBackend::device_of(const Backend &backend) const {
  return peek_ref(element_, const_cast<ElementBackend *>(this)->slot_of(backend));
}

gboolean ElementBackend::ensure_device(const Backend &backend) {
  GError *error = nullptr;
  if (!find_device(backend, &error)) {
    gchar *message = g_strdup_printf(backend.device_failure, error ? error->message : "no device could be had");
    gst_element_message_full(element_, GST_MESSAGE_ERROR, GST_RESOURCE_ERROR, backend.device_error, message, nullptr,
                             __FILE__, GST_FUNCTION, __LINE__);
    g_clear_error(&error);
    return FALSE;
  }
  if (backend.describe_device) {
    GstObject *device = device_of(backend);
    backend.describe_device(element_, device);
    gst_clear_object(&device);
  }
  return TRUE;
}

gboolean ElementBackend::open() {
  const Backend &backend = this->backend();
  return !backend.device_at_ready || ensure_device(backend);
}

void ElementBackend::close() {
  for (GstObject *&device : devices_) {
    if (GstObject *object = take(element_, &device))
      gst_object_unref(object);
  }
}

gboolean ElementBackend::start() {
  const GstTensorMemStorage property = storage();
  const Backend &backend = backend_for(property);
  if (property == GST_TENSOR_MEM_STORAGE_AUTO)
    GST_INFO_OBJECT(element_, "storage=auto resolves to %s: %s", storage_nick(backend.storage),
                    backend.storage == GST_TENSOR_MEM_STORAGE_DMABUF ? "a DMA heap under /dev/dma_heap is usable"
                                                                     : "no usable DMA heap under /dev/dma_heap");
  else
    GST_INFO_OBJECT(element_, "storage=%s", storage_nick(property));
  /* A storage this machine cannot give fails here, once, with the reason
   * and the fix, instead of as "not-negotiated" from upstream when the pool
   * it was offered cannot be activated. */
  if (backend.check_usable && !backend.check_usable(element_))
    return FALSE;
  if (!ensure_device(backend))
    return FALSE;
  GstObject *device = peek_ref(element_, slot_of(backend));
  GstAllocator *allocator = backend.new_allocator(device);
  gst_clear_object(&device);
  GST_OBJECT_LOCK(element_);
  GstAllocator *old = allocator_;
  allocator_ = allocator;
  GST_OBJECT_UNLOCK(element_);
  gst_clear_object(&old);
  return TRUE;
}

void ElementBackend::stop() {
  if (GstObject *allocator = take(element_, reinterpret_cast<GstObject **>(&allocator_)))
    gst_object_unref(allocator);
}

void ElementBackend::handle_set_context(GstContext *context) {
  for (std::size_t i = 0; i < kSlots; ++i) {
    const Backend &backend = backend_at(i);
    if (backend.handle_set_context && backend.handle_set_context(element_, context, &devices_[i]))
      return;
  }
}

gboolean ElementBackend::handle_context_query(GstQuery *query) {
  for (std::size_t i = 0; i < kSlots; ++i) {
    const Backend &backend = backend_at(i);
    if (backend.handle_context_query && backend.handle_context_query(element_, query, &devices_[i]))
      return TRUE;
  }
  return FALSE;
}

gboolean ElementBackend::check_caps(GstCaps *outcaps) const {
  const Backend &backend = this->backend();
  if (!backend.check_caps || !backend.caps_feature)
    return TRUE;
  return !caps_have_feature(outcaps, 0, backend.caps_feature) || backend.check_caps(element_, outcaps);
}

GstAllocator *ElementBackend::allocator() const { return allocator_for(backend()); }

GstAllocator *ElementBackend::allocator_for(const Backend &backend) const {
  // A storage without a device has one process-wide allocator: the current
  // property's, even when it changed after start.
  if (!backend.ensure_device)
    return backend.new_allocator(nullptr);
  return GST_ALLOCATOR_CAST(peek_ref(element_, reinterpret_cast<GstObject *const *>(&allocator_)));
}

GstObject *ElementBackend::device() const { return device_of(backend()); }

void ElementBackend::use_device(GstObject *device) {
  const Backend &backend = this->backend();
  GstAllocator *allocator = backend.new_allocator(device);
  GST_OBJECT_LOCK(element_);
  GstObject **slot = slot_of(backend);
  GstObject *old_device = *slot;
  *slot = GST_OBJECT_CAST(gst_object_ref(device));
  GstAllocator *old_allocator = allocator_;
  allocator_ = allocator;
  GST_OBJECT_UNLOCK(element_);
  gst_clear_object(&old_device);
  gst_clear_object(&old_allocator);
}

GstFlowReturn ElementBackend::fence_writes(const Backend &backend, GstBuffer *inbuf, GstBuffer **outbuf) const {
  if (!backend.fence_writes)
    return GST_FLOW_OK;
  if (*outbuf == inbuf && !gst_buffer_is_writable(inbuf))
    *outbuf = make_buffer_writable(gst_buffer_ref(inbuf)); // same memories and metas; the base transform drops inbuf
  GError *error = nullptr;
  if (backend.fence_writes(*outbuf, &error))
    return GST_FLOW_OK;
  GST_ELEMENT_ERROR(element_, RESOURCE, FAILED, ("Cannot fence the write into %s memory.", backend.memory_name),
                    ("%s", error ? error->message : "attaching the fence meta failed"));
  g_clear_error(&error);
  if (*outbuf != inbuf)
    gst_clear_buffer(outbuf);
  return GST_FLOW_ERROR;
}

GstFlowReturn ElementBackend::fence_cpu_writes(const Backend &backend, GstBuffer *inbuf, GstBuffer **outbuf) const {
  if (!backend.cpu_writes_need_fence || !backend.cpu_writes_need_fence(*outbuf))
    return GST_FLOW_OK;
  return fence_writes(backend, inbuf, outbuf);
}

} // namespace gst_tensormem

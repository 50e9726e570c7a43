// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensormemory.h>

#include <gst/tensormem/gsttensormapping-private.h>

#include <tensormem/host_pin.hpp>
#include <tensormem/storage.hpp>

#include <algorithm>
#include <cstring>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_memory_debug);
#define GST_CAT_DEFAULT gst_tensor_memory_debug

struct _GstTensorMemoryPrivate {
  explicit _GstTensorMemoryPrivate(const tensormem::Tensor &whole) : mapping(whole) {}
  gst_tensormem::TensorMapping mapping;
};

namespace {

GstMemory *allocator_alloc(GstAllocator *allocator, gsize size, GstAllocationParams *params) {
  GstAllocationParams defaults;
  gsize maxsize;
  if (!gst_tensormem::prepare_allocation(GST_CAT_DEFAULT, allocator, size, &params, &defaults,
                                         gst_tensormem::max_align_mask(GST_TENSOR_STORAGE_SYSTEM),
                                         "tensor system memory", &maxsize))
    return nullptr;
  try {
    // A zero-byte GstMemory is legal, an empty core storage is not.
    auto storage = tensormem::MemStorage::allocate(std::max<gsize>(maxsize, 1));
    if (!storage) {
      GST_WARNING_OBJECT(allocator, "%s", storage.error().message().c_str());
      return nullptr;
    }
    const gsize storage_bytes = (*storage)->size_bytes();
    auto tensor = tensormem::Tensor::wrap(std::move(*storage), {storage_bytes}, tensormem::DType::U8,
                                          GST_TENSOR_SYSTEM_MEMORY_TYPE_NAME);
    if (!tensor) {
      GST_WARNING_OBJECT(allocator, "%s", tensor.error().message().c_str());
      return nullptr;
    }
    // The storage is zero-filled, so ZERO_PREFIXED/ZERO_PADDED hold as asked.
    return gst_tensormem::new_tensor_memory<GstTensorMemory, &gst_tensor_memory_debug>(
        allocator, nullptr, *tensor, params->flags, maxsize, params->align, params->prefix, size);
  } catch (...) {
    GST_WARNING_OBJECT(allocator, "out of memory allocating %" G_GSIZE_FORMAT " bytes", maxsize);
    return nullptr;
  }
}

gpointer mem_map_full(GstMemory *mem, GstMapInfo *info, gsize maxsize) {
  return gst_tensormem::tensor_mapping_map(gst_tensormem::memory_mapping<GstTensorMemory>(mem), mem, info, maxsize);
}

gconstpointer get_tensor(GstTensorMemAllocator *, GstMemory *mem) {
  return &gst_tensormem::memory_mapping<GstTensorMemory>(mem)->tensor;
}

void tensor_allocator_init(GstTensorMemAllocatorInterface *iface) { iface->get_tensor = get_tensor; }

} // namespace

G_DEFINE_TYPE_WITH_CODE(GstTensorMemSystemAllocator, gst_tensor_system_allocator, GST_TYPE_ALLOCATOR,
                        G_IMPLEMENT_INTERFACE(GST_TYPE_TENSOR_MEM_ALLOCATOR, tensor_allocator_init);
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_memory_debug, "tensormemsystem", 0, "system tensor memory"))

static void gst_tensor_system_allocator_class_init(GstTensorMemSystemAllocatorClass *klass) {
  auto *allocator_class = GST_ALLOCATOR_CLASS(klass);
  allocator_class->alloc = allocator_alloc;
  allocator_class->free = gst_tensormem::free_tensor_memory<GstTensorMemory>;
}

static void gst_tensor_system_allocator_init(GstTensorMemSystemAllocator *self) {
  auto *alloc = GST_ALLOCATOR_CAST(self);
  alloc->mem_type = GST_TENSOR_SYSTEM_MEMORY_TYPE_NAME;
  alloc->mem_map_full = mem_map_full;
  alloc->mem_unmap_full = gst_tensormem::unmap_tensor_memory<GstTensorMemory>;
  alloc->mem_share = gst_tensormem::share_tensor_memory<GstTensorMemory, &gst_tensor_memory_debug>;
  alloc->mem_copy = gst_tensormem::copy_memory_range;
  alloc->mem_is_span = gst_tensormem::tensor_memory_is_span;
}

/**
 * gst_tensor_system_allocator_get:
 *
 * Returns: (transfer full): the system tensor allocator (a new reference).
 *
 * Since: 0.1
 */
GstAllocator *gst_tensor_system_allocator_get(void) {
  static gsize registered = 0;
  return gst_tensormem::registered_allocator(&registered, GST_TYPE_TENSOR_SYSTEM_ALLOCATOR,
                                             GST_TENSOR_SYSTEM_MEMORY_TYPE_NAME);
}

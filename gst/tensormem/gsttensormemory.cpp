// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensormemory.h>

#include <gst/tensormem/gsttensordmabuf.h>
#include <gst/tensormem/gsttensormapping-private.h>
#include <gst/tensormem/gsttensorpbo.h>

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

} // namespace

G_DEFINE_TYPE_WITH_CODE(GstTensorMemSystemAllocator, gst_tensor_system_allocator, GST_TYPE_ALLOCATOR,
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
 * gst_tensor_memory_init_once:
 *
 * Registers the tensor allocators with GStreamer under their names (see
 * %GST_TENSOR_SYSTEM_MEMORY_TYPE_NAME and
 * %GST_TENSOR_DMABUF_ALLOCATOR_NAME). Safe to call more than once.
 *
 * Since: 0.1
 */
void gst_tensor_memory_init_once(void) {
  static gsize done = 0;
  if (!g_once_init_enter(&done))
    return;
  auto *allocator = static_cast<GstAllocator *>(g_object_new(GST_TYPE_TENSOR_SYSTEM_ALLOCATOR, nullptr));
  gst_object_ref_sink(allocator);
  gst_allocator_register(GST_TENSOR_SYSTEM_MEMORY_TYPE_NAME, allocator);
  auto *dmabuf = static_cast<GstAllocator *>(g_object_new(GST_TYPE_TENSOR_DMABUF_ALLOCATOR, nullptr));
  gst_object_ref_sink(dmabuf);
  gst_allocator_register(GST_TENSOR_DMABUF_ALLOCATOR_NAME, dmabuf);
  g_once_init_leave(&done, 1);
}

/**
 * gst_tensor_system_allocator_get:
 *
 * Returns: (transfer full): the system tensor allocator (a new reference).
 *
 * Since: 0.1
 */
GstAllocator *gst_tensor_system_allocator_get(void) {
  gst_tensor_memory_init_once();
  return gst_allocator_find(GST_TENSOR_SYSTEM_MEMORY_TYPE_NAME);
}

/**
 * gst_is_tensor_memory:
 * @mem: a #GstMemory
 *
 * Returns: %TRUE when @mem was made by one of the tensor allocators (system,
 * DMA-BUF or OpenGL PBO; see gst_is_tensor_dmabuf_memory() and
 * gst_is_tensor_pbo_memory()).
 *
 * Since: 0.1
 */
gboolean gst_is_tensor_memory(GstMemory *mem) {
  return mem != nullptr && mem->allocator != nullptr &&
         (GST_IS_TENSOR_SYSTEM_ALLOCATOR(mem->allocator) || GST_IS_TENSOR_DMABUF_ALLOCATOR(mem->allocator) ||
          GST_IS_TENSOR_PBO_ALLOCATOR(mem->allocator));
}

/**
 * gst_tensor_memory_get_storage:
 * @mem: a tensor #GstMemory
 *
 * Returns: the storage kind behind @mem (never %GST_TENSOR_STORAGE_AUTO for a
 * tensor memory).
 *
 * Since: 0.1
 */
GstTensorMemStorage gst_tensor_memory_get_storage(GstMemory *mem) {
  g_return_val_if_fail(gst_is_tensor_memory(mem), GST_TENSOR_STORAGE_AUTO);
  const tensormem::Tensor *tensor = gst_tensor_memory_get_tensor(mem);
  if (!tensor)
    return GST_TENSOR_STORAGE_AUTO;
  switch (tensor->storage_kind()) {
  case tensormem::StorageKind::Mem: return GST_TENSOR_STORAGE_SYSTEM;
  case tensormem::StorageKind::DmaBuf: return GST_TENSOR_STORAGE_DMABUF;
  case tensormem::StorageKind::Pbo: return GST_TENSOR_STORAGE_PBO;
  default: break;
  }
  return GST_TENSOR_STORAGE_AUTO;
}

/**
 * gst_tensor_memory_get_tensor:
 * @mem: a #GstMemory
 *
 * C++ only. The tensor describing the whole allocation behind @mem (a 1-D
 * u8 tensor; @mem's offset and size select a window of it). Works for system,
 * DMA-BUF and PBO tensor memory, shares included.
 *
 * Returns: (transfer none) (nullable): the tensor, or %NULL when @mem is not
 * a tensor memory. Valid while @mem is alive.
 *
 * Since: 0.1
 */
const tensormem::Tensor *gst_tensor_memory_get_tensor(GstMemory *mem) {
  if (mem == nullptr || mem->allocator == nullptr)
    return nullptr;
  if (GST_IS_TENSOR_SYSTEM_ALLOCATOR(mem->allocator))
    return &gst_tensormem::memory_mapping<GstTensorMemory>(mem)->tensor;
  if (GST_IS_TENSOR_DMABUF_ALLOCATOR(mem->allocator))
    return gst_tensor_dmabuf_memory_get_tensor(mem);
  if (GST_IS_TENSOR_PBO_ALLOCATOR(mem->allocator))
    return gst_tensor_pbo_memory_get_tensor(mem);
  return nullptr;
}

// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensormemory.h>

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorbasememory-private.h>
#include <gst/tensormem/gsttensorbufferpool.h>

#include <gst/tensormem/gsttensormapping-private.h>

#include <tensormem/storage.hpp>
#include <tensormem/tensor.hpp>

#include <new>
#include <optional>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_memory_debug);
#define GST_CAT_DEFAULT gst_tensor_memory_debug

namespace {

/* The heap storage; it is zero-filled, so ZERO_PREFIXED/ZERO_PADDED hold as
 * asked without looking at the params. */
std::optional<tensormem::Tensor> create_storage(GstTensorMemBaseAllocator *allocator, gsize bytes,
                                                const GstAllocationParams *) noexcept {
  auto storage = tensormem::MemStorage::allocate(bytes);
  if (!storage) {
    GST_WARNING_OBJECT(allocator, "%s", storage.error().message().c_str());
    return std::nullopt;
  }
  auto tensor = tensormem::Tensor::wrap(std::move(*storage), {bytes}, tensormem::DType::U8,
                                        GST_TENSOR_MEM_SYSTEM_MEMORY_TYPE_NAME);
  if (!tensor) {
    GST_WARNING_OBJECT(allocator, "%s", tensor.error().message().c_str());
    return std::nullopt;
  }
  return std::move(*tensor);
}

} // namespace

G_DEFINE_TYPE_WITH_CODE(GstTensorMemSystemAllocator, gst_tensor_mem_system_allocator,
                        GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_memory_debug, "tensormemsystem", 0, "system tensor memory"))

static void gst_tensor_mem_system_allocator_class_init(GstTensorMemSystemAllocatorClass *klass) {
  auto *base_class = GST_TENSOR_MEM_BASE_ALLOCATOR_CLASS(klass);
  base_class->storage = GST_TENSOR_MEM_STORAGE_SYSTEM;
  gst_tensormem::base_allocator_class_set_create_tensor(base_class, create_storage);
}

static void gst_tensor_mem_system_allocator_init(GstTensorMemSystemAllocator *self) {
  GST_ALLOCATOR_CAST(self)->mem_type = GST_TENSOR_MEM_SYSTEM_MEMORY_TYPE_NAME;
}

/**
 * gst_tensor_mem_system_allocator_get:
 *
 * Returns: (transfer full): the system tensor allocator (a new reference).
 *
 * Since: 0.1
 */
GstAllocator *gst_tensor_mem_system_allocator_get(void) {
  static gsize registered = 0;
  return gst_tensormem::registered_allocator(&registered, GST_TYPE_TENSOR_MEM_SYSTEM_ALLOCATOR,
                                             GST_TENSOR_MEM_SYSTEM_MEMORY_TYPE_NAME);
}

/**
 * gst_tensor_mem_memory_get_last_map_failure:
 *
 * #GstMemory's map has no error to return: when gst_memory_map() (or
 * gst_buffer_map(), gst_video_frame_map()) of tensor memory fails, this says
 * why, for the element error that follows ("mmap of the DMA-BUF failed:
 * Cannot allocate memory", "out of memory", ...). Per thread; cleared by the
 * next map of tensor memory on the same thread.
 *
 * Returns: (nullable) (transfer none): why the last map of tensor memory on
 *   the calling thread failed, or %NULL after one that worked.
 *
 * Since: 0.1
 */
const gchar *gst_tensor_mem_memory_get_last_map_failure(void) { return gst_tensormem::last_map_failure(); }

/* ---- the system-memory backend ---- */

namespace gst_tensormem {

namespace {
GstAllocator *system_new_allocator(GstObject *) { return gst_tensor_mem_system_allocator_get(); }
gboolean system_owns_memory(GstMemory *mem) {
  return mem && mem->allocator && GST_IS_TENSOR_MEM_SYSTEM_ALLOCATOR(mem->allocator);
}
gboolean system_fd_bytes(GstMemory *, guint64 *bytes) { // a heap block
  *bytes = 0;
  return TRUE;
}
GstBufferPool *system_new_pool(GstAllocator *) {
  return gst_tensor_mem_buffer_pool_new_for_storage(GST_TENSOR_MEM_STORAGE_SYSTEM);
}
} // namespace

const Backend &system_backend() {
  static const Backend backend = {
      .storage = GST_TENSOR_MEM_STORAGE_SYSTEM,
      .memory_name = "system",
      .caps_feature = nullptr,
      .kind = tensormem::StorageKind::Mem,
      // MemStorage guarantees this alignment of its base address.
      .max_align_mask = tensormem::MemStorage::kAlignment - 1,
      .new_allocator = system_new_allocator,
      .maps_as_system = true,
      .holds_batches = true,
      .allocator_type = gst_tensor_mem_system_allocator_get_type,
      .owns_memory = system_owns_memory,
      .new_pool = system_new_pool,
      .new_window = gst_tensor_mem_base_memory_new_window,
      .fd_bytes = system_fd_bytes,
  };
  return backend;
}

} // namespace gst_tensormem

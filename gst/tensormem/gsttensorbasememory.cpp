// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorbasememory.h>

#include <gst/tensormem/gsttensorbasememory-private.h>
#include <gst/tensormem/gsttensormapping-private.h>

#include <tensormem/storage.hpp>
#include <tensormem/tensor.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <optional>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_mem_base_debug);
#define GST_CAT_DEFAULT gst_tensor_mem_base_debug

struct _GstTensorMemBaseMemoryPrivate {
  explicit _GstTensorMemBaseMemoryPrivate(const tensormem::Tensor &whole) : mapping(whole) {}
  gst_tensormem::TensorMapping mapping;
};

namespace {

/* The class data beyond the public struct: the library's own C++ route to a
 * storage (gsttensorbasememory-private.h). */
struct BaseAllocatorClassPrivate {
  gst_tensormem::CreateTensorFunc create_tensor;
};

BaseAllocatorClassPrivate *class_private(GstTensorMemBaseAllocatorClass *klass) noexcept {
  return G_TYPE_CLASS_GET_PRIVATE(klass, GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR, BaseAllocatorClassPrivate);
}

GstTensorMemBaseMemory *base_memory(GstMemory *mem) noexcept { return reinterpret_cast<GstTensorMemBaseMemory *>(mem); }

gst_tensormem::TensorMapping *mapping_of(GstMemory *mem) noexcept { return &base_memory(mem)->priv->mapping; }

GstTensorMemBaseAllocatorClass *class_of(GstMemory *mem) noexcept {
  return GST_TENSOR_MEM_BASE_ALLOCATOR_GET_CLASS(mem->allocator);
}

/* A new base memory over `tensor` (the shape share_memory_range makes
 * memories with); NULL after a warning when the small host allocation fails. */
GstMemory *new_base_memory(GstAllocator *allocator, GstMemory *parent, const tensormem::Tensor &tensor,
                           GstMemoryFlags flags, gsize maxsize, gsize align, gsize offset, gsize size) noexcept {
  GstTensorMemBaseMemoryPrivate *priv;
  // The one boundary where this unit's C++ allocations meet GStreamer's C.
  priv = new GstTensorMemBaseMemoryPrivate(tensor);
  auto *memory = g_new0(GstTensorMemBaseMemory, 1);
  memory->priv = priv;
  gst_memory_init(GST_MEMORY_CAST(memory), flags, allocator, parent, maxsize, align, offset, size);
  return GST_MEMORY_CAST(memory);
}

/* Zeroes the prefix and/or padding of `bytes` new bytes at `data` when the
 * params ask for it: a subclass's create hands over what it allocated as it
 * came. */
void zero_edges(std::byte *data, gsize bytes, const GstAllocationParams *params) noexcept {
  if ((params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED) && params->prefix > 0)
    std::memset(data, 0, params->prefix);
  if ((params->flags & GST_MEMORY_FLAG_ZERO_PADDED) && params->padding > 0)
    std::memset(data + bytes - params->padding, 0, params->padding);
}

/* The storage the subclass's public create makes, adopted as heap storage
 * with a tensor over it; nothing after a warning. The adoption comes first, so
 * every refusal after it releases the subclass's bytes through its
 * free_func. */
std::optional<tensormem::Tensor> adopt_created(GstAllocator *allocator, GstTensorMemBaseAllocatorClass *klass,
                                               gsize bytes, const GstAllocationParams *params) noexcept {
  GDestroyNotify free_func = nullptr;
  gpointer free_data = nullptr;
  auto *data = static_cast<std::byte *>(
      klass->create(GST_TENSOR_MEM_BASE_ALLOCATOR_CAST(allocator), bytes, params, &free_func, &free_data));
  if (!data) {
    GST_WARNING_OBJECT(allocator, "%s made no %" G_GSIZE_FORMAT "-byte storage", G_OBJECT_TYPE_NAME(allocator), bytes);
    return std::nullopt;
  }
  std::function<void()> release;
  if (free_func)
    release = [free_func, free_data] { free_func(free_data); };
  auto storage = tensormem::MemStorage::adopt(data, bytes, std::move(release));
  if (!storage) {
    GST_WARNING_OBJECT(allocator, "%s", storage.error().message().c_str());
    return std::nullopt;
  }
  // Every map of the memory promises params->align; a subclass that missed it
  // would hand misaligned rows to SIMD code that trusts the promise.
  if ((reinterpret_cast<std::uintptr_t>(data) & params->align) != 0) {
    GST_WARNING_OBJECT(allocator, "%s made storage at %p, not aligned to the %" G_GSIZE_FORMAT " bytes asked",
                       G_OBJECT_TYPE_NAME(allocator), data, params->align + 1);
    return std::nullopt;
  }
  zero_edges(data, bytes, params);
  const char *name = allocator->mem_type ? allocator->mem_type : G_OBJECT_TYPE_NAME(allocator);
  auto tensor = tensormem::Tensor::wrap(std::move(*storage), {bytes}, tensormem::DType::U8, name);
  if (!tensor) {
    GST_WARNING_OBJECT(allocator, "%s", tensor.error().message().c_str());
    return std::nullopt;
  }
  return std::move(*tensor);
}

/* GstAllocator::alloc: the checks every tensor allocation starts with, the
 * subclass's storage (its public create, else the library's C++ route),
 * then the memory over it. */
GstMemory *base_alloc(GstAllocator *allocator, gsize size, GstAllocationParams *params) noexcept {
  auto *klass = GST_TENSOR_MEM_BASE_ALLOCATOR_GET_CLASS(allocator);
  GstAllocationParams defaults;
  gsize maxsize;
  if (!gst_tensormem::prepare_allocation(GST_CAT_DEFAULT, allocator, size, &params, &defaults,
                                         gst_tensormem::max_align_mask(klass->storage), G_OBJECT_TYPE_NAME(allocator),
                                         &maxsize))
    return nullptr;
  // A zero-byte GstMemory is legal, an empty storage is not.
  const gsize bytes = std::max<gsize>(maxsize, 1);
  std::optional<tensormem::Tensor> tensor;
  if (klass->create) {
    tensor = adopt_created(allocator, klass, bytes, params);
  } else if (auto create_tensor = class_private(klass)->create_tensor) {
    tensor = create_tensor(GST_TENSOR_MEM_BASE_ALLOCATOR_CAST(allocator), bytes, params);
  } else {
    GST_WARNING_OBJECT(allocator, "%s does not implement create", G_OBJECT_TYPE_NAME(allocator));
    return nullptr;
  }
  if (!tensor)
    return nullptr;
  // A C++ route that returns too small a tensor is a bug in it, not a crash here.
  if (tensor->size_bytes() < maxsize) {
    GST_WARNING_OBJECT(allocator, "create made %" G_GSIZE_FORMAT " bytes of storage, %" G_GSIZE_FORMAT " were asked",
                       tensor->size_bytes(), maxsize);
    return nullptr;
  }
  return new_base_memory(allocator, nullptr, *tensor, params->flags, maxsize, params->align, params->prefix, size);
}

void base_free(GstAllocator *, GstMemory *mem) noexcept {
  auto *memory = base_memory(mem);
  delete memory->priv;
  g_free(memory);
}

/* GstAllocator's memory functions: one dispatch each to the class. */

gpointer dispatch_map(GstMemory *mem, GstMapInfo *info, gsize maxsize) noexcept {
  return class_of(mem)->map(base_memory(mem), info, maxsize);
}

void dispatch_unmap(GstMemory *mem, GstMapInfo *info) noexcept { class_of(mem)->unmap(base_memory(mem), info); }

GstMemory *dispatch_copy(GstMemory *mem, gssize offset, gssize size) noexcept {
  return class_of(mem)->copy(base_memory(mem), offset, size);
}

GstMemory *dispatch_share(GstMemory *mem, gssize offset, gssize size) noexcept {
  return class_of(mem)->share(base_memory(mem), offset, size);
}

/* The defaults every storage shares. */

gpointer default_map(GstTensorMemBaseMemory *mem, GstMapInfo *info, gsize maxsize) noexcept {
  return gst_tensormem::tensor_mapping_map(mapping_of(GST_MEMORY_CAST(mem)), GST_MEMORY_CAST(mem), info, maxsize);
}

void default_unmap(GstTensorMemBaseMemory *mem, GstMapInfo *info) noexcept {
  gst_tensormem::tensor_mapping_unmap(mapping_of(GST_MEMORY_CAST(mem)), info);
}

GstMemory *default_copy(GstTensorMemBaseMemory *mem, gssize offset, gssize size) noexcept {
  return gst_tensormem::copy_memory_range(GST_MEMORY_CAST(mem), offset, size);
}

GstMemory *default_share(GstTensorMemBaseMemory *mem, gssize offset, gssize size) noexcept {
  return gst_tensormem::share_memory_range(GST_MEMORY_CAST(mem), offset, size, mapping_of(GST_MEMORY_CAST(mem))->tensor,
                                           new_base_memory);
}

gconstpointer get_tensor(GstTensorMemAllocator *, GstMemory *mem) noexcept { return &mapping_of(mem)->tensor; }

void tensor_allocator_init(GstTensorMemAllocatorInterface *iface) { iface->get_tensor = get_tensor; }

} // namespace

G_DEFINE_ABSTRACT_TYPE_WITH_CODE(GstTensorMemBaseAllocator, gst_tensor_mem_base_allocator, GST_TYPE_ALLOCATOR,
                                 G_IMPLEMENT_INTERFACE(GST_TYPE_TENSOR_MEM_ALLOCATOR, tensor_allocator_init);
                                 g_type_add_class_private(g_define_type_id, sizeof(BaseAllocatorClassPrivate));
                                 GST_DEBUG_CATEGORY_INIT(gst_tensor_mem_base_debug, "tensormembase", 0,
                                                         "tensor memory base allocator"))

static void gst_tensor_mem_base_allocator_class_init(GstTensorMemBaseAllocatorClass *klass) {
  auto *allocator_class = GST_ALLOCATOR_CLASS(klass);
  allocator_class->alloc = base_alloc;
  allocator_class->free = base_free;
  klass->storage = GST_TENSOR_MEM_STORAGE_SYSTEM;
  klass->map = default_map;
  klass->unmap = default_unmap;
  klass->copy = default_copy;
  klass->share = default_share;
}

static void gst_tensor_mem_base_allocator_init(GstTensorMemBaseAllocator *self) {
  auto *alloc = GST_ALLOCATOR_CAST(self);
  alloc->mem_map_full = dispatch_map;
  alloc->mem_unmap_full = dispatch_unmap;
  alloc->mem_copy = dispatch_copy;
  alloc->mem_share = dispatch_share;
  alloc->mem_is_span = gst_tensormem::tensor_memory_is_span;
}

/// \brief Sets the library's C++ route to a storage for `klass`, which the
/// base takes while the class's public create is NULL.
void gst_tensormem::base_allocator_class_set_create_tensor(GstTensorMemBaseAllocatorClass *klass,
                                                           CreateTensorFunc create) noexcept {
  class_private(klass)->create_tensor = create;
}

/// \brief A root base memory over all of `tensor`, for allocators that make
/// their storages themselves.
GstMemory *gst_tensormem::base_memory_new_over(GstAllocator *allocator, const tensormem::Tensor &tensor,
                                               gsize align_mask) noexcept {
  const gsize bytes = tensor.size_bytes();
  return new_base_memory(allocator, nullptr, tensor, static_cast<GstMemoryFlags>(0), bytes, align_mask, 0, bytes);
}

/**
 * gst_tensor_mem_base_memory_new_window:
 * @mem: a #GstTensorMemBaseMemory
 * @offset: the window's first byte, from @mem's first byte
 * @size: the window's bytes
 *
 * A writable memory over bytes [@offset, @offset + @size) of @mem, sharing
 * its storage: no byte is copied, and the storage (a GL buffer, say) lives
 * while any window over it does. Unlike gst_memory_share(), the window has
 * no #GstMemory parent and is not read-only: it is a memory of its own that
 * can be mapped for writing while other windows of the same storage are in
 * use elsewhere (one slot of a batch per stream, each written by its own
 * producer). The storage's map state still orders CPU access: one CPU
 * writer of a storage at a time, readers after pending GPU writes. For a
 * producer that writes several windows of one storage at once, the windows
 * must not overlap; nothing here checks that.
 *
 * Returns: (transfer full) (nullable): the window, or %NULL when @mem is not
 * a #GstTensorMemBaseMemory or the range does not lie inside it.
 *
 * Since: 0.2
 */
GstMemory *gst_tensor_mem_base_memory_new_window(GstMemory *mem, gsize offset, gsize size) {
  g_return_val_if_fail(gst_is_tensor_mem_base_memory(mem), nullptr);
  if (offset > mem->size || size > mem->size - offset || size == 0)
    return nullptr;
  return new_base_memory(mem->allocator, nullptr, mapping_of(mem)->tensor, static_cast<GstMemoryFlags>(0), mem->maxsize,
                         mem->align, mem->offset + offset, size);
}

/**
 * gst_is_tensor_mem_base_memory:
 * @mem: a #GstMemory
 *
 * Returns: %TRUE when @mem is a #GstTensorMemBaseMemory, made by a
 * #GstTensorMemBaseAllocator subclass (system and PBO tensor memory, shares
 * included; not DMA-BUF tensor memory, which gst_is_tensor_mem_memory() covers).
 *
 * Since: 0.1
 */
gboolean gst_is_tensor_mem_base_memory(GstMemory *mem) {
  return mem != nullptr && mem->allocator != nullptr && GST_IS_TENSOR_MEM_BASE_ALLOCATOR(mem->allocator);
}

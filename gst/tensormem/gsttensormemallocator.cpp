// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensormemallocator.hpp>
#include <gst/tensormem/gsttensorstorage-private.h>

G_DEFINE_INTERFACE(GstTensorMemAllocator, gst_tensor_mem_allocator, GST_TYPE_ALLOCATOR)

static void gst_tensor_mem_allocator_default_init(GstTensorMemAllocatorInterface *) {}

/**
 * gst_is_tensor_mem_memory:
 * @mem: a #GstMemory
 *
 * Returns: %TRUE when @mem was made by a tensor allocator (system, DMA-BUF or
 * OpenGL PBO; any allocator implementing #GstTensorMemAllocatorInterface).
 *
 * Since: 0.1
 */
/* The allocator's tensor interface, or NULL: one interface lookup on its
 * class, where the checked cast and GET_IFACE would make three per call
 * (every element asks for every memory of every buffer). */
static GstTensorMemAllocatorInterface *tensor_interface(GstMemory *mem) noexcept {
  if (mem == nullptr || mem->allocator == nullptr)
    return nullptr;
  return static_cast<GstTensorMemAllocatorInterface *>(
      g_type_interface_peek(G_OBJECT_GET_CLASS(mem->allocator), GST_TYPE_TENSOR_MEM_ALLOCATOR));
}

gboolean gst_is_tensor_mem_memory(GstMemory *mem) { return tensor_interface(mem) != nullptr; }

/**
 * gst_tensor_mem_memory_get_tensor: (skip)
 * @mem: a #GstMemory
 *
 * C++ only. The tensor describing the whole allocation behind @mem (a 1-D
 * u8 tensor; @mem's offset and size select a window of it), whatever its
 * storage, shares included.
 *
 * Returns: (transfer none) (nullable): the tensor, or %NULL when @mem is not
 * a tensor memory. Valid while @mem is alive.
 *
 * Since: 0.1
 */
const tensormem::Tensor *gst_tensor_mem_memory_get_tensor(GstMemory *mem) {
  GstTensorMemAllocatorInterface *iface = tensor_interface(mem);
  if (!iface)
    return nullptr;
  return static_cast<const tensormem::Tensor *>(
      iface->get_tensor(reinterpret_cast<GstTensorMemAllocator *>(mem->allocator), mem));
}

/**
 * gst_tensor_mem_memory_get_storage:
 * @mem: a tensor #GstMemory
 *
 * Returns: the storage kind behind @mem (never %GST_TENSOR_MEM_STORAGE_AUTO for a
 * tensor memory).
 *
 * Since: 0.1
 */
GstTensorMemStorage gst_tensor_mem_memory_get_storage(GstMemory *mem) {
  g_return_val_if_fail(gst_is_tensor_mem_memory(mem), GST_TENSOR_MEM_STORAGE_AUTO);
  const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(mem);
  if (!tensor)
    return GST_TENSOR_MEM_STORAGE_AUTO;
  return gst_tensormem::storage_of_kind(tensor->storage_kind());
}

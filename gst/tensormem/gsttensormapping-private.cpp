// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensormapping-private.h>

#include <tensormem/storage.hpp>

#include <cstring>
#include <new>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_mapping_debug);
#define GST_CAT_DEFAULT gst_tensor_mapping_debug

namespace gst_tensormem {

namespace {

void ensure_debug_category() noexcept {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    GST_DEBUG_CATEGORY_INIT(gst_tensor_mapping_debug, "tensormemmapping", 0, "CPU maps of tensor memory");
    g_once_init_leave(&done, 1);
  }
}

tensormem::CpuAccess access_from_map_flags(GstMapFlags flags) noexcept {
  const bool write = (flags & GST_MAP_WRITE) != 0;
  const bool read = (flags & GST_MAP_READ) != 0;
  if (write && read)
    return tensormem::CpuAccess::ReadWrite;
  return write ? tensormem::CpuAccess::Write : tensormem::CpuAccess::Read;
}

} // namespace

gsize max_align_mask(GstTensorMemStorage storage) noexcept {
  switch (storage) {
  case GST_TENSOR_STORAGE_DMABUF:
    /* mmap returns page-aligned addresses; that is the most a DMA-BUF memory
     * can promise. */
    return 4096 - 1;
  case GST_TENSOR_STORAGE_PBO:
    /* What a GstTensorMemPboMemory promises about the address of a CPU map: GL
     * guarantees GL_MIN_MAP_BUFFER_ALIGNMENT (at least 64) for maps of the
     * whole buffer from offset 0, which is the only kind the worker makes. */
    return 64 - 1;
  default:
    // MemStorage guarantees this alignment of its base address.
    return tensormem::MemStorage::kAlignment - 1;
  }
}

gpointer tensor_mapping_map(TensorMapping *mapping, GstMemory *mem, GstMapInfo *info, gsize maxsize) noexcept {
  ensure_debug_category();
  const tensormem::CpuAccess access = access_from_map_flags(info->flags);
  try {
    std::lock_guard lock(mapping->mu);
    tensormem::HostPin pin;
    if (mapping->write_maps > 0) {
      pin = mapping->writer.share();
    } else {
      auto pinned = mapping->tensor.storage()->map(access, tensormem::MapState::Wait::Block);
      if (!pinned) {
        const auto &err = pinned.error();
        if (err.kind() == tensormem::ErrorKind::Mapped)
          GST_DEBUG("memory %p: %s map refused: %s", mem, tensormem::access_name(access), err.message().c_str());
        else
          GST_WARNING("memory %p: %s map failed (%s): %s", mem, tensormem::access_name(access),
                      tensormem::error_kind_name(err.kind()), err.message().c_str());
        return nullptr;
      }
      pin = std::move(*pinned);
    }
    if (pin.length() < maxsize) {
      GST_WARNING("memory %p: storage mapped %" G_GSIZE_FORMAT " bytes, the memory spans %" G_GSIZE_FORMAT, mem,
                  pin.length(), maxsize);
      return nullptr;
    }
    const bool holds_writer = mapping->write_maps > 0 || tensormem::access_writes(access);
    auto *held = new tensormem::HostPin(holds_writer ? pin.share() : std::move(pin));
    if (holds_writer) {
      if (mapping->write_maps++ == 0)
        mapping->writer = std::move(pin);
    }
    info->user_data[0] = held;
    info->user_data[1] = GINT_TO_POINTER(holds_writer ? 1 : 0);
    return held->data();
  } catch (const std::bad_alloc &) {
    GST_WARNING("memory %p: out of memory mapping for %s", mem, tensormem::access_name(access));
    return nullptr;
  }
}

void tensor_mapping_unmap(TensorMapping *mapping, GstMapInfo *info) noexcept {
  delete static_cast<tensormem::HostPin *>(info->user_data[0]);
  info->user_data[0] = nullptr;
  if (GPOINTER_TO_INT(info->user_data[1]) == 0)
    return;
  std::lock_guard lock(mapping->mu);
  if (--mapping->write_maps == 0)
    mapping->writer.unmap();
}

bool resolve_memory_range(GstMemory *mem, gssize offset, gssize size, gsize *abs_offset, gsize *abs_size) noexcept {
  ensure_debug_category();
  const gint64 start = static_cast<gint64>(mem->offset) + offset;
  if (size == -1)
    size = static_cast<gssize>(mem->size) - offset;
  if (start < 0 || size < 0 || static_cast<guint64>(start) + static_cast<guint64>(size) > mem->maxsize) {
    GST_WARNING("memory %p: %" G_GSSIZE_FORMAT " bytes at offset %" G_GSSIZE_FORMAT " leave its %" G_GSIZE_FORMAT
                "-byte allocation (offset %" G_GSIZE_FORMAT ")",
                mem, size, offset, mem->maxsize, mem->offset);
    return false;
  }
  *abs_offset = static_cast<gsize>(start);
  *abs_size = static_cast<gsize>(size);
  return true;
}

GstMemory *share_memory_range(GstMemory *mem, gssize offset, gssize size, const tensormem::Tensor &tensor,
                              TensorMemoryNew make) noexcept {
  gsize abs_offset, abs_size;
  if (!resolve_memory_range(mem, offset, size, &abs_offset, &abs_size))
    return nullptr;
  GstMemory *parent = mem->parent ? mem->parent : mem;
  // A share is read-only: writing through it would bypass the parent's lock.
  auto flags = static_cast<GstMemoryFlags>(GST_MINI_OBJECT_FLAGS(parent) | GST_MINI_OBJECT_FLAG_LOCK_READONLY);
  return make(mem->allocator, parent, tensor, flags, mem->maxsize, mem->align, abs_offset, abs_size);
}

bool prepare_allocation(GstDebugCategory *cat, GstAllocator *allocator, gsize size, GstAllocationParams **params,
                        GstAllocationParams *defaults, gsize max_align_mask, const char *kind, gsize *total) noexcept {
  if (!*params) {
    gst_allocation_params_init(defaults);
    *params = defaults;
  }
  const GstAllocationParams *p = *params;
  if (p->align > max_align_mask) {
    GST_CAT_WARNING_OBJECT(cat, allocator,
                           "alignment mask %" G_GSIZE_FORMAT " exceeds the %" G_GSIZE_FORMAT "-byte alignment of %s",
                           p->align, max_align_mask + 1, kind);
    return false;
  }
  if (__builtin_add_overflow(p->prefix, size, total) || __builtin_add_overflow(*total, p->padding, total)) {
    GST_CAT_WARNING_OBJECT(
        cat, allocator, "prefix %" G_GSIZE_FORMAT " + size %" G_GSIZE_FORMAT " + padding %" G_GSIZE_FORMAT " overflows",
        p->prefix, size, p->padding);
    return false;
  }
  return true;
}

GstAllocator *registered_allocator(gsize *once, GType type, const char *name) noexcept {
  if (g_once_init_enter(once)) {
    auto *allocator = static_cast<GstAllocator *>(g_object_new(type, nullptr));
    gst_object_ref_sink(allocator);
    gst_allocator_register(name, allocator);
    g_once_init_leave(once, 1);
  }
  return gst_allocator_find(name);
}

GstMemory *copy_memory_range(GstMemory *mem, gssize offset, gssize size) noexcept {
  gsize abs_offset, abs_size;
  if (!resolve_memory_range(mem, offset, size, &abs_offset, &abs_size))
    return nullptr;
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = mem->align;
  GstMemory *copy = gst_allocator_alloc(mem->allocator, abs_size, &params);
  if (!copy)
    return nullptr;
  GstMapInfo src, dst;
  if (!gst_memory_map(mem, &src, GST_MAP_READ)) {
    GST_WARNING("memory %p: cannot map the source of a copy for reading", mem);
    gst_memory_unref(copy);
    return nullptr;
  }
  if (!gst_memory_map(copy, &dst, GST_MAP_WRITE)) {
    GST_WARNING("memory %p: cannot map the new copy for writing", copy);
    gst_memory_unmap(mem, &src);
    gst_memory_unref(copy);
    return nullptr;
  }
  if (abs_size > 0)
    std::memcpy(dst.data, src.data - mem->offset + abs_offset, abs_size);
  gst_memory_unmap(copy, &dst);
  gst_memory_unmap(mem, &src);
  return copy;
}

gboolean tensor_memory_is_span(GstMemory *mem1, GstMemory *mem2, gsize *offset) noexcept {
  const tensormem::Tensor *t1 = gst_tensor_memory_get_tensor(mem1);
  const tensormem::Tensor *t2 = gst_tensor_memory_get_tensor(mem2);
  if (!t1 || !t2 || t1->storage() != t2->storage())
    return FALSE;
  if (offset)
    *offset = mem1->offset - mem1->parent->offset;
  return mem1->offset + mem1->size == mem2->offset;
}

} // namespace gst_tensormem

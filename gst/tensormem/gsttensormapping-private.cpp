// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensormapping-private.h>

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensormemallocator.hpp>

#include <tensormem/storage.hpp>

#include <array>
#include <atomic>
#include <cstring>
#include <memory>
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

/* Marks a share made by copy_memory_range (and shares of it, which inherit
 * their parent's flags): its maps read through the pin in its qdata. */
constexpr guint kPinnedShareFlag = GST_MEMORY_FLAG_LAST << 4;

/* What such a share owns besides the memory: a CPU pin of the storage, taken
 * through the map the copy was asked of, and the pool buffer, so the pool
 * cannot hand the storage to a writer while the share lives. The pin goes
 * first: a buffer back in its pool finds its storage unmapped. A copy made
 * into pool memory holds its buffer the same way, with no pin. */
struct PinnedShare {
  PinnedShare(tensormem::HostPin p, GstBuffer *b) noexcept : pin(std::move(p)), holder(b) {}
  PinnedShare(const PinnedShare &) = delete;
  PinnedShare &operator=(const PinnedShare &) = delete;
  ~PinnedShare() {
    pin.unmap();
    gst_buffer_unref(holder);
  }
  tensormem::HostPin pin;
  GstBuffer *holder;
};

GQuark pinned_share_quark() {
  static GQuark quark = g_quark_from_static_string("GstTensorMemPinnedShare");
  return quark;
}

const PinnedShare *pinned_share_of(GstMemory *mem) noexcept {
  for (; mem; mem = mem->parent)
    if (auto *pinned = static_cast<const PinnedShare *>(
            gst_mini_object_get_qdata(GST_MINI_OBJECT_CAST(mem), pinned_share_quark())))
      return pinned;
  return nullptr;
}

/* The link from a pool's memory to the pool buffer holding it. Both hold
 * it; the buffer clears it when it is finalized, so a memory that outlives
 * its buffer never reaches a freed one. */
struct PoolLink {
  std::mutex mu;
  GstBuffer *buffer; // guarded by mu; NULL once the buffer is finalized
};

GQuark pool_link_quark() {
  static GQuark quark = g_quark_from_static_string("GstTensorMemPoolLink");
  return quark;
}

void drop_link_ref(gpointer data) { delete static_cast<std::shared_ptr<PoolLink> *>(data); }

void unlink_finalized_buffer(gpointer data) {
  auto *link = static_cast<std::shared_ptr<PoolLink> *>(data);
  {
    std::lock_guard lock((*link)->mu);
    (*link)->buffer = nullptr;
  }
  delete link;
}

/* A new reference to the pool buffer that holds `mem` now: one handed out
 * by its pool (a buffer resting in the pool has no pool set) and still
 * holding `mem`; NULL otherwise. A memory mapped for writing is only asked
 * for while its buffer is held, so the buffer cannot be on its way back to
 * the pool meanwhile. */
GstBuffer *ref_pool_buffer(GstMemory *mem) noexcept {
  auto *link =
      static_cast<std::shared_ptr<PoolLink> *>(gst_mini_object_get_qdata(GST_MINI_OBJECT_CAST(mem), pool_link_quark()));
  if (!link)
    return nullptr;
  std::lock_guard lock((*link)->mu);
  GstBuffer *buffer = (*link)->buffer;
  if (!buffer || !g_atomic_pointer_get(&buffer->pool) || GST_MINI_OBJECT_REFCOUNT_VALUE(buffer) <= 0)
    return nullptr;
  for (guint i = 0, n = gst_buffer_n_memory(buffer); i < n; ++i)
    if (gst_buffer_peek_memory(buffer, i) == mem)
      return gst_buffer_ref(buffer);
  return nullptr;
}

thread_local bool t_detached_share = false;

/* Process-wide copies of tensor memory, by storage (GstTensorMemStorage). */
std::array<std::atomic<guint64>, 4> g_copies{};
std::array<std::atomic<guint64>, 4> g_copied_bytes{};

void count_copy(GstMemory *mem, gsize bytes) noexcept {
  const auto kind = static_cast<guint>(gst_tensor_mem_memory_get_storage(mem));
  if (kind >= g_copies.size())
    return;
  g_copies[kind].fetch_add(1, std::memory_order_relaxed);
  g_copied_bytes[kind].fetch_add(bytes, std::memory_order_relaxed);
}

tensormem::CpuAccess access_from_map_flags(GstMapFlags flags) noexcept {
  const bool write = (flags & GST_MAP_WRITE) != 0;
  const bool read = (flags & GST_MAP_READ) != 0;
  if (write && read)
    return tensormem::CpuAccess::ReadWrite;
  return write ? tensormem::CpuAccess::Write : tensormem::CpuAccess::Read;
}

} // namespace

gsize max_align_mask(GstTensorMemStorage storage) noexcept { return backend_for(storage).max_align_mask; }

namespace {

/* Why the last map of tensor memory on this thread failed ("" after a map
 * that worked): GstMemory's map has no error out-parameter, and an element
 * whose map failed should say why (gst_tensor_mem_memory_get_last_map_failure). */
thread_local std::string t_last_map_failure;

void note_map_failure(const char *text) noexcept { t_last_map_failure = text; }

} // namespace

const char *last_map_failure() noexcept { return t_last_map_failure.empty() ? nullptr : t_last_map_failure.c_str(); }

gpointer tensor_mapping_map(TensorMapping *mapping, GstMemory *mem, GstMapInfo *info, gsize maxsize) noexcept {
  ensure_debug_category();
  t_last_map_failure.clear();
  const tensormem::CpuAccess access = access_from_map_flags(info->flags);
  if (GST_MINI_OBJECT_FLAG_IS_SET(mem, kPinnedShareFlag)) {
    // A share standing in for a copy: it reads through its pin, never writes.
    const PinnedShare *pinned = pinned_share_of(mem);
    if (!pinned || tensormem::access_writes(access) || pinned->pin.length() < maxsize) {
      GST_WARNING("memory %p: %s map of a pinned share refused", mem, tensormem::access_name(access));
      note_map_failure("a read-only share of tensor memory cannot be mapped this way");
      return nullptr;
    }
    auto *held = new tensormem::HostPin(pinned->pin.share());
    info->user_data[0] = held;
    info->user_data[1] = GINT_TO_POINTER(0);
    return held->data();
  }
  const std::shared_ptr<tensormem::Storage> &storage = mapping->tensor.storage();
  if (storage->size_bytes() < maxsize) {
    GST_WARNING("memory %p: storage holds %" G_GSIZE_FORMAT " bytes, the memory spans %" G_GSIZE_FORMAT, mem,
                storage->size_bytes(), maxsize);
    note_map_failure("the memory spans more bytes than its storage holds");
    return nullptr;
  }
  std::lock_guard lock(mapping->mu);
  if (mapping->holds == 0) {
    auto acquired = storage->acquire_map(access, tensormem::MapState::Wait::Block);
    if (!acquired) {
      const auto &err = acquired.error();
      if (err.kind() == tensormem::ErrorKind::Mapped)
        GST_DEBUG("memory %p: %s map refused: %s", mem, tensormem::access_name(access), err.message().c_str());
      else
        GST_WARNING("memory %p: %s map failed (%s): %s", mem, tensormem::access_name(access),
                    tensormem::error_kind_name(err.kind()), err.message().c_str());
      note_map_failure(err.message().c_str());
      return nullptr;
    }
    mapping->data = *acquired;
    mapping->writer = tensormem::access_writes(access);
  } else if (tensormem::access_writes(access) && !mapping->writer) {
    // GStreamer's lock refuses this before it reaches us; the core would too.
    GST_DEBUG("memory %p: %s map refused: read maps of this memory are live", mem, tensormem::access_name(access));
    note_map_failure("read maps of this memory are live");
    return nullptr;
  }
  ++mapping->holds;
  info->user_data[0] = mapping; // mapped_by(): the unmap needs no lookup
  info->user_data[1] = GINT_TO_POINTER(1);
  return mapping->data;
}

TensorMapping *mapped_by(const GstMapInfo *info) noexcept {
  return GPOINTER_TO_INT(info->user_data[1]) == 1 ? static_cast<TensorMapping *>(info->user_data[0]) : nullptr;
}

void tensor_mapping_unmap(TensorMapping *mapping, GstMapInfo *info) noexcept {
  if (GPOINTER_TO_INT(info->user_data[1]) == 0) { // a pinned share's map
    delete static_cast<tensormem::HostPin *>(info->user_data[0]);
    info->user_data[0] = nullptr;
    return;
  }
  std::lock_guard lock(mapping->mu);
  if (mapping->holds == 0)
    return;
  if (--mapping->holds == 0) {
    mapping->data = nullptr;
    mapping->writer = false;
    mapping->tensor.storage()->release_map();
  }
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
  /* copy_memory_range's share has no GStreamer parent: gst_memory_init
   * would try to lock the write-locked parent, fail silently, and the free
   * would later release a lock never taken. */
  return make(mem->allocator, t_detached_share ? nullptr : parent, tensor, flags, mem->maxsize, mem->align, abs_offset,
              abs_size);
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
    gst_allocator_register(name, GST_ALLOCATOR_CAST(gst_object_ref(allocator)));
    g_once_init_leave(once, reinterpret_cast<gsize>(allocator));
  }
  return GST_ALLOCATOR_CAST(gst_object_ref(reinterpret_cast<GstAllocator *>(*once)));
}

bool detached_share_requested() noexcept { return t_detached_share; }

void link_pool_buffer(GstBuffer *buffer) noexcept {
  auto link = std::make_shared<PoolLink>();
  link->buffer = buffer;
  for (guint i = 0, n = gst_buffer_n_memory(buffer); i < n; ++i)
    gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(gst_buffer_peek_memory(buffer, i)), pool_link_quark(),
                              new std::shared_ptr<PoolLink>(link), drop_link_ref);
  gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(buffer), pool_link_quark(), new std::shared_ptr<PoolLink>(link),
                            unlink_finalized_buffer);
}

namespace {

/* A memory over `root`'s storage (the first `size` bytes of `root`, -1 for
 * all) with no GStreamer parent, owning `pin` and `holder` (a pool buffer
 * reference, given up on failure too); NULL on failure. */
GstMemory *holding_share(GstMemory *root, gssize size, tensormem::HostPin pin, GstBuffer *holder) noexcept {
  t_detached_share = true;
  GstMemory *shared = root->allocator->mem_share(root, 0, size);
  t_detached_share = false;
  PinnedShare *owned = nullptr;
  if (shared) {
    owned = new PinnedShare(std::move(pin), holder);
  }
  if (!shared) {
    gst_buffer_unref(holder);
    return nullptr;
  }
  gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(shared), pinned_share_quark(), owned,
                            [](gpointer data) { delete static_cast<PinnedShare *>(data); });
  return shared;
}

/* copy_memory_range's share (see there), or NULL when it does not apply. */
GstMemory *share_instead_of_copy(GstMemory *mem, gssize offset, gssize size) noexcept {
  // gst_buffer_copy_deep and copy-on-write ask for explicit ranges.
  if (offset != 0 || size != -1 || mem->parent)
    return nullptr;
  /* The core's own test: a memory it could lock exclusively would have been
   * shared without asking us. */
  if (gst_memory_lock(mem, GST_LOCK_FLAG_EXCLUSIVE)) {
    gst_memory_unlock(mem, GST_LOCK_FLAG_EXCLUSIVE);
    return nullptr;
  }
  GstBuffer *holder = ref_pool_buffer(mem);
  if (!holder)
    return nullptr;
  /* Through GStreamer's lock (a memory it would not let us read is not
   * shared): the memory then holds an acquisition, a read one or the
   * writer's a decoder still holds while GStreamer makes the buffer
   * writable, and the share keeps that one live. */
  const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(mem);
  GstMapInfo info;
  if (!tensor || !gst_memory_map(mem, &info, GST_MAP_READ)) {
    gst_buffer_unref(holder);
    return nullptr;
  }
  auto pinned = tensor->storage()->pin_live_map();
  gst_memory_unmap(mem, &info);
  if (!pinned) {
    GST_DEBUG("memory %p: no read pin for a share (%s), copying", mem, pinned.error().message().c_str());
    gst_buffer_unref(holder);
    return nullptr;
  }
  tensormem::HostPin pin = std::move(*pinned);
  GstMemory *shared = holding_share(mem, -1, std::move(pin), holder);
  if (!shared)
    return nullptr;
  GST_MINI_OBJECT_FLAG_SET(shared, kPinnedShareFlag);
  GST_DEBUG("memory %p: shared as %p instead of copied (pool buffer %p)", mem, shared, holder);
  return shared;
}

/* The pool `mem` comes from: that of the pool buffer holding it (or its
 * root), or of the pool buffer a share or copy made here holds. A new
 * reference, or NULL. */
GstBufferPool *pool_of(GstMemory *mem) noexcept {
  GstBuffer *holder;
  if (const PinnedShare *pinned = pinned_share_of(mem))
    holder = gst_buffer_ref(pinned->holder);
  else
    holder = ref_pool_buffer(mem->parent ? mem->parent : mem);
  if (!holder)
    return nullptr;
  auto *pool = static_cast<GstBufferPool *>(g_atomic_pointer_get(&holder->pool));
  if (pool)
    gst_object_ref(pool);
  gst_buffer_unref(holder);
  return pool;
}

/* Where a copy of `size` bytes of a pool's memory goes: a buffer of that
 * pool, free now, seen as a writable root memory over its storage that holds
 * the buffer, which returns to its pool with the copy. NULL when the pool
 * has no free buffer at the moment or its memory is too small. */
GstMemory *pool_copy_target(GstBufferPool *pool, gsize size) noexcept {
  GstBufferPoolAcquireParams params{};
  params.flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;
  GstBuffer *buffer = nullptr;
  if (gst_buffer_pool_acquire_buffer(pool, &buffer, &params) != GST_FLOW_OK)
    return nullptr;
  GstMemory *root = gst_buffer_n_memory(buffer) == 1 ? gst_buffer_peek_memory(buffer, 0) : nullptr;
  if (!root || root->size < size) {
    gst_buffer_unref(buffer);
    return nullptr;
  }
  GstMemory *target = holding_share(root, static_cast<gssize>(size), tensormem::HostPin(), buffer);
  if (target)
    GST_MINI_OBJECT_FLAG_UNSET(target, GST_MINI_OBJECT_FLAG_LOCK_READONLY);
  return target;
}

/* A new memory of `size` bytes for a copy of `mem`: pool memory where `mem`
 * is a pool's and the pool has a buffer free, else a fresh allocation. */
GstMemory *copy_target(GstMemory *mem, gsize size) noexcept {
  if (GstBufferPool *pool = pool_of(mem)) {
    GstMemory *target = pool_copy_target(pool, size);
    if (!target)
      GST_DEBUG_OBJECT(pool, "no buffer free for a copy of memory %p: allocating one", mem);
    gst_object_unref(pool);
    if (target)
      return target;
  }
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = mem->align;
  return gst_allocator_alloc(mem->allocator, size, &params);
}

} // namespace

GstMemory *copy_memory_range(GstMemory *mem, gssize offset, gssize size) noexcept {
  ensure_debug_category();
  if (GstMemory *shared = share_instead_of_copy(mem, offset, size))
    return shared;
  gsize abs_offset, abs_size;
  if (!resolve_memory_range(mem, offset, size, &abs_offset, &abs_size))
    return nullptr;
  GstMemory *copy = copy_target(mem, abs_size);
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
  count_copy(mem, abs_size);
  GST_DEBUG("copied %" G_GSIZE_FORMAT " bytes of tensor memory %p into %p", abs_size, mem, copy);
  return copy;
}

gboolean tensor_memory_is_span(GstMemory *mem1, GstMemory *mem2, gsize *offset) noexcept {
  const tensormem::Tensor *t1 = gst_tensor_mem_memory_get_tensor(mem1);
  const tensormem::Tensor *t2 = gst_tensor_mem_memory_get_tensor(mem2);
  if (!t1 || !t2 || t1->storage() != t2->storage())
    return FALSE;
  if (offset)
    *offset = mem1->parent ? mem1->offset - mem1->parent->offset : mem1->offset;
  return mem1->offset + mem1->size == mem2->offset;
}

} // namespace gst_tensormem

/**
 * gst_tensor_mem_get_copy_stats:
 * @storage: the storage whose memories count, or %GST_TENSOR_MEM_STORAGE_AUTO for
 *   all of them
 * @copies: (out) (optional): where to store the number of copies
 * @bytes: (out) (optional): where to store the bytes copied
 *
 * Copies of tensor memory made by anyone in this process since it started:
 * every gst_memory_copy() of a tensor memory that copied bytes (the
 * allocators' mem_copy), whoever asked for it (GStreamer core making a
 * buffer writable, copy-on-write maps, deep buffer copies). Copies our
 * elements make themselves (#GstTensorMemTransform:copied-bytes) are not
 * gst_memory_copy() calls and are not counted here; a copy the allocator
 * answered with a share (see docs/dmabuf.md) is not a copy.
 *
 * Since: 0.1
 */
void gst_tensor_mem_get_copy_stats(GstTensorMemStorage storage, guint64 *copies, guint64 *bytes) {
  guint64 n = 0, b = 0;
  for (guint kind = 1; kind < gst_tensormem::g_copies.size(); ++kind) {
    if (storage != GST_TENSOR_MEM_STORAGE_AUTO && kind != static_cast<guint>(storage))
      continue;
    n += gst_tensormem::g_copies[kind].load(std::memory_order_relaxed);
    b += gst_tensormem::g_copied_bytes[kind].load(std::memory_order_relaxed);
  }
  if (copies)
    *copies = n;
  if (bytes)
    *bytes = b;
}

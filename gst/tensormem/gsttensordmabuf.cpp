// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensordmabuf.h>

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensordmabuf-private.h>
#include <gst/tensormem/gsttensordmabuf.hpp>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensormapping-private.h>
#include <gst/tensormem/gsttensormemallocator.hpp>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensorsidecache-private.h>
#include <gst/video/video.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_dmabuf_debug);
#define GST_CAT_DEFAULT gst_tensor_dmabuf_debug

namespace {

using gst_tensormem::TensorMapping;

GQuark mapping_quark() {
  static GQuark quark = g_quark_from_static_string("GstTensorDmaBufMapping");
  return quark;
}

/* What the qdata owns: the mapping, and the memory's place in the index. */
struct IndexedMapping {
  GstMemory *mem;
  TensorMapping *mapping;
};

/* Every map, unmap and tensor lookup of a DMA-BUF memory needs its mapping,
 * which lives in the memory's qdata: a lookup there takes GStreamer's one
 * process-wide qdata mutex and walks a list, several times per buffer. This
 * index finds it without a lock. A slot is claimed with a compare-and-swap
 * when the mapping is attached and cleared by the qdata's destroy notify,
 * which runs before the memory is freed, so a key is never a freed or
 * reused address while anyone holds the memory to ask for it. A memory that
 * finds no free slot among its kProbe is looked up in its qdata, as before. */
class MappingIndex {
public:
  void insert(GstMemory *mem, TensorMapping *mapping) noexcept {
    for (std::size_t i = 0; i < kProbe; ++i) {
      Slot &slot = slots_[(hash(mem) + i) & (kSlots - 1)];
      GstMemory *empty = nullptr;
      if (slot.key.compare_exchange_strong(empty, mem, std::memory_order_acq_rel)) {
        slot.mapping.store(mapping, std::memory_order_release);
        return;
      }
    }
  }
  void erase(GstMemory *mem) noexcept {
    if (Slot *slot = find(mem)) {
      slot->mapping.store(nullptr, std::memory_order_relaxed);
      slot->key.store(nullptr, std::memory_order_release);
    }
  }
  TensorMapping *lookup(GstMemory *mem) noexcept {
    Slot *slot = find(mem);
    return slot ? slot->mapping.load(std::memory_order_acquire) : nullptr;
  }

private:
  static constexpr std::size_t kSlots = 4096; // a power of two
  static constexpr std::size_t kProbe = 16;
  struct Slot {
    std::atomic<GstMemory *> key{nullptr};
    std::atomic<TensorMapping *> mapping{nullptr};
  };
  static std::size_t hash(GstMemory *mem) noexcept {
    return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(mem) >> 4) * 0x9E3779B97F4A7C15ull >> 40);
  }
  Slot *find(GstMemory *mem) noexcept {
    for (std::size_t i = 0; i < kProbe; ++i) {
      Slot &slot = slots_[(hash(mem) + i) & (kSlots - 1)];
      if (slot.key.load(std::memory_order_acquire) == mem)
        return &slot;
    }
    return nullptr;
  }
  Slot slots_[kSlots];
};

MappingIndex &mapping_index() {
  static auto *index = new MappingIndex(); // never destroyed: memories may outlive static destruction
  return *index;
}

TensorMapping *own_mapping(GstMemory *mem) noexcept {
  if (TensorMapping *indexed = mapping_index().lookup(mem))
    return indexed;
  auto *owned = static_cast<IndexedMapping *>(gst_mini_object_get_qdata(GST_MINI_OBJECT_CAST(mem), mapping_quark()));
  return owned ? owned->mapping : nullptr;
}

/* Every memory this allocator hands out carries its own mapping; a share
 * made behind our back (nothing in GStreamer does) falls back to its root. */
TensorMapping *mapping_of(GstMemory *mem) noexcept {
  TensorMapping *mapping = own_mapping(mem);
  if (!mapping && mem->parent)
    mapping = own_mapping(mem->parent);
  return mapping;
}

void destroy_mapping(gpointer data) {
  auto *owned = static_cast<IndexedMapping *>(data);
  mapping_index().erase(owned->mem);
  delete owned->mapping;
  delete owned;
}

/* The qdata owns the mapping and so the storage: the storage's fd (which the
 * GstFdMemory borrows with DONT_CLOSE) lives exactly as long as the memory. */
bool attach_mapping(GstMemory *mem, const tensormem::Tensor &tensor) noexcept {
  auto mapping = std::make_unique<TensorMapping>(tensor);
  auto *owned = new IndexedMapping{mem, mapping.get()};
  gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(mem), mapping_quark(), owned, destroy_mapping);
  mapping_index().insert(mem, mapping.release());
  return true;
}

/* Storages imported from DMA-BUF memories that are not ours, keyed on the
 * buffer's identity (device, inode): a pooled upstream memory comes back
 * again and again and is imported (fstatfs, dup, fstat) once, and its
 * storage stays one object, so everything cached per storage (the CUDA
 * handle) is made once too. An entry lives as long as the foreign memory it
 * was imported from. */
gst_tensormem::SideCache<tensormem::DmaBufStorage> &foreign_imports() {
  static auto *cache = new gst_tensormem::SideCache<tensormem::DmaBufStorage>();
  return *cache;
}

/* The foreign buffers imported most recently, kept (with everything cached
 * per storage, such as the CUDA handle) after the memory they came in dies.
 * A producer that wraps the same DMA-BUFs in new GstMemory objects every
 * frame (fds received over a socket, a camera's buffers wrapped per request:
 * a new wrapper and a new fd number each time) finds its buffers here by
 * file identity instead of importing each frame again. Holding an import
 * holds a dup of its fd, so a key here cannot be reused by another file.
 * Bounded: beyond kRecent buffers the least recently used one is dropped,
 * and gst_tensor_mem_dmabuf_forget_foreign_imports() (elements call it at stop)
 * drops them all. */
class RecentImports {
public:
  /* Enough for a decoder's whole frame pool (an H.264 DPB of 16 plus the
   * frames in flight). */
  static constexpr std::size_t kRecent = 32;

  std::shared_ptr<tensormem::DmaBufStorage> find(const gst_tensormem::SideKey &key) {
    std::lock_guard lock(mu_);
    auto it = std::find_if(list_.begin(), list_.end(), [&](const Entry &e) { return same(e.first, key); });
    if (it == list_.end())
      return nullptr;
    std::rotate(list_.begin(), it, it + 1); // most recent first
    return list_.front().second;
  }

  void remember(const gst_tensormem::SideKey &key, std::shared_ptr<tensormem::DmaBufStorage> storage) {
    std::shared_ptr<tensormem::DmaBufStorage> dropped; // released after the lock
    std::lock_guard lock(mu_);
    auto it = std::find_if(list_.begin(), list_.end(), [&](const Entry &e) { return same(e.first, key); });
    if (it != list_.end()) {
      std::rotate(list_.begin(), it, it + 1);
      return;
    }
    if (list_.size() == kRecent) {
      dropped = std::move(list_.back().second);
      list_.pop_back();
    }
    list_.emplace(list_.begin(), key, std::move(storage));
  }

  void clear() {
    std::vector<Entry> dropped; // released after the lock
    std::lock_guard lock(mu_);
    dropped.swap(list_);
  }

private:
  using Entry = std::pair<gst_tensormem::SideKey, std::shared_ptr<tensormem::DmaBufStorage>>;
  static bool same(const gst_tensormem::SideKey &a, const gst_tensormem::SideKey &b) { return !(a < b) && !(b < a); }

  std::mutex mu_;
  std::vector<Entry> list_;
};

RecentImports &recent_imports() {
  static auto *recent = new RecentImports();
  return *recent;
}

/* A root GstFdMemory of `maxsize` bytes over `storage`'s own fd. */
GstMemory *wrap_storage(GstAllocator *allocator, std::shared_ptr<tensormem::DmaBufStorage> storage,
                        gsize maxsize) noexcept {
  if (maxsize > storage->size_bytes()) {
    GST_WARNING_OBJECT(allocator, "a %" G_GSIZE_FORMAT "-byte memory does not fit the %" G_GSIZE_FORMAT "-byte storage",
                       maxsize, storage->size_bytes());
    return nullptr;
  }
  const bool writable = storage->writable();
  const int fd = storage->fd();
  const gsize storage_bytes = storage->size_bytes();
  auto tensor = tensormem::Tensor::wrap(std::move(storage), {storage_bytes}, tensormem::DType::U8,
                                        GST_TENSOR_MEM_DMABUF_ALLOCATOR_NAME);
  if (!tensor) {
    GST_WARNING_OBJECT(allocator, "%s", tensor.error().message().c_str());
    return nullptr;
  }
  GstMemory *mem = gst_fd_allocator_alloc(allocator, fd, maxsize, GST_FD_MEMORY_FLAG_DONT_CLOSE);
  if (!mem)
    return nullptr;
  if (!attach_mapping(mem, *tensor)) {
    gst_memory_unref(mem);
    return nullptr;
  }
  if (!writable)
    GST_MINI_OBJECT_FLAG_SET(mem, GST_MEMORY_FLAG_READONLY);
  return mem;
}

GstMemory *allocator_alloc(GstAllocator *allocator, gsize size, GstAllocationParams *params) {
  GstAllocationParams defaults;
  gsize maxsize;
  if (!gst_tensormem::prepare_allocation(GST_CAT_DEFAULT, allocator, size, &params, &defaults,
                                         gst_tensormem::max_align_mask(GST_TENSOR_MEM_STORAGE_DMABUF), "DMA-BUF memory",
                                         &maxsize))
    return nullptr;
  // A zero-byte GstMemory is legal, an empty storage is not.
  auto storage = tensormem::DmaBufStorage::allocate(std::max<gsize>(maxsize, 1));
  if (!storage) {
    GST_WARNING_OBJECT(allocator, "%s", storage.error().message().c_str());
    return nullptr;
  }
  GstMemory *mem = wrap_storage(allocator, std::move(*storage), maxsize);
  if (!mem)
    return nullptr;
  mem->align = params->align;
  gst_memory_resize(mem, static_cast<gssize>(params->prefix), size);
  // New DMA heap and memfd buffers are zero-filled: ZERO_PREFIXED/ZERO_PADDED hold as asked.
  GST_MINI_OBJECT_FLAGS(mem) |= params->flags;
  return mem;
}

gpointer mem_map_full(GstMemory *mem, GstMapInfo *info, gsize maxsize) {
  TensorMapping *mapping = mapping_of(mem);
  if (!mapping) {
    GST_WARNING("memory %p has no tensor storage attached", mem);
    return nullptr;
  }
  return gst_tensormem::tensor_mapping_map(mapping, mem, info, maxsize);
}

void mem_unmap_full(GstMemory *mem, GstMapInfo *info) {
  TensorMapping *mapping = gst_tensormem::mapped_by(info);
  if (!mapping)
    mapping = mapping_of(mem);
  if (mapping)
    gst_tensormem::tensor_mapping_unmap(mapping, info);
}

/* The share copy_memory_range asks for instead of a copy: a root memory
 * borrowing the same fd (no GStreamer parent, see copy_memory_range), read
 * only, over the same storage. */
GstMemory *detached_share(GstMemory *mem, TensorMapping *mapping, gsize abs_offset, gsize abs_size) noexcept {
  GstMemory *sub =
      gst_fd_allocator_alloc(mem->allocator, gst_fd_memory_get_fd(mem), mem->maxsize, GST_FD_MEMORY_FLAG_DONT_CLOSE);
  if (!sub)
    return nullptr;
  if (!attach_mapping(sub, mapping->tensor)) {
    gst_memory_unref(sub);
    return nullptr;
  }
  sub->align = mem->align;
  gst_memory_resize(sub, static_cast<gssize>(abs_offset), abs_size);
  GST_MINI_OBJECT_FLAGS(sub) |= GST_MINI_OBJECT_FLAGS(mem) | GST_MINI_OBJECT_FLAG_LOCK_READONLY;
  return sub;
}

/* GstFdAllocator's share, with the range checked first (it trusts it) and
 * "the rest" meaning the rest of this memory, plus a mapping of its own so
 * the share follows the same reader/writer rules as system tensor memory. */
GstMemory *mem_share(GstMemory *mem, gssize offset, gssize size) {
  gsize abs_offset, abs_size;
  if (!gst_tensormem::resolve_memory_range(mem, offset, size, &abs_offset, &abs_size))
    return nullptr;
  TensorMapping *mapping = mapping_of(mem);
  if (!mapping)
    return nullptr;
  if (gst_tensormem::detached_share_requested())
    return detached_share(mem, mapping, abs_offset, abs_size);
  auto *self = GST_TENSOR_MEM_DMABUF_ALLOCATOR_CAST(mem->allocator);
  GstMemory *sub = self->fd_share(mem, offset, static_cast<gssize>(abs_size));
  if (!sub)
    return nullptr;
  if (!attach_mapping(sub, mapping->tensor)) {
    gst_memory_unref(sub);
    return nullptr;
  }
  return sub;
}

gconstpointer get_tensor(GstTensorMemAllocator *, GstMemory *mem) {
  TensorMapping *mapping = mapping_of(mem);
  return mapping ? &mapping->tensor : nullptr;
}

void tensor_allocator_init(GstTensorMemAllocatorInterface *iface) { iface->get_tensor = get_tensor; }

} // namespace

/* Joins the tensor allocators through the interface: the parent class must
 * stay GstDmaBufAllocator for gst_is_dmabuf_memory(). */
G_DEFINE_TYPE_WITH_CODE(GstTensorMemDmaBufAllocator, gst_tensor_mem_dmabuf_allocator, GST_TYPE_DMABUF_ALLOCATOR,
                        G_IMPLEMENT_INTERFACE(GST_TYPE_TENSOR_MEM_ALLOCATOR, tensor_allocator_init);
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_dmabuf_debug, "tensormemdmabuf", 0, "DMA-BUF tensor memory"))

static void gst_tensor_mem_dmabuf_allocator_class_init(GstTensorMemDmaBufAllocatorClass *klass) {
  GST_ALLOCATOR_CLASS(klass)->alloc = allocator_alloc;
  // free stays GstFdAllocator's: the fd is DONT_CLOSE, the storage (qdata) closes it.
}

static void gst_tensor_mem_dmabuf_allocator_init(GstTensorMemDmaBufAllocator *self) {
  auto *alloc = GST_ALLOCATOR_CAST(self);
  // mem_type stays GST_ALLOCATOR_DMABUF, set by GstDmaBufAllocator.
  self->fd_share = alloc->mem_share;
  alloc->mem_share = mem_share;
  alloc->mem_map_full = mem_map_full;
  alloc->mem_unmap_full = mem_unmap_full;
  // Instead of GstAllocator's fallback: counted, and a share where it can be.
  alloc->mem_copy = gst_tensormem::copy_memory_range;
  alloc->mem_is_span = gst_tensormem::tensor_memory_is_span;
  // GstFdAllocator sets CUSTOM_ALLOC; this allocator implements alloc().
  GST_OBJECT_FLAG_UNSET(alloc, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

const tensormem::Tensor *gst_tensormem::own_dmabuf_tensor(GstMemory *mem) noexcept {
  if (mem == nullptr || mem->allocator == nullptr ||
      G_TYPE_FROM_INSTANCE(mem->allocator) != GST_TYPE_TENSOR_MEM_DMABUF_ALLOCATOR)
    return nullptr;
  TensorMapping *mapping = mapping_of(mem);
  return mapping ? &mapping->tensor : nullptr;
}

/**
 * gst_tensor_mem_dmabuf_allocator_get:
 *
 * The DMA-BUF tensor allocator. gst_allocator_alloc() on it allocates a new
 * DMA-BUF storage: from a DMA heap, or a memfd when the environment says
 * `TENSORMEM_DMABUF_SOURCE=memfd` (see docs/dmabuf.md). Allocation fails (with
 * a warning naming the heaps tried) where neither is available.
 *
 * Returns: (transfer full): the allocator (a new reference).
 *
 * Since: 0.1
 */
GstAllocator *gst_tensor_mem_dmabuf_allocator_get(void) {
  static gsize registered = 0;
  return gst_tensormem::registered_allocator(&registered, GST_TYPE_TENSOR_MEM_DMABUF_ALLOCATOR,
                                             GST_TENSOR_MEM_DMABUF_ALLOCATOR_NAME);
}

/**
 * gst_is_tensor_mem_dmabuf_memory:
 * @mem: a #GstMemory
 *
 * Returns: %TRUE when @mem was made by the DMA-BUF tensor allocator (such a
 * memory is also gst_is_dmabuf_memory() and gst_is_tensor_mem_memory()).
 *
 * Since: 0.1
 */
gboolean gst_is_tensor_mem_dmabuf_memory(GstMemory *mem) {
  return mem != nullptr && mem->allocator != nullptr && GST_IS_TENSOR_MEM_DMABUF_ALLOCATOR(mem->allocator);
}

/**
 * gst_tensor_mem_dmabuf_allocator_import: (skip)
 * @allocator: the DMA-BUF tensor allocator
 * @storage: a DMA-BUF storage
 *
 * C++ only. Wraps @storage, without a copy, in a new memory spanning the
 * whole storage; the memory keeps the storage alive and borrows its fd.
 *
 * Returns: (transfer full) (nullable): the memory, or %NULL after a warning.
 *
 * Since: 0.1
 */
GstMemory *gst_tensor_mem_dmabuf_allocator_import(GstAllocator *allocator,
                                                  std::shared_ptr<tensormem::DmaBufStorage> storage) {
  g_return_val_if_fail(GST_IS_TENSOR_MEM_DMABUF_ALLOCATOR(allocator), nullptr);
  g_return_val_if_fail(storage != nullptr, nullptr);
  const gsize bytes = storage->size_bytes();
  return wrap_storage(allocator, std::move(storage), bytes);
}

/**
 * gst_tensor_mem_dmabuf_memory_import_fd:
 * @fd: a DMA-BUF (or memfd) file descriptor; it stays the caller's
 * @size: bytes to wrap, 0 for the whole buffer
 *
 * Imports @fd without a copy: the memory keeps a dup of it. An fd that is
 * neither a DMA-BUF nor a memfd/shm file is refused with a warning naming
 * its filesystem magic.
 *
 * Returns: (transfer full) (nullable): a DMA-BUF tensor memory, or %NULL.
 *
 * Since: 0.1
 */
GstMemory *gst_tensor_mem_dmabuf_memory_import_fd(gint fd, gsize size) {
  auto storage = tensormem::DmaBufStorage::import(fd, size);
  if (!storage) {
    GST_WARNING("%s", storage.error().message().c_str());
    return nullptr;
  }
  const gsize bytes = size ? size : (*storage)->size_bytes();
  GstAllocator *allocator = gst_tensor_mem_dmabuf_allocator_get();
  GstMemory *mem = wrap_storage(allocator, std::move(*storage), bytes);
  gst_object_unref(allocator);
  return mem;
}

/**
 * gst_tensor_mem_dmabuf_memory_get_storage: (skip)
 * @mem: a #GstMemory
 *
 * C++ only.
 *
 * Returns: the DMA-BUF storage behind @mem (a new reference), or an empty
 * pointer when @mem is not DMA-BUF tensor memory.
 *
 * Since: 0.1
 */
std::shared_ptr<tensormem::DmaBufStorage> gst_tensor_mem_dmabuf_memory_get_storage(GstMemory *mem) {
  const tensormem::Tensor *tensor =
      gst_is_tensor_mem_dmabuf_memory(mem) ? gst_tensor_mem_memory_get_tensor(mem) : nullptr;
  if (!tensor || tensor->storage_kind() != tensormem::StorageKind::DmaBuf)
    return {};
  return std::static_pointer_cast<tensormem::DmaBufStorage>(tensor->storage());
}

/**
 * gst_tensor_mem_dmabuf_memory_import_storage: (skip)
 * @mem: a DMA-BUF #GstMemory (gst_is_dmabuf_memory())
 *
 * C++ only. The storage behind @mem: its own for DMA-BUF tensor memory,
 * otherwise an import of its fd, made once per buffer and reused for as long
 * as @mem lives.
 *
 * Returns: the storage, or the error of the import.
 *
 * Since: 0.1
 */
tensormem::Result<std::shared_ptr<tensormem::DmaBufStorage>>
gst_tensor_mem_dmabuf_memory_import_storage(GstMemory *mem) {
  if (!mem || !gst_is_dmabuf_memory(mem))
    return tensormem::Error::invalid_argument("gst_tensor_mem_dmabuf_memory_import_storage: not DMA-BUF memory");
  if (auto ours = gst_tensor_mem_dmabuf_memory_get_storage(mem))
    return ours;
  const gint fd = gst_dmabuf_memory_get_fd(mem);
  auto id = tensormem::DmaBufStorage::identity_of(fd);
  if (!id)
    return std::move(id).error();
  const gst_tensormem::SideKey key{*id, nullptr};
  if (auto cached = foreign_imports().find(key)) {
    recent_imports().remember(key, cached);
    return cached;
  }
  if (auto recent = recent_imports().find(key)) // the same buffer in a new wrapper
    return foreign_imports().insert_for_object(GST_MINI_OBJECT_CAST(mem), key, std::move(recent));
  auto storage = tensormem::DmaBufStorage::import(fd, 0);
  if (!storage)
    return std::move(storage).error();
  auto stored = foreign_imports().insert_for_object(GST_MINI_OBJECT_CAST(mem), key, std::move(*storage));
  recent_imports().remember(key, stored);
  return stored;
}

/**
 * gst_tensor_mem_dmabuf_forget_foreign_imports:
 *
 * Drops the imports of foreign DMA-BUFs kept after their memory died (at
 * most 32, the most recently used: what lets a producer that re-wraps the
 * same buffers every frame be imported once per buffer, not per frame).
 * Imports whose memory is still alive stay. `tensorupload` and
 * `tensorcudaimport` call it when they stop, so a stopped pipeline holds no
 * foreign buffer; a pipeline still running imports its buffers once more.
 *
 * Since: 0.1
 */
void gst_tensor_mem_dmabuf_forget_foreign_imports(void) { recent_imports().clear(); }

/* ---- the DMA-BUF backend ---- */

namespace gst_tensormem {

namespace {
gboolean dmabuf_check_usable(GstElement *element) {
  auto usable = tensormem::DmaBufStorage::check_source();
  if (usable)
    return TRUE;
  GST_ELEMENT_ERROR(element, RESOURCE, OPEN_READ_WRITE, ("storage=dmabuf: %s", usable.error().message().c_str()),
                    (nullptr));
  return FALSE;
}
GstAllocator *dmabuf_new_allocator(GstObject *) { return gst_tensor_mem_dmabuf_allocator_get(); }
gboolean dmabuf_fd_bytes(GstMemory *mem, guint64 *bytes) {
  const tensormem::Tensor *own = own_dmabuf_tensor(mem);
  if (!own)
    return FALSE;
  *bytes = own->size_bytes();
  return TRUE;
}
GstBufferPool *dmabuf_new_pool(GstAllocator *) {
  return gst_tensor_mem_buffer_pool_new_for_storage(GST_TENSOR_MEM_STORAGE_DMABUF);
}
/* A memory of the DMA-BUF allocator over the same storage (its own
 * mapping, the same fd's pages), narrowed to the range. */
GstMemory *dmabuf_new_window(GstMemory *mem, gsize offset, gsize size) {
  if (!gst_is_tensor_mem_dmabuf_memory(mem) || offset > mem->size || size > mem->size - offset || size == 0)
    return nullptr;
  std::shared_ptr<tensormem::DmaBufStorage> storage = gst_tensor_mem_dmabuf_memory_get_storage(mem);
  if (!storage)
    return nullptr;
  GstAllocator *allocator = gst_tensor_mem_dmabuf_allocator_get();
  GstMemory *window = gst_tensor_mem_dmabuf_allocator_import(allocator, std::move(storage));
  gst_object_unref(allocator);
  if (window)
    gst_memory_resize(window, static_cast<gssize>(mem->offset + offset), size);
  return window;
}
} // namespace

const Backend &dmabuf_backend() {
  static const Backend backend = {
      .storage = GST_TENSOR_MEM_STORAGE_DMABUF,
      .memory_name = "DMA-BUF",
      .caps_feature = GST_CAPS_FEATURE_MEMORY_DMABUF,
      .kind = tensormem::StorageKind::DmaBuf,
      // mmap returns page-aligned addresses: the most a DMA-BUF memory can promise.
      .max_align_mask = 4096 - 1,
      .check_usable = dmabuf_check_usable,
      .new_allocator = dmabuf_new_allocator,
      .maps_as_system = true,
      .wraps_dmabuf_fds = true,
      .holds_batches = true,
      .extra_template = GST_TENSOR_MEM_DMA_DRM_STRUCTURE,
      .allocator_type = gst_tensor_mem_dmabuf_allocator_get_type,
      .owns_memory = gst_is_tensor_mem_dmabuf_memory,
      .new_pool = dmabuf_new_pool,
      .new_window = dmabuf_new_window,
      .fd_bytes = dmabuf_fd_bytes,
      .forget_foreign_imports = gst_tensor_mem_dmabuf_forget_foreign_imports,
  };
  return backend;
}

/* ---- DMA_DRM caps (GStreamer 1.24 and later) ---- */

#if GST_TENSOR_MEM_HAVE_DMA_DRM
namespace {

// From drm_fourcc.h, which GStreamer's headers do not include.
constexpr guint32 kDrmFormatInvalid = 0;
constexpr guint64 kDrmModifierLinear = 0;

bool is_dma_drm_structure(const GstCaps *caps, guint index) {
  const GstStructure *s = gst_caps_get_structure(caps, index);
  const char *format = gst_structure_get_string(s, "format");
  return gst_structure_has_name(s, "video/x-raw") && format && g_str_equal(format, "DMA_DRM");
}

/* Calls `each` with every string of `value`: one string or a list of them. */
template <typename F> void for_each_string(const GValue *value, F each) {
  if (!value)
    return;
  if (G_VALUE_HOLDS_STRING(value)) {
    each(g_value_get_string(value));
    return;
  }
  if (GST_VALUE_HOLDS_LIST(value))
    for (guint i = 0; i < gst_value_list_get_size(value); ++i)
      for_each_string(gst_value_list_get_value(value, i), each);
}

void append_string(GValue *list, const char *text) {
  GValue item = G_VALUE_INIT;
  g_value_init(&item, G_TYPE_STRING);
  g_value_set_string(&item, text);
  gst_value_list_append_and_take_value(list, &item);
}

/* `list` (a GstValueList) set as `field` of `s`: its one value where it has
 * one; FALSE (and `list` unset) when it is empty. */
bool set_list_field(GstStructure *s, const char *field, GValue *list) {
  const guint n = gst_value_list_get_size(list);
  if (n == 0) {
    g_value_unset(list);
    return false;
  }
  if (n == 1)
    gst_structure_set_value(s, field, gst_value_list_get_value(list, 0));
  else
    gst_structure_set_value(s, field, list);
  g_value_unset(list);
  return true;
}

/* GST_TENSOR_MEM_VIDEO_FORMATS as a list value. */
const GValue *tensor_video_formats() {
  static const GValue *formats = [] {
    GstStructure *s = gst_structure_from_string("f, format=(string)" GST_TENSOR_MEM_VIDEO_FORMATS, nullptr);
    auto *value = g_new0(GValue, 1);
    g_value_init(value, GST_TYPE_LIST);
    g_value_copy(gst_structure_get_value(s, "format"), value);
    gst_structure_free(s);
    return value; // kept for the process
  }();
  return formats;
}

} // namespace

GstCaps *caps_without_dma_drm(GstCaps *caps) {
  if (gst_caps_is_any(caps))
    return gst_caps_ref(caps);
  GstCaps *out = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    GstStructure *s = gst_structure_copy(gst_caps_get_structure(caps, i));
    GstCapsFeatures *features = gst_caps_features_copy(gst_caps_get_features(caps, i));
    if (is_dma_drm_structure(caps, i)) {
      const GValue *drm = gst_structure_get_value(s, "drm-format");
      bool keep = true;
      if (!drm) { // any fourcc: any format this library reads
        gst_structure_set_value(s, "format", tensor_video_formats());
      } else {
        GValue formats = G_VALUE_INIT;
        g_value_init(&formats, GST_TYPE_LIST);
        for_each_string(drm, [&](const char *text) {
          guint64 modifier = 0;
          const guint32 fourcc = gst_video_dma_drm_fourcc_from_string(text, &modifier);
          const GstVideoFormat format = gst_video_dma_drm_fourcc_to_format(fourcc);
          if (format != GST_VIDEO_FORMAT_UNKNOWN)
            append_string(&formats, gst_video_format_to_string(format));
        });
        gst_structure_remove_field(s, "drm-format");
        keep = set_list_field(s, "format", &formats);
      }
      if (!keep) {
        gst_structure_free(s);
        gst_caps_features_free(features);
        continue;
      }
    }
    gst_caps_append_structure_full(out, s, features);
  }
  return out;
}

GstCaps *caps_with_dma_drm(GstCaps *caps) {
  if (gst_caps_is_any(caps))
    return gst_caps_ref(caps);
  GstCaps *out = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    const GstStructure *s = gst_caps_get_structure(caps, i);
    gst_caps_append_structure_full(out, gst_structure_copy(s), gst_caps_features_copy(gst_caps_get_features(caps, i)));
    if (!gst_structure_has_name(s, "video/x-raw") || !caps_have_feature(caps, i, GST_CAPS_FEATURE_MEMORY_DMABUF) ||
        is_dma_drm_structure(caps, i))
      continue;
    GstStructure *drm = gst_structure_copy(s);
    const GValue *formats = gst_structure_get_value(s, "format");
    if (!formats) // any format: any this library reads
      formats = tensor_video_formats();
    {
      GValue fourccs = G_VALUE_INIT;
      g_value_init(&fourccs, GST_TYPE_LIST);
      for_each_string(formats, [&](const char *name) {
        const guint32 fourcc = gst_video_dma_drm_fourcc_from_format(gst_video_format_from_string(name));
        if (fourcc == kDrmFormatInvalid)
          return;
        gchar *text = gst_video_dma_drm_fourcc_to_string(fourcc, kDrmModifierLinear);
        append_string(&fourccs, text);
        g_free(text);
      });
      if (!set_list_field(drm, "drm-format", &fourccs)) {
        gst_structure_free(drm);
        continue;
      }
    }
    gst_structure_set(drm, "format", G_TYPE_STRING, "DMA_DRM", nullptr);
    gst_caps_append_structure_full(out, drm, gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_DMABUF, nullptr));
  }
  return out;
}
#else
GstCaps *caps_without_dma_drm(GstCaps *caps) { return gst_caps_copy(caps); }
GstCaps *caps_with_dma_drm(GstCaps *caps) { return gst_caps_copy(caps); }
#endif

} // namespace gst_tensormem

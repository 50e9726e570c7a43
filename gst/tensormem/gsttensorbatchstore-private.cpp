// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorbatchstore-private.h>

#include <gst/tensormem/gsttensormemallocator.hpp>
#include <gst/tensormem/gsttensorreadcompletion.h>

#include <gst/allocators/gstdmabuf.h>

#include <tensormem/storage.hpp>
#include <tensormem/tensor.hpp>

#ifdef G_OS_UNIX
#include <unistd.h>
#endif

#include <atomic>
#include <mutex>
#include <variant>
#include <vector>

namespace gst_tensormem {

struct BatchAllocation {
  std::weak_ptr<BatchStore> store;
  std::atomic<int> refs{1};
  const Backend *family = nullptr;
  GstObject *device = nullptr; // one reference, or NULL
  GstMemory *root = nullptr;   // the family's memory over the whole allocation
  gsize slot_bytes = 0, bytes = 0;
  guint n_slots = 0;

  ~BatchAllocation() {
    if (root)
      gst_memory_unref(root);
    gst_clear_object(&device);
  }
};

struct BatchStore::Impl {
  gsize kept;
  mutable std::mutex lock; // alone: an allocation comes back from any thread
  std::vector<BatchAllocation *> spare;
};

namespace {

GQuark tag_quark() {
  static GQuark quark = g_quark_from_static_string("GstTensorMemBatchWindow");
  return quark;
}

void tag_free(gpointer data) {
  auto *tag = static_cast<BatchWindowTag *>(data);
  batch_allocation_unref(tag->allocation);
  delete tag;
}

void storage_ref_free(gpointer data) { delete static_cast<std::shared_ptr<tensormem::Storage> *>(data); }

/* A plain memory over bytes [offset, offset + size) of `root`'s storage that
 * maps outside the storage's map state, where the storage's bytes are host
 * memory (wrapped, holding the storage) or a DMA-BUF (a dmabuf memory over a
 * dup of its fd, with its own mmap). The map state lets one CPU writer of a
 * storage map it at a time; a batch's slots are disjoint ranges that their
 * streams write at once, and the element orders them itself. NULL for any
 * other storage (a PBO's slots are written by GL passes through the
 * family's windows). */
GstMemory *unordered_window(GstMemory *root, gsize offset, gsize size) {
  const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(root);
  if (!tensor || !tensor->storage())
    return nullptr;
  const std::shared_ptr<tensormem::Storage> &storage = tensor->storage();
  tensormem::Result<tensormem::StorageHandle> handle = storage->export_handle();
  if (!handle)
    return nullptr;
  const gsize from = root->offset + offset;
  if (const auto *host = std::get_if<tensormem::HostMemoryHandle>(&*handle)) {
    if (!host->data || from > host->size || size > host->size - from)
      return nullptr;
    return gst_memory_new_wrapped(static_cast<GstMemoryFlags>(0), host->data + from, size, 0, size,
                                  new std::shared_ptr<tensormem::Storage>(storage), storage_ref_free);
  }
#ifdef G_OS_UNIX
  if (const auto *dmabuf = std::get_if<tensormem::DmaBufHandle>(&*handle)) {
    if (dmabuf->fd < 0 || from > dmabuf->size || size > dmabuf->size - from)
      return nullptr;
    // GStreamer's own allocator lives as long as the process, as its own do.
    static GstAllocator *plain = gst_dmabuf_allocator_new();
    const int fd = dup(dmabuf->fd);
    if (fd < 0)
      return nullptr;
    GstMemory *mem = gst_dmabuf_allocator_alloc(plain, fd, dmabuf->offset + dmabuf->size);
    if (!mem) {
      close(fd);
      return nullptr;
    }
    gst_memory_resize(mem, static_cast<gssize>(dmabuf->offset + from), size);
    return mem;
  }
#endif
  return nullptr;
}

/* A window of `allocation` for a writer: an unordered one where the
 * storage allows, else the family's. */
GstMemory *writer_window(BatchAllocation *allocation, gsize offset, gsize size) {
  if (GstMemory *mem = unordered_window(allocation->root, offset, size))
    return mem;
  return allocation->family->new_window ? allocation->family->new_window(allocation->root, offset, size) : nullptr;
}

} // namespace

gsize batch_allocation_slot_bytes(const BatchAllocation *allocation) { return allocation->slot_bytes; }

guint batch_allocation_n_slots(const BatchAllocation *allocation) { return allocation->n_slots; }

void batch_allocation_ref(BatchAllocation *allocation) { allocation->refs.fetch_add(1, std::memory_order_relaxed); }

void batch_allocation_unref(BatchAllocation *allocation) {
  if (allocation->refs.fetch_sub(1, std::memory_order_acq_rel) != 1)
    return;
  if (std::shared_ptr<BatchStore> store = allocation->store.lock()) {
    std::lock_guard<std::mutex> guard(store->impl_->lock);
    if (store->impl_->spare.size() < store->impl_->kept) {
      store->impl_->spare.push_back(allocation);
      return;
    }
  }
  delete allocation;
}

GstMemory *batch_window(BatchAllocation *allocation, guint64 seq, guint slot, gsize offset, gsize size) {
  // A slot is written by its stream while the others write theirs; the
  // whole batch is read downstream, through the storage's map state.
  GstMemory *mem = nullptr;
  if (slot != kBatchWhole)
    mem = writer_window(allocation, offset, size);
  else if (allocation->family->new_window)
    mem = allocation->family->new_window(allocation->root, offset, size);
  if (!mem)
    return nullptr;
  batch_allocation_ref(allocation);
  gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(mem), tag_quark(), new BatchWindowTag{allocation, seq, slot},
                            tag_free);
  return mem;
}

const BatchWindowTag *batch_window_tag(GstBuffer *buffer) {
  if (gst_buffer_n_memory(buffer) != 1)
    return nullptr;
  return static_cast<const BatchWindowTag *>(
      gst_mini_object_get_qdata(GST_MINI_OBJECT_CAST(gst_buffer_peek_memory(buffer, 0)), tag_quark()));
}

bool batch_write_on_cpu(BatchAllocation *allocation, gsize offset, gsize size,
                        const std::function<void(std::byte *)> &write) {
  GstMemory *window = writer_window(allocation, offset, size);
  GstMapInfo map;
  if (!window || !gst_memory_map(window, &map, GST_MAP_WRITE)) {
    if (window)
      gst_memory_unref(window);
    return false;
  }
  write(reinterpret_cast<std::byte *>(map.data));
  gst_memory_unmap(window, &map);
  gst_memory_unref(window);
  return true;
}

BatchStore::BatchStore(gsize kept) : impl_(std::make_unique<Impl>()) { impl_->kept = kept; }

BatchStore::~BatchStore() {
  // No allocation still out can come back here now (its weak reference is
  // gone); those kept are freed.
  for (BatchAllocation *allocation : impl_->spare)
    delete allocation;
}

std::shared_ptr<BatchStore> BatchStore::create(gsize kept) { return std::shared_ptr<BatchStore>(new BatchStore(kept)); }

gsize BatchStore::kept() const {
  std::lock_guard<std::mutex> guard(impl_->lock);
  return impl_->spare.size();
}

BatchAllocation *BatchStore::acquire(const Backend &family, GstObject *device, gsize slot_bytes, guint n_slots) {
  // The spare allocations are looked at outside the store's lock: asking a
  // storage whether a reader still reads it polls its GPU completions.
  std::vector<BatchAllocation *> spare, unfit, busy;
  BatchAllocation *found = nullptr;
  {
    std::lock_guard<std::mutex> guard(impl_->lock);
    spare.swap(impl_->spare);
  }
  while (!spare.empty() && !found) {
    BatchAllocation *a = spare.back(); // the latest returned first
    spare.pop_back();
    if (a->family != &family || a->device != device || a->slot_bytes != slot_bytes || a->n_slots != n_slots)
      unfit.push_back(a); // of an earlier layout
    else if (gst_tensor_mem_memory_is_being_read(a->root))
      busy.push_back(a); // a reader still reads it: kept, not written
    else
      found = a;
  }
  {
    // Back in their order: the busy ones oldest, then those not looked at,
    // then any returned meanwhile.
    std::lock_guard<std::mutex> guard(impl_->lock);
    busy.insert(busy.end(), spare.begin(), spare.end());
    busy.insert(busy.end(), impl_->spare.begin(), impl_->spare.end());
    impl_->spare.swap(busy);
  }
  for (BatchAllocation *a : unfit)
    delete a;
  if (found) {
    found->refs.store(1, std::memory_order_relaxed);
    return found;
  }
  // The table says which families hold batches; another family's allocator
  // is never asked for flat bytes.
  if (!family.holds_batches || !family.new_allocator || n_slots == 0 || slot_bytes == 0 ||
      slot_bytes > G_MAXSIZE / n_slots)
    return nullptr;
  GstAllocator *allocator = family.new_allocator(device);
  if (!allocator)
    return nullptr;
  auto *a = new BatchAllocation();
  a->store = weak_from_this();
  a->family = &family;
  a->device = device ? GST_OBJECT_CAST(gst_object_ref(device)) : nullptr;
  a->slot_bytes = slot_bytes;
  a->n_slots = n_slots;
  a->bytes = slot_bytes * n_slots;
  a->root = gst_allocator_alloc(allocator, a->bytes, nullptr);
  gst_object_unref(allocator);
  if (!a->root) {
    delete a;
    return nullptr;
  }
  return a;
}

} // namespace gst_tensormem

// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem and its elements: the allocations a batching
 * element assembles its batches in, for memory of any family of the backend
 * table.
 *
 * A BatchAllocation is one memory of a family's allocator holding n slots of
 * slot_bytes each, used by one batch at a time. Windows of it (no copy) are
 * what producers write their slot into and what the batch goes downstream
 * as. The whole batch is the family's window (the table's new_window), read
 * through the storage's map state. A slot is a plain memory that maps
 * outside it where the storage is host memory or a DMA-BUF, so that every
 * stream writes its slot at once (the map state lets one CPU writer map a
 * storage at a time), and the family's window otherwise (PBO: written by GL
 * passes). Each window holds a reference to the allocation, and
 * when the last one goes the allocation returns to its BatchStore, which
 * hands it out again only once no reader still reads it
 * (gst_buffer_begin_tensor_mem_read). Nothing here names a family. C++ only;
 * not installed. */
#pragma once

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/tensormem-prelude.h>

#include <cstddef>
#include <functional>
#include <memory>

namespace gst_tensormem {

class BatchStore;
struct BatchAllocation;

/* What a window made by batch_window() says about itself: its allocation,
 * the batch it was made for and its slot (kBatchWhole: the whole batch). */
constexpr guint kBatchWhole = G_MAXUINT;
struct BatchWindowTag {
  BatchAllocation *allocation;
  guint64 seq;
  guint slot;
};

/* The store's side of an allocation; the element reads it. */
gsize batch_allocation_slot_bytes(const BatchAllocation *allocation);
guint batch_allocation_n_slots(const BatchAllocation *allocation);
/* Takes one reference; the last one returns the allocation to its store
 * (any thread). */
void batch_allocation_ref(BatchAllocation *allocation);
void batch_allocation_unref(BatchAllocation *allocation);

/* A writable memory over bytes [offset, offset + size) of `allocation` (a
 * slot's writer window, or the family's window for kBatchWhole), tagged with
 * `seq` and `slot`, holding one reference to the allocation until it is
 * freed; NULL when none can be made. */
GstMemory *batch_window(BatchAllocation *allocation, guint64 seq, guint slot, gsize offset, gsize size);
/* The tag of `buffer`'s memory where it is one window of a batch; else NULL. */
const BatchWindowTag *batch_window_tag(GstBuffer *buffer);

/* A CPU write of `size` bytes at `offset` of `allocation`: `write` gets the
 * mapped bytes of a writer window over them (the caller orders writes to
 * the same range). FALSE when they cannot be mapped. */
bool batch_write_on_cpu(BatchAllocation *allocation, gsize offset, gsize size,
                        const std::function<void(std::byte *)> &write);

class BatchStore : public std::enable_shared_from_this<BatchStore> {
public:
  /* `kept`: how many returned allocations are kept beyond those in use. */
  static std::shared_ptr<BatchStore> create(gsize kept);
  ~BatchStore();
  BatchStore(const BatchStore &) = delete;
  BatchStore &operator=(const BatchStore &) = delete;

  /* An allocation of `family`'s memory (`device`: its shared object, NULL
   * for families without one) of n_slots × slot_bytes: a returned one of
   * the same family, device and layout that no reader still reads, else a
   * new one. One reference; NULL for a family that does not hold batches
   * (Backend::holds_batches) or when its allocator makes none. */
  BatchAllocation *acquire(const Backend &family, GstObject *device, gsize slot_bytes, guint n_slots);

  /* Returned allocations kept now (for tests and logs). */
  gsize kept() const;

private:
  explicit BatchStore(gsize kept);
  friend void batch_allocation_unref(BatchAllocation *allocation);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace gst_tensormem

// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: the CPU-map logic and allocation checks shared
 * by the base allocator (system, PBO) and the DMA-BUF allocator. Not
 * installed. */
#pragma once

#include <gst/gst.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensorstorage.h>

#include <tensormem/host_pin.hpp>
#include <tensormem/tensor.hpp>

#include <mutex>

namespace gst_tensormem {

/* The map state of one GstMemory over a tensormem storage.
 *
 * The maps of one GstMemory share one acquisition of the core map state,
 * taken by the first and released by the last: readers share one backend
 * mapping and a writer is exclusive, also against users of the storage that
 * never see this GstMemory. GStreamer's own lock has already vetted every
 * map that reaches us (it lets the holder of a write map map the same memory
 * again, as gst_video_frame_map does once per plane, and refuses a write map
 * while reads are live), so a map made while the memory holds an acquisition
 * joins it instead of asking the core for a second one, which the core would
 * refuse to a writer. No map allocates: the hold is a count here. */
struct TensorMapping {
  explicit TensorMapping(const tensormem::Tensor &whole) : tensor(whole) {}
  TensorMapping(const TensorMapping &) = delete;
  TensorMapping &operator=(const TensorMapping &) = delete;
  /* A memory freed while still mapped (a caller's bug) gives its hold back. */
  ~TensorMapping() {
    if (holds > 0)
      tensor.storage()->release_map();
  }

  /* The whole allocation as a 1-D u8 tensor; its storage() keeps the
   * allocation alive for the memory that owns this mapping. */
  tensormem::Tensor tensor;
  std::mutex mu;
  std::byte *data = nullptr; // the storage's address while holds > 0
  guint holds = 0;           // live gst maps of this memory
  bool writer = false;       // the acquisition writes
};

/* The mem_map_full body: the base address of the whole allocation (GStreamer
 * adds mem->offset), or NULL after a log line. Never throws. */
gpointer tensor_mapping_map(TensorMapping *mapping, GstMemory *mem, GstMapInfo *info, gsize maxsize) noexcept;

/* Why the last tensor_mapping_map on this thread failed; NULL after one that
 * worked (and before any). */
const char *last_map_failure() noexcept;

/* The mapping a map of tensor_mapping_map() went through, kept in `info`;
 * NULL for a pinned share's map (which holds its pin instead). */
TensorMapping *mapped_by(const GstMapInfo *info) noexcept;

/* The mem_unmap_full body for a map made by tensor_mapping_map. */
void tensor_mapping_unmap(TensorMapping *mapping, GstMapInfo *info) noexcept;

/* Resolves a share/copy request against `mem`: `offset` is relative to the
 * memory's offset (negative exposes the prefix, as gst_buffer_resize does) and
 * size -1 means "the rest". FALSE (after a warning) when the range leaves the
 * allocation. */
bool resolve_memory_range(GstMemory *mem, gssize offset, gssize size, gsize *abs_offset, gsize *abs_size) noexcept;

/* How an allocator makes a tensor memory over `tensor` (the base memory's
 * constructor). */
using TensorMemoryNew = GstMemory *(*)(GstAllocator *allocator, GstMemory *parent, const tensormem::Tensor &tensor,
                                       GstMemoryFlags flags, gsize maxsize, gsize align, gsize offset,
                                       gsize size) noexcept;

/* The mem_share body: a read-only memory over the same storage (`tensor`),
 * made with `make`, whose parent is `mem`'s root; NULL after a warning when
 * the range leaves the allocation. */
GstMemory *share_memory_range(GstMemory *mem, gssize offset, gssize size, const tensormem::Tensor &tensor,
                              TensorMemoryNew make) noexcept;

/* The largest alignment mask the base address of `storage`'s memory is
 * guaranteed to meet: what its allocator accepts in GstAllocationParams and
 * what a tensor buffer pool of that storage may ask for. */
gsize max_align_mask(GstTensorMemStorage storage) noexcept;

/* The checks every tensor allocator's alloc starts with. A NULL `*params` is
 * pointed at `defaults` (initialised here); an alignment mask above
 * `max_align_mask`, what `kind` memory guarantees, is refused; prefix + size
 * + padding goes into `*total`. FALSE, after a warning in the allocator's
 * debug category `cat` naming the numbers, when the alignment cannot be met
 * or the sum overflows. */
bool prepare_allocation(GstDebugCategory *cat, GstAllocator *allocator, gsize size, GstAllocationParams **params,
                        GstAllocationParams *defaults, gsize max_align_mask, const char *kind, gsize *total) noexcept;

/* The allocator of `type` registered under `name` (made and registered on
 * the first call, `once` guarding it), so gst_allocator_find() finds it too.
 * `once` then holds the instance, with a reference of the process's own
 * (an allocator registered later under the same name cannot free it): the
 * elements ask for it per buffer, and a registry lookup would take a global
 * lock each time. Returns a new reference. */
GstAllocator *registered_allocator(gsize *once, GType type, const char *name) noexcept;

/* The mem_copy body of every tensor allocator.
 *
 * GStreamer asks for a copy of the whole memory (offset 0, size -1) when it
 * needs an exclusive reference to a memory that is mapped for writing inside
 * a buffer someone else also holds: gst_buffer_make_writable on a decoder's
 * output buffer while the decoder (gst-libav's direct rendering) keeps the
 * frame mapped as a reference picture. The core then copies any memory,
 * system memory included, because gst_memory_share refuses write-locked
 * memory. For a memory of one of our pool buffers the answer is a read-only
 * share instead: a memory with no GStreamer parent (whose exclusive lock
 * cannot be taken) that holds the pool buffer, so the pool reuses the storage
 * only when both the mapper and every holder of the share have let go, and
 * holds a CPU pin of the storage for its life, so its maps read through the
 * writer's map (the writer finished the frame it handed on) and every other
 * writer of the storage is refused while it lives.
 *
 * Everything else (a range, a deep copy, a writer's copy-on-write of such a
 * share) is a real copy, counted in gst_tensor_mem_get_copy_stats(): into a
 * buffer of the memory's pool when it is a pool's (or a share of one) and
 * the pool has a buffer free (the copy holds that buffer as the share does),
 * else into a new memory from `mem`'s own allocator; NULL (after a warning)
 * on failure. */
GstMemory *copy_memory_range(GstMemory *mem, gssize offset, gssize size) noexcept;

/* Records `buffer` (a pool buffer just allocated) as the pool buffer of each
 * of its memories, for copy_memory_range's share. */
void link_pool_buffer(GstBuffer *buffer) noexcept;

/* True while copy_memory_range asks the allocator's mem_share for a share
 * without a GStreamer parent (see copy_memory_range): the mem_share bodies
 * then make a root memory over the same storage. */
bool detached_share_requested() noexcept;

/* The mem_is_span body: both memories window one storage, back to back. */
gboolean tensor_memory_is_span(GstMemory *mem1, GstMemory *mem2, gsize *offset) noexcept;

} // namespace gst_tensormem

// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:gsttensorreadcompletion
 * @title: GstTensorMemReadCompletion
 * @short_description: a reader's completion, so a pool does not recycle
 *   memory that is still being read
 *
 * A buffer's memory can be read after the buffer itself is gone: an
 * inference step queued on a GPU stream with a device pointer from
 * `tensorcudaimport`, or an application that handed a DLPack tensor to a
 * worker and dropped the sample. Unless the pool knows, it hands the memory
 * to the decoder for the next frame while the reader still reads it.
 *
 * A reader says so with gst_buffer_begin_tensor_mem_read() before it drops
 * the buffer and gst_tensor_mem_read_completion_done() when it has finished
 * (C++ callers with their own timeline use
 * gst_buffer_add_tensor_mem_read_completion()). The read is recorded on the
 * memory's storage: a #GstTensorMemBufferPool waits for it, bounded by its
 * fence timeout, before it hands the buffer out again (counted in its
 * `read-waits` and `read-timeouts` properties), and any CPU map that writes
 * the memory waits for it too. Readers that only read share: a read map is
 * never held up by another reader.
 *
 * Since: 0.1
 */
#include <gst/tensormem/gsttensorreadcompletion.h>

#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensormemallocator.hpp>
#include <gst/tensormem/gsttensorreadcompletion.hpp>

#include <tensormem/storage.hpp>
#include <tensormem/tensor.hpp>

#include <atomic>
#include <new>
#include <string>

struct _GstTensorMemReadCompletion {
  std::atomic<gint> refs{1};
  std::shared_ptr<tensormem::SoftwareTimeline> timeline;
  std::uint64_t value = 0;
  std::atomic<bool> done{false};
};

G_DEFINE_BOXED_TYPE(GstTensorMemReadCompletion, gst_tensor_mem_read_completion, gst_tensor_mem_read_completion_ref,
                    gst_tensor_mem_read_completion_unref)

gboolean gst_buffer_add_tensor_mem_read_completion(GstBuffer *buffer, std::shared_ptr<tensormem::Timeline> timeline,
                                                   guint64 value, GError **error) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), FALSE);
  bool any = false;
  for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i) {
    const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(gst_buffer_peek_memory(buffer, i));
    if (!tensor)
      continue;
    tensormem::Result<void> recorded = tensor->storage()->record_read(timeline, value);
    if (!recorded) {
      g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS, "recording a read of memory %u: %s", i,
                  recorded.error().message().c_str());
      return FALSE;
    }
    any = true;
  }
  if (!any) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
                "the buffer has no tensor memory to record a read on (%u memories of other allocators)",
                gst_buffer_n_memory(buffer));
    return FALSE;
  }
  return TRUE;
}

/**
 * gst_buffer_begin_tensor_mem_read:
 * @buffer: a #GstBuffer in tensor memory (need not be writable)
 * @error: a #GError, or %NULL
 *
 * Starts a read of @buffer's memory that outlives the buffer: until
 * gst_tensor_mem_read_completion_done() is called on the result (or its last
 * reference goes), the memory is not written by the CPU and its pool does
 * not hand it to a producer (bounded by the pool's fence timeout; a read
 * that never finishes makes the pool drop that buffer rather than overwrite
 * it).
 *
 * Returns: (transfer full) (nullable): the read's completion, or %NULL with
 * @error set when @buffer has no tensor memory.
 *
 * Since: 0.1
 */
GstTensorMemReadCompletion *gst_buffer_begin_tensor_mem_read(GstBuffer *buffer, GError **error) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  auto *read = new (std::nothrow) GstTensorMemReadCompletion();
  if (!read) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NO_SPACE_LEFT, "out of memory");
    return nullptr;
  }
  read->timeline =
      tensormem::SoftwareTimeline::create("read of buffer " + std::to_string(reinterpret_cast<guintptr>(buffer)));
  read->value = read->timeline->issue();
  if (!gst_buffer_add_tensor_mem_read_completion(buffer, read->timeline, read->value, error)) {
    read->done = true; // nothing recorded: nothing to signal
    gst_tensor_mem_read_completion_unref(read);
    return nullptr;
  }
  return read;
}

/**
 * gst_tensor_mem_read_completion_done:
 * @read: a #GstTensorMemReadCompletion
 *
 * The reader has finished: writers and the pool may use the memory again.
 * Calling it again does nothing.
 *
 * Since: 0.1
 */
void gst_tensor_mem_read_completion_done(GstTensorMemReadCompletion *read) {
  g_return_if_fail(read != nullptr);
  if (read->done.exchange(true))
    return;
  (void)read->timeline->signal(read->value); // issued by us, so it cannot be refused
}

/**
 * gst_tensor_mem_read_completion_is_done:
 * @read: a #GstTensorMemReadCompletion
 *
 * Returns: %TRUE once gst_tensor_mem_read_completion_done() was called.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_read_completion_is_done(GstTensorMemReadCompletion *read) {
  g_return_val_if_fail(read != nullptr, FALSE);
  return read->done.load();
}

/**
 * gst_tensor_mem_read_completion_ref:
 * @read: a #GstTensorMemReadCompletion
 *
 * Returns: (transfer full): @read, with one more reference.
 *
 * Since: 0.1
 */
GstTensorMemReadCompletion *gst_tensor_mem_read_completion_ref(GstTensorMemReadCompletion *read) {
  g_return_val_if_fail(read != nullptr, nullptr);
  read->refs.fetch_add(1);
  return read;
}

/**
 * gst_tensor_mem_read_completion_unref:
 * @read: (transfer full): a #GstTensorMemReadCompletion
 *
 * Drops a reference. The last one finishes the read if
 * gst_tensor_mem_read_completion_done() was not called: a reader that lost
 * its completion has stopped reading, and a read nobody can finish would
 * only keep the memory from its next frame.
 *
 * Since: 0.1
 */
void gst_tensor_mem_read_completion_unref(GstTensorMemReadCompletion *read) {
  g_return_if_fail(read != nullptr);
  if (read->refs.fetch_sub(1) != 1)
    return;
  gst_tensor_mem_read_completion_done(read);
  delete read;
}

/**
 * gst_tensor_mem_memory_is_being_read:
 * @mem: a #GstMemory
 *
 * Whether a read recorded on @mem's storage (gst_buffer_begin_tensor_mem_read(),
 * on any buffer over that storage) has not finished. For code that recycles
 * storages itself instead of through a #GstTensorMemBufferPool (tensorbatch
 * keeps its batches' allocations): a storage still being read is not handed
 * to a producer. Polls, never waits.
 *
 * Returns: %TRUE while such a read runs, or when the reads cannot be
 * polled; %FALSE when none runs or @mem is not tensor memory (whose reads
 * cannot be recorded).
 *
 * Since: 0.2
 */
gboolean gst_tensor_mem_memory_is_being_read(GstMemory *mem) {
  g_return_val_if_fail(mem != nullptr, FALSE);
  const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(mem);
  if (!tensor)
    return FALSE;
  tensormem::Result<std::vector<tensormem::GpuCompletion>> running = tensor->storage()->pending_reads();
  return !running || !running->empty();
}

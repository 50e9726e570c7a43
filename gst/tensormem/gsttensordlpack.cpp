// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorcaps.h>
#include <gst/tensormem/gsttensorcudameta.h>
#include <gst/tensormem/gsttensordlpack.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensormemvalidate.h>

#include <gst/video/video.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_mem_dlpack_debug);
#define GST_CAT_DEFAULT gst_tensor_mem_dlpack_debug

namespace {

constexpr GstClockTime kFenceWait = 5 * GST_SECOND;

/* gst_tensor_mem_dlpack_get_stats(): tensors made and released. */
std::atomic<guint64> tensors_made{0};
std::atomic<guint64> tensors_released{0};

void init_debug() {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    GST_DEBUG_CATEGORY_INIT(gst_tensor_mem_dlpack_debug, "tensormemdlpack", 0, "tensormem DLPack hand-off");
    g_once_init_leave(&done, 1);
  }
}

/* The shape, strides (in elements), element type and byte offset of what a
 * buffer holds, read from its caps (and its video meta). */
struct Layout {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  DLDataType dtype{kDLUInt, 8, 1};
  std::uint64_t byte_offset = 0;
  std::uint64_t extent = 0; // bytes from byte_offset to the last element's end
};

/* What the consumer's tensor owns until its deleter runs. */
struct Context {
  DLManagedTensor managed{};
  GstBuffer *buffer = nullptr;
  GstMemory *memory = nullptr; // the buffer's one memory, alive while it is
  GstMapInfo map{};
  bool host_mapped = false;
  GstTensorMemCudaMeta *cuda = nullptr;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
};

gboolean fail(GError **error, gint code, const std::string &text) {
  g_set_error_literal(error, GST_RESOURCE_ERROR, code, text.c_str());
  return FALSE;
}

/* Row-major, compact, from the shared other/tensors reader. */
gboolean tensor_layout(const GstStructure *s, Layout *out, GError **error) {
  gst_tensormem::TensorCaps caps;
  std::string why;
  if (!gst_tensormem::parse_tensor_caps(s, &caps, &why))
    return fail(error, GST_RESOURCE_ERROR_SETTINGS, "DLPack hand-off: " + why);
  out->dtype = {static_cast<std::uint8_t>(caps.code), caps.bits, 1};
  out->shape = std::move(caps.shape);
  out->strides.assign(out->shape.size(), 1);
  for (std::size_t i = out->shape.size() - 1; i-- > 0;)
    out->strides[i] = out->strides[i + 1] * out->shape[i + 1];
  out->extent = caps.bytes;
  return TRUE;
}

/* `a * b` into *out unless it overflows. */
bool mul(std::uint64_t a, std::uint64_t b, std::uint64_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* [height, width, channels] of a single-plane 8-bit frame, rows at the
 * stride of the buffer's video meta where it has one. */
gboolean video_layout(GstCaps *caps, GstBuffer *buffer, Layout *out, GError **error) {
  GstVideoInfo info;
  if (!gst_tensor_mem_video_info_from_caps(&info, caps, nullptr))
    return fail(error, GST_RESOURCE_ERROR_SETTINGS, "raw video caps without a complete format, width and height");
  const GstVideoFormatInfo *finfo = info.finfo;
  /* A pixel must be a whole number of bytes: IYU1 packs four pixels into
   * six bytes (pixel stride 0), which would make the channel axis 0 long
   * (found by tests/fuzz/fuzz_dlpack.cpp). */
  if (GST_VIDEO_INFO_N_PLANES(&info) != 1 || GST_VIDEO_FORMAT_INFO_DEPTH(finfo, 0) != 8 ||
      GST_VIDEO_FORMAT_INFO_IS_COMPLEX(finfo) || GST_VIDEO_FORMAT_INFO_H_SUB(finfo, 0) != 0 ||
      GST_VIDEO_FORMAT_INFO_PSTRIDE(finfo, 0) <= 0)
    return fail(error, GST_RESOURCE_ERROR_SETTINGS,
                std::string("video format ") + GST_VIDEO_INFO_NAME(&info) +
                    " is not one plane of whole 8-bit pixels; a DLPack tensor is one strided array "
                    "(use tensorconvert for a model tensor)");
  std::uint64_t stride = GST_VIDEO_INFO_PLANE_STRIDE(&info, 0);
  std::uint64_t offset = GST_VIDEO_INFO_PLANE_OFFSET(&info, 0);
  if (GstVideoMeta *meta = gst_buffer_get_video_meta(buffer)) {
    stride = static_cast<std::uint64_t>(meta->stride[0]);
    offset = meta->offset[0];
  }
  const std::uint64_t width = GST_VIDEO_INFO_WIDTH(&info), height = GST_VIDEO_INFO_HEIGHT(&info);
  const std::uint64_t channels = static_cast<std::uint64_t>(GST_VIDEO_FORMAT_INFO_PSTRIDE(finfo, 0));
  std::uint64_t row = 0, rows = 0;
  if (static_cast<gint64>(stride) <= 0 || !mul(width, channels, &row) || stride < row ||
      !mul(stride, height - 1, &rows) || rows > G_MAXUINT64 - row)
    return fail(error, GST_RESOURCE_ERROR_SETTINGS,
                "video stride " + std::to_string(static_cast<gint64>(stride)) + " does not hold a row of " +
                    std::to_string(width) + " pixels");
  out->shape = {static_cast<std::int64_t>(height), static_cast<std::int64_t>(width),
                static_cast<std::int64_t>(channels)};
  out->strides = {static_cast<std::int64_t>(stride), static_cast<std::int64_t>(channels), 1};
  out->byte_offset = offset;
  out->extent = rows + row;
  return TRUE;
}

/* \brief Releases what the tensor held: its map and its buffer reference. */
void release(DLManagedTensor *managed) {
  if (!managed)
    return;
  auto *ctx = static_cast<Context *>(managed->manager_ctx);
  if (ctx->cuda)
    gst_tensor_mem_cuda_meta_unmap(ctx->cuda);
  if (ctx->host_mapped)
    gst_memory_unmap(ctx->memory, &ctx->map);
  gst_buffer_unref(ctx->buffer);
  delete ctx;
  tensors_released.fetch_add(1, std::memory_order_relaxed);
}

/* \brief The buffer's CUDA pointer where its CUDA meta maps, else null. */
gpointer map_cuda(Context *ctx, GstMapFlags flags) {
  GstTensorMemCudaMeta *meta = gst_buffer_get_tensor_mem_cuda_meta(ctx->buffer);
  if (!meta)
    return nullptr;
  gpointer ptr = nullptr;
  gsize size = 0;
  GError *err = nullptr;
  const gboolean mapped = (flags & GST_MAP_WRITE) ? gst_tensor_mem_cuda_meta_map_mut(meta, &ptr, &size, &err)
                                                  : gst_tensor_mem_cuda_meta_map(meta, &ptr, &size, &err);
  if (!mapped) {
    GST_INFO("buffer %p: CUDA meta does not map (%s); handing over a CPU map", ctx->buffer,
             err ? err->message : "no reason");
    g_clear_error(&err);
    return nullptr;
  }
  ctx->cuda = meta;
  return ptr;
}

} // namespace

/* \brief A DLPack tensor over @buffer (CUDA pointer or CPU map), no copy. */
DLManagedTensor *gst_tensor_mem_buffer_to_dlpack(GstBuffer *buffer, GstCaps *caps, GstMapFlags flags, GError **error) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  g_return_val_if_fail(GST_IS_CAPS(caps), nullptr);
  init_debug();
  if (!(flags & GST_MAP_READ)) {
    fail(error, GST_RESOURCE_ERROR_SETTINGS, "DLPack hand-off maps for reading: pass GST_MAP_READ");
    return nullptr;
  }
  // The other/tensors reader explains a non-string dimensions field (a bare
  // 16:1 is a flag set, which also makes the caps unfixed): ask it first.
  const GstStructure *first = gst_caps_get_size(caps) == 1 ? gst_caps_get_structure(caps, 0) : nullptr;
  if (gst_tensormem::is_tensor_caps(first) && !gst_caps_is_fixed(caps)) {
    Layout unused;
    if (!tensor_layout(first, &unused, error))
      return nullptr;
  }
  if (!first || !gst_caps_is_fixed(caps)) {
    fail(error, GST_RESOURCE_ERROR_SETTINGS, "DLPack hand-off needs fixed caps of one structure");
    return nullptr;
  }
  if (gst_buffer_n_memory(buffer) != 1) {
    fail(error, GST_RESOURCE_ERROR_SETTINGS,
         "buffer has " + std::to_string(gst_buffer_n_memory(buffer)) +
             " memories; DLPack hand-off takes one (mapping several as one would copy them)");
    return nullptr;
  }
  if ((flags & GST_MAP_WRITE) && !gst_buffer_is_writable(buffer)) {
    fail(error, GST_RESOURCE_ERROR_NOT_AUTHORIZED, "a writable DLPack tensor needs a writable buffer");
    return nullptr;
  }

  Layout layout;
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  const gboolean described =
      gst_structure_has_name(s, "other/tensors") ? tensor_layout(s, &layout, error)
      : gst_structure_has_name(s, "video/x-raw")
          ? video_layout(caps, buffer, &layout, error)
          : fail(error, GST_RESOURCE_ERROR_SETTINGS,
                 std::string("caps ") + gst_structure_get_name(s) + " are neither other/tensors nor video/x-raw");
  if (!described)
    return nullptr;
  const gsize size = gst_buffer_get_size(buffer);
  if (layout.byte_offset > size || layout.extent > size - layout.byte_offset) {
    fail(error, GST_RESOURCE_ERROR_SETTINGS,
         "the tensor needs " + std::to_string(layout.extent) + " bytes at offset " +
             std::to_string(layout.byte_offset) + " but the buffer holds " + std::to_string(size));
    return nullptr;
  }
  /* A DMA-BUF (or other fd) memory must lie inside the file behind it: a
   * consumer reading past a shorter file's end takes SIGBUS (found by
   * tests/fuzz/fuzz_dlpack.cpp with a memfd shorter than its memory). */
  if (!gst_tensor_mem_validate_tensor_buffer(buffer, layout.byte_offset + layout.extent, error))
    return nullptr;

  if (GstTensorMemFenceMeta *fence = gst_buffer_get_tensor_mem_fence_meta(buffer)) {
    if (!gst_tensor_mem_fence_meta_wait_cpu(fence, kFenceWait, error))
      return nullptr;
  }

  auto *ctx = new (std::nothrow) Context;
  if (!ctx) {
    fail(error, GST_RESOURCE_ERROR_NO_SPACE_LEFT, "out of memory");
    return nullptr;
  }
  // Borrowed until the map is made: a second reference first would make the
  // buffer non-writable and refuse a GST_MAP_WRITE map.
  ctx->buffer = buffer;
  ctx->shape = std::move(layout.shape);
  ctx->strides = std::move(layout.strides);

  DLTensor &t = ctx->managed.dl_tensor;
  if (gpointer device = map_cuda(ctx, flags)) {
    t.data = device;
    t.device = {kDLCUDA, 0};
  } else {
    // The memory itself, not gst_buffer_map(): a buffer map for writing
    // silently replaces a shared memory with a copy.
    ctx->memory = gst_buffer_peek_memory(buffer, 0);
    if ((flags & GST_MAP_WRITE) && !gst_memory_is_writable(ctx->memory)) {
      delete ctx;
      fail(error, GST_RESOURCE_ERROR_NOT_AUTHORIZED,
           "the buffer's memory is shared (another buffer or a share holds it); a writable DLPack tensor "
           "would have to be a copy");
      return nullptr;
    }
    if (!gst_memory_map(ctx->memory, &ctx->map, flags)) {
      delete ctx;
      fail(error, GST_RESOURCE_ERROR_READ, "the buffer's memory does not map for the CPU");
      return nullptr;
    }
    ctx->host_mapped = true;
    t.data = ctx->map.data;
    t.device = {kDLCPU, 0};
  }
  gst_buffer_ref(buffer);
  t.ndim = static_cast<int>(ctx->shape.size());
  t.dtype = layout.dtype;
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  t.byte_offset = layout.byte_offset;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = release;
  tensors_made.fetch_add(1, std::memory_order_relaxed);
  return &ctx->managed;
}

/* \brief gst_tensor_mem_buffer_to_dlpack() as an untyped pointer, for bindings. */
gpointer gst_tensor_mem_buffer_to_dlpack_address(GstBuffer *buffer, GstCaps *caps, GstMapFlags flags, GError **error) {
  return gst_tensor_mem_buffer_to_dlpack(buffer, caps, flags, error);
}

/* \brief How many DLPack tensors were made and released in this process. */
void gst_tensor_mem_dlpack_get_stats(guint64 *made, guint64 *released) {
  if (made)
    *made = tensors_made.load(std::memory_order_relaxed);
  if (released)
    *released = tensors_released.load(std::memory_order_relaxed);
}

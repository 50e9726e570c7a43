// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensord3d11.h>

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorbasememory-private.h>
#include <gst/tensormem/gsttensorbufferpool-private.h>
#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensord3d11.hpp>
#include <gst/tensormem/gsttensord3d11device.h>
#include <gst/tensormem/gsttensord3d11device.hpp>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorfencemeta.hpp>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensorformat.hpp>
#include <gst/tensormem/gsttensormapping-private.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensormemallocator.hpp>
#include <gst/tensormem/gsttensormemvalidate.h>

#include <tensormem/d3d11_timeline.hpp>
#include <tensormem/host_pin.hpp>
#include <tensormem/storage.hpp>

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_d3d11_debug);
#define GST_CAT_DEFAULT gst_tensor_d3d11_debug

G_DEFINE_TYPE_WITH_CODE(GstTensorMemD3D11Allocator, gst_tensor_mem_d3d11_allocator, GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_d3d11_debug, "tensormemd3d11", 0,
                                                "Direct3D 11 texture tensor memory"))

namespace {

/* The alignment a D3D11 memory promises for the address of a map: the
 * staging map's row alignment is at least 16 on real drivers and 256 on the
 * software device; 16 is what is promised. */
constexpr gsize kAlignMask = 16 - 1;

std::shared_ptr<tensormem::D3d11TextureStorage> storage_of(const tensormem::Tensor &tensor) {
  return std::dynamic_pointer_cast<tensormem::D3d11TextureStorage>(tensor.storage());
}

/* A new texture memory of `allocator` over `storage`; NULL after a warning. */
GstMemory *memory_over(GstAllocator *allocator, std::shared_ptr<tensormem::D3d11TextureStorage> storage) {
  const std::size_t bytes = storage->size_bytes();
  auto tensor =
      tensormem::Tensor::wrap(std::move(storage), {bytes}, tensormem::DType::U8, GST_TENSOR_MEM_D3D11_MEMORY_TYPE_NAME);
  if (!tensor) {
    GST_WARNING_OBJECT(allocator, "a tensor over the texture: %s", tensor.error().message().c_str());
    return nullptr;
  }
  return gst_tensormem::base_memory_new_over(allocator, *tensor, kAlignMask);
}

/* A texture needs an image: plain byte allocations are refused. */
std::optional<tensormem::Tensor> create_storage(GstTensorMemBaseAllocator *allocator, gsize bytes,
                                                const GstAllocationParams *) noexcept {
  GST_WARNING_OBJECT(allocator,
                     "a %" G_GSIZE_FORMAT "-byte allocation has no image to make a D3D11 texture of: use "
                     "gst_tensor_mem_d3d11_allocator_alloc_video() (or a tensor buffer pool of storage d3d11)",
                     bytes);
  return std::nullopt;
}

/* Copies `size` bytes at `offset` of `mem`: the whole memory into a new
 * texture of the same image, a part of it into system memory (a part of a
 * texture is not an image). */
GstMemory *copy_texture(GstTensorMemBaseMemory *base, gssize offset, gssize size) noexcept {
  GstMemory *mem = GST_MEMORY_CAST(base);
  if (size < 0)
    size = static_cast<gssize>(mem->size) - offset;
  if (offset < 0 || size < 0 || static_cast<gsize>(offset) > mem->size ||
      static_cast<gsize>(size) > mem->size - static_cast<gsize>(offset)) {
    GST_WARNING("copy of %" G_GSSIZE_FORMAT " bytes at %" G_GSSIZE_FORMAT " outside the %" G_GSIZE_FORMAT
                "-byte memory",
                size, offset, mem->size);
    return nullptr;
  }
  GstMapInfo from;
  if (!gst_memory_map(mem, &from, GST_MAP_READ))
    return nullptr;
  GstMemory *copy = nullptr;
  const bool whole =
      offset == 0 && static_cast<gsize>(size) == mem->size && mem->offset == 0 && mem->size == mem->maxsize;
  if (whole) {
    auto storage = gst_tensor_mem_d3d11_memory_get_storage(mem);
    const tensormem::D3d11ImageLayout &layout = storage->layout();
    auto made = tensormem::D3d11TextureStorage::allocate_image(storage->context(), layout.format, layout.dtype,
                                                               layout.width, layout.height, storage->access());
    if (!made)
      GST_WARNING("a texture for the copy: %s", made.error().message().c_str());
    else if ((*made)->size_bytes() != mem->size)
      GST_WARNING("the copy's texture has %zu bytes, the original %" G_GSIZE_FORMAT, (*made)->size_bytes(), mem->size);
    else
      copy = memory_over(mem->allocator, std::move(*made));
  } else {
    copy = gst_allocator_alloc(nullptr, static_cast<gsize>(size), nullptr);
  }
  if (copy) {
    GstMapInfo to;
    if (gst_memory_map(copy, &to, GST_MAP_WRITE)) {
      std::memcpy(to.data, from.data + offset, static_cast<gsize>(size));
      gst_memory_unmap(copy, &to);
    } else {
      gst_memory_unref(copy);
      copy = nullptr;
    }
  }
  gst_memory_unmap(mem, &from);
  return copy;
}

} // namespace

static void gst_tensor_mem_d3d11_allocator_dispose(GObject *object) {
  gst_clear_object(&GST_TENSOR_MEM_D3D11_ALLOCATOR(object)->device);
  G_OBJECT_CLASS(gst_tensor_mem_d3d11_allocator_parent_class)->dispose(object);
}

static void gst_tensor_mem_d3d11_allocator_class_init(GstTensorMemD3D11AllocatorClass *klass) {
  G_OBJECT_CLASS(klass)->dispose = gst_tensor_mem_d3d11_allocator_dispose;
  auto *base_class = GST_TENSOR_MEM_BASE_ALLOCATOR_CLASS(klass);
  base_class->storage = GST_TENSOR_MEM_STORAGE_D3D11;
  gst_tensormem::base_allocator_class_set_create_tensor(base_class, create_storage);
  base_class->copy = copy_texture;
}

static void gst_tensor_mem_d3d11_allocator_init(GstTensorMemD3D11Allocator *self) {
  GST_ALLOCATOR_CAST(self)->mem_type = GST_TENSOR_MEM_D3D11_MEMORY_TYPE_NAME;
}

/**
 * gst_tensor_mem_d3d11_allocator_new:
 * @device: the D3D11 device whose textures the allocator makes
 *
 * Returns: (transfer full): a new allocator of D3D11 texture memory on @device.
 *
 * Since: 0.1
 */
GstAllocator *gst_tensor_mem_d3d11_allocator_new(GstTensorMemD3D11Device *device) {
  g_return_val_if_fail(GST_IS_TENSOR_MEM_D3D11_DEVICE(device), nullptr);
  auto *self = static_cast<GstTensorMemD3D11Allocator *>(g_object_new(GST_TYPE_TENSOR_MEM_D3D11_ALLOCATOR, nullptr));
  gst_object_ref_sink(self);
  self->device = GST_TENSOR_MEM_D3D11_DEVICE(gst_object_ref(device));
  return GST_ALLOCATOR_CAST(self);
}

/**
 * gst_tensor_mem_d3d11_has_texture_layout:
 * @info: a frame
 *
 * Whether one Direct3D 11 texture can hold a frame of @info (docs/d3d11.md:
 * RGBA, BGRA, BGRx, GRAY8, RGB, planar RGB, NV12, NV16, NV24; not the
 * three-plane YUV formats such as I420, which DXGI has no texture for).
 *
 * Returns: %TRUE when gst_tensor_mem_d3d11_allocator_alloc_video() has a layout
 *   for @info.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_d3d11_has_texture_layout(const GstVideoInfo *info) {
  g_return_val_if_fail(info != nullptr, FALSE);
  tensormem::PixelFormat format;
  return gst_tensor_mem_pixel_format_from_video_format(GST_VIDEO_INFO_FORMAT(info), &format) &&
         tensormem::image_d3d11_layout(format, tensormem::DType::U8,
                                       static_cast<std::uint32_t>(GST_VIDEO_INFO_WIDTH(info)),
                                       static_cast<std::uint32_t>(GST_VIDEO_INFO_HEIGHT(info)))
             .has_value();
}

/**
 * gst_tensor_mem_d3d11_allocator_alloc_video:
 * @allocator: a #GstTensorMemD3D11Allocator
 * @info: the frame the texture holds
 *
 * A new shared texture for one frame of @info (layouts in docs/d3d11.md:
 * RGBA, BGRA, BGRx, GRAY8, RGB, planar RGB and the semi-planar NV12/NV16/NV24
 * as one combined R8 texture), with a staging texture for CPU reads and
 * writes. The memory is the staging layout: texture rows at the backing
 * pitch (gst_tensor_mem_d3d11_memory_get_plane_layout() gives the planes).
 *
 * Returns: (transfer full) (nullable): the memory, or %NULL after a warning
 * (a format without a texture layout, or the device refused).
 *
 * Since: 0.1
 */
GstMemory *gst_tensor_mem_d3d11_allocator_alloc_video(GstAllocator *allocator, const GstVideoInfo *info) {
  g_return_val_if_fail(GST_IS_TENSOR_MEM_D3D11_ALLOCATOR(allocator), nullptr);
  g_return_val_if_fail(info != nullptr, nullptr);
  tensormem::PixelFormat format;
  if (!gst_tensor_mem_pixel_format_from_video_format(GST_VIDEO_INFO_FORMAT(info), &format)) {
    GST_WARNING_OBJECT(allocator, "%s has no D3D11 texture layout", GST_VIDEO_INFO_NAME(info));
    return nullptr;
  }
  auto context = gst_tensor_mem_d3d11_device_get_d3d11_context(GST_TENSOR_MEM_D3D11_ALLOCATOR_CAST(allocator)->device);
  auto storage = tensormem::D3d11TextureStorage::allocate_image(
      std::move(context), format, tensormem::DType::U8, static_cast<std::uint32_t>(GST_VIDEO_INFO_WIDTH(info)),
      static_cast<std::uint32_t>(GST_VIDEO_INFO_HEIGHT(info)), tensormem::CpuAccess::ReadWrite);
  if (!storage) {
    GST_WARNING_OBJECT(allocator, "%s %dx%d texture: %s", GST_VIDEO_INFO_NAME(info), GST_VIDEO_INFO_WIDTH(info),
                       GST_VIDEO_INFO_HEIGHT(info), storage.error().message().c_str());
    return nullptr;
  }
  GST_LOG_OBJECT(allocator, "%s %dx%d texture, pitch %zu, %zu bytes", GST_VIDEO_INFO_NAME(info),
                 GST_VIDEO_INFO_WIDTH(info), GST_VIDEO_INFO_HEIGHT(info), (*storage)->backing_pitch(),
                 (*storage)->size_bytes());
  return memory_over(allocator, std::move(*storage));
}

/**
 * gst_tensor_mem_d3d11_memory_get_plane_layout:
 * @mem: a D3D11 tensor #GstMemory from gst_tensor_mem_d3d11_allocator_alloc_video()
 * @info: the frame it was allocated for
 * @offset: (out caller-allocates) (array fixed-size=4): the byte offset of
 *   each plane (%GST_VIDEO_MAX_PLANES entries)
 * @stride: (out caller-allocates) (array fixed-size=4): the stride of each
 *   plane
 *
 * Every plane's stride is the backing pitch; the planes follow each other in
 * texture rows (NV12: the chroma plane at pitch × height).
 *
 * Returns: %TRUE when @mem holds @info's planes at the pitch.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_d3d11_memory_get_plane_layout(GstMemory *mem, const GstVideoInfo *info,
                                                      gsize offset[GST_VIDEO_MAX_PLANES],
                                                      gint stride[GST_VIDEO_MAX_PLANES]) {
  g_return_val_if_fail(gst_is_tensor_mem_d3d11_memory(mem), FALSE);
  g_return_val_if_fail(info != nullptr, FALSE);
  auto storage = gst_tensor_mem_d3d11_memory_get_storage(mem);
  const gsize pitch = storage->backing_pitch();
  if (pitch > static_cast<gsize>(G_MAXINT))
    return FALSE;
  gsize rows = 0;
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(info); ++p) {
    gint comp[GST_VIDEO_MAX_COMPONENTS];
    gst_video_format_info_component(info->finfo, p, comp);
    const gsize row_bytes = static_cast<gsize>(GST_VIDEO_INFO_COMP_PSTRIDE(info, comp[0])) *
                            static_cast<gsize>(GST_VIDEO_INFO_COMP_WIDTH(info, comp[0]));
    const gsize plane_rows = static_cast<gsize>(GST_VIDEO_INFO_COMP_HEIGHT(info, comp[0]));
    gsize start, end, total_rows;
    if (row_bytes > pitch || __builtin_mul_overflow(rows, pitch, &start) ||
        __builtin_add_overflow(rows, plane_rows, &total_rows) || __builtin_mul_overflow(total_rows, pitch, &end) ||
        end > mem->size) {
      GST_WARNING("plane %u of %s (%" G_GSIZE_FORMAT " bytes × %" G_GSIZE_FORMAT " rows) does not fit %" G_GSIZE_FORMAT
                  "-byte rows of a %" G_GSIZE_FORMAT "-byte texture memory",
                  p, GST_VIDEO_INFO_NAME(info), row_bytes, plane_rows, pitch, mem->size);
      return FALSE;
    }
    offset[p] = start;
    stride[p] = static_cast<gint>(pitch);
    rows = total_rows;
  }
  return TRUE;
}

/**
 * gst_buffer_fence_tensor_mem_d3d11_writes:
 * @buffer: a buffer just written (through CPU maps) into D3D11 memory
 * @error: (out) (optional): where to put the reason on failure
 *
 * Signals the next value of the process fence behind the writes queued on
 * the device (the publishes of the staging textures), records it as each
 * texture storage's GPU write, and attaches it to @buffer as a
 * #GstTensorMemFenceMeta of kind %GST_TENSOR_MEM_FENCE_KIND_D3D11_FENCE.
 * Buffers without D3D11 memory, and devices without a fence, get nothing.
 *
 * Returns: %FALSE with @error set when the signal or the meta failed.
 *
 * Since: 0.1
 */
gboolean gst_buffer_fence_tensor_mem_d3d11_writes(GstBuffer *buffer, GError **error) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), FALSE);
  GstTensorMemD3D11Device *device = nullptr;
  for (guint i = 0; i < gst_buffer_n_memory(buffer) && !device; ++i) {
    GstMemory *mem = gst_buffer_peek_memory(buffer, i);
    if (gst_is_tensor_mem_d3d11_memory(mem))
      device = gst_tensor_mem_d3d11_memory_get_device(mem);
  }
  if (!device)
    return TRUE;
  auto timeline = gst_tensor_mem_d3d11_device_get_fence_timeline(device);
  if (!timeline)
    return TRUE;
  auto value = timeline->issue();
  if (!value) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED, "signalling the D3D11 fence: %s",
                value.error().message().c_str());
    return FALSE;
  }
  for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i) {
    auto storage = gst_tensor_mem_d3d11_memory_get_storage(gst_buffer_peek_memory(buffer, i));
    if (!storage)
      continue;
    if (tensormem::Result<void> recorded = storage->set_gpu_write(*value); !recorded) {
      g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED, "recording the D3D11 write: %s",
                  recorded.error().message().c_str());
      return FALSE;
    }
  }
  return gst_buffer_add_tensor_mem_fence_meta(buffer, std::move(timeline), *value, -1, error) != nullptr;
}

/**
 * gst_is_tensor_mem_d3d11_memory:
 * @mem: a #GstMemory
 *
 * Returns: %TRUE when @mem was made by a #GstTensorMemD3D11Allocator (shares
 * included).
 *
 * Since: 0.1
 */
gboolean gst_is_tensor_mem_d3d11_memory(GstMemory *mem) {
  return mem != nullptr && mem->allocator != nullptr && GST_IS_TENSOR_MEM_D3D11_ALLOCATOR(mem->allocator);
}

/**
 * gst_tensor_mem_d3d11_memory_get_device:
 * @mem: a D3D11 tensor #GstMemory
 *
 * Returns: (transfer none) (nullable): the device of @mem's texture, valid
 * while @mem is alive.
 *
 * Since: 0.1
 */
GstTensorMemD3D11Device *gst_tensor_mem_d3d11_memory_get_device(GstMemory *mem) {
  g_return_val_if_fail(gst_is_tensor_mem_d3d11_memory(mem), nullptr);
  return GST_TENSOR_MEM_D3D11_ALLOCATOR_CAST(mem->allocator)->device;
}

/**
 * gst_tensor_mem_d3d11_memory_get_tensor: (skip)
 * @mem: a #GstMemory
 *
 * C++ only. Like gst_tensor_mem_memory_get_tensor(), for D3D11 tensor memory: a
 * 1-D u8 tensor over the whole staging layout.
 *
 * Returns: (transfer none) (nullable): the tensor, or %NULL when @mem is not
 * D3D11 tensor memory.
 *
 * Since: 0.1
 */
const tensormem::Tensor *gst_tensor_mem_d3d11_memory_get_tensor(GstMemory *mem) {
  return gst_is_tensor_mem_d3d11_memory(mem) ? gst_tensor_mem_memory_get_tensor(mem) : nullptr;
}

/**
 * gst_tensor_mem_d3d11_memory_get_storage: (skip)
 * @mem: a #GstMemory
 *
 * C++ only.
 *
 * Returns: the texture storage behind @mem (a new reference), or an empty
 * pointer when @mem is not D3D11 tensor memory.
 *
 * Since: 0.1
 */
std::shared_ptr<tensormem::D3d11TextureStorage> gst_tensor_mem_d3d11_memory_get_storage(GstMemory *mem) {
  const tensormem::Tensor *tensor = gst_tensor_mem_d3d11_memory_get_tensor(mem);
  return tensor ? storage_of(*tensor) : nullptr;
}

/**
 * gst_tensor_mem_d3d11_memory_get_texture: (skip)
 * @mem: a #GstMemory
 *
 * C++ only.
 *
 * Returns: the texture behind @mem, or an empty pointer when @mem is not
 * D3D11 tensor memory.
 *
 * Since: 0.1
 */
std::shared_ptr<tensormem::D3d11Texture> gst_tensor_mem_d3d11_memory_get_texture(GstMemory *mem) {
  auto storage = gst_tensor_mem_d3d11_memory_get_storage(mem);
  return storage ? storage->texture() : nullptr;
}

/**
 * gst_tensor_mem_buffer_pool_new_for_d3d11:
 * @allocator: a #GstTensorMemD3D11Allocator (gst_tensor_mem_d3d11_allocator_new())
 *
 * A pool of video buffers in Direct3D 11 textures of @allocator's device:
 * one texture (with a staging texture for CPU reads and writes) per buffer,
 * a #GstVideoMeta whose every plane stride is the staging pitch and whose
 * planes follow each other in texture rows (NV12: chroma at pitch × height).
 * The buffer size is the texture memory's (pitch × texture rows); read it
 * back from the config. Alignment options are ignored: the device decides
 * the pitch.
 *
 * Returns: (transfer full): a new #GstBufferPool.
 *
 * Since: 0.1
 */
GstBufferPool *gst_tensor_mem_buffer_pool_new_for_d3d11(GstAllocator *allocator) {
  g_return_val_if_fail(GST_IS_TENSOR_MEM_D3D11_ALLOCATOR(allocator), nullptr);
  return gst_tensormem::d3d11_buffer_pool_new(allocator);
}

/* ---- the D3D11 backend: the process device, shared through GstContext ---- */

namespace gst_tensormem {

namespace {
gboolean d3d11_ensure_device(GstElement *element, GstObject **slot, GError **error) {
  return gst_tensor_mem_d3d11_device_ensure(element, reinterpret_cast<GstTensorMemD3D11Device **>(slot), error);
}
gboolean d3d11_handle_set_context(GstElement *element, GstContext *context, GstObject **slot) {
  return gst_tensor_mem_d3d11_device_handle_set_context(element, context,
                                                        reinterpret_cast<GstTensorMemD3D11Device **>(slot));
}
gboolean d3d11_handle_context_query(GstElement *element, GstQuery *query, GstObject **slot) {
  return gst_tensor_mem_d3d11_device_handle_context_query(element, query,
                                                          reinterpret_cast<GstTensorMemD3D11Device **>(slot));
}
void d3d11_describe_device(GstElement *element, GstObject *device) {
  GST_INFO_OBJECT(element, "D3D11 device %" GST_PTR_FORMAT " (%s)", device,
                  gst_tensor_mem_d3d11_device_get_name(GST_TENSOR_MEM_D3D11_DEVICE(device)));
}
GstAllocator *d3d11_new_allocator(GstObject *device) {
  return device ? gst_tensor_mem_d3d11_allocator_new(GST_TENSOR_MEM_D3D11_DEVICE(device)) : nullptr;
}
/* Advertised with every format the other storages take (the template is
 * one for all), but DXGI has no texture for some (I420 and the other
 * three-plane YUV formats): refused by name, not left to fail in the pool as
 * a bare not-negotiated. */
gboolean d3d11_check_caps(GstElement *element, GstCaps *caps) {
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps) || gst_tensor_mem_d3d11_has_texture_layout(&info))
    return TRUE;
  GST_ELEMENT_ERROR(
      element, CORE, NEGOTIATION,
      ("storage=d3d11 has no Direct3D 11 texture for %s frames.", GST_VIDEO_INFO_NAME(&info)),
      ("textures hold RGBA, BGRA, BGRx, GRAY8, RGB, planar RGB, NV12, NV16 and NV24; put videoconvert "
       "before tensorupload (NV12 for YUV), or choose storage=system, dmabuf or pbo. Caps: %" GST_PTR_FORMAT,
       caps));
  return FALSE;
}
/* Every write into a texture is ordered by the process fence. */
gboolean d3d11_cpu_writes_need_fence(GstBuffer *) { return TRUE; }
/* A D3D11 fence meta on the buffer becomes the texture storage's recorded
 * write, whose counter the CUDA attachment shares: a CUDA map then waits for
 * it on the stream (through the imported fence semaphore), not on the CPU. */
void d3d11_prepare_cuda(GstBuffer *buffer, GstMemory *mem) {
  auto storage = gst_tensor_mem_d3d11_memory_get_storage(mem);
  if (!storage)
    return;
  gpointer state = nullptr;
  while (GstMeta *meta = gst_buffer_iterate_meta_filtered(buffer, &state, GST_TENSOR_MEM_FENCE_META_API_TYPE)) {
    auto *fence = reinterpret_cast<GstTensorMemFenceMeta *>(meta);
    if (fence->kind != GST_TENSOR_MEM_FENCE_KIND_D3D11_FENCE || fence->value == 0)
      continue;
    // The meta refused unissued values when it was added; this fails only
    // when the meta's timeline is another process fence than the storage's.
    if (tensormem::Result<void> recorded = storage->set_gpu_write(fence->value); !recorded)
      GST_WARNING("D3D11 fence %" G_GUINT64_FORMAT " not recorded on the texture: %s", fence->value,
                  recorded.error().message().c_str());
  }
}
} // namespace

const Backend &d3d11_backend() {
  static const Backend backend = {
      .storage = GST_TENSOR_MEM_STORAGE_D3D11,
      .memory_name = "D3D11",
      .caps_feature = GST_CAPS_FEATURE_MEMORY_TENSOR_D3D11,
      .kind = tensormem::StorageKind::D3d11,
      // The bound textures had before the table held it: system memory's.
      .max_align_mask = tensormem::MemStorage::kAlignment - 1,
      .ensure_device = d3d11_ensure_device,
      .handle_set_context = d3d11_handle_set_context,
      .handle_context_query = d3d11_handle_context_query,
      .device_at_ready = true,
      .device_error = GST_RESOURCE_ERROR_NOT_FOUND,
      .device_failure = "storage=d3d11: %s. Outside Windows, set TENSORMEM_D3D11_DEVICE=software in the environment "
                        "to use the software reference device, or choose storage=system, dmabuf or pbo.",
      .describe_device = d3d11_describe_device,
      .check_caps = d3d11_check_caps,
      .new_allocator = d3d11_new_allocator,
      .cpu_writes_need_fence = d3d11_cpu_writes_need_fence,
      .fence_writes = gst_buffer_fence_tensor_mem_d3d11_writes,
      .allocator_type = gst_tensor_mem_d3d11_allocator_get_type,
      .pool_type = gst_tensor_mem_d3d11_buffer_pool_get_type,
      .owns_memory = gst_is_tensor_mem_d3d11_memory,
      .new_pool = gst_tensor_mem_buffer_pool_new_for_d3d11,
      .new_window = gst_tensor_mem_base_memory_new_window,
      .prepare_cuda = d3d11_prepare_cuda,
  };
  return backend;
}

} // namespace gst_tensormem

/* The D3D11 family's pool. A texture's staging layout is the frame layout
 * (every plane stride is the backing pitch, planes follow in texture rows),
 * so GStreamer's alignment options do not apply, and the buffer size is the
 * texture memory's, learnt from one texture made at set_config. Fence and
 * reader recycling, counters and links stay in the shared base. */
struct GstTensorMemD3D11BufferPool {
  GstTensorMemBufferPool parent;
  GstAllocator *allocator; // a GstTensorMemD3D11Allocator (owned); NULL until known
  GstVideoInfo info;       // the frame every texture holds
};

struct GstTensorMemD3D11BufferPoolClass {
  GstTensorMemBufferPoolClass parent_class;
};

G_DEFINE_TYPE(GstTensorMemD3D11BufferPool, gst_tensor_mem_d3d11_buffer_pool, GST_TYPE_TENSOR_MEM_BUFFER_POOL)

static GstTensorMemD3D11BufferPool *d3d11_pool(GstBufferPool *pool) {
  return reinterpret_cast<GstTensorMemD3D11BufferPool *>(pool);
}

static gboolean gst_tensor_mem_d3d11_buffer_pool_set_config(GstBufferPool *pool, GstStructure *config) {
  GstTensorMemD3D11BufferPool *self = d3d11_pool(pool);
  GstCaps *caps = nullptr;
  guint size, min_buffers, max_buffers;
  GstVideoInfo info;
  if (!gst_buffer_pool_config_get_params(config, &caps, &size, &min_buffers, &max_buffers) || !caps ||
      !gst_tensor_mem_video_info_from_caps(&info, caps, nullptr)) {
    GST_WARNING_OBJECT(pool, "config without raw video caps: %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  GstAllocator *allocator = nullptr;
  GstAllocationParams params;
  gst_buffer_pool_config_get_allocator(config, &allocator, &params);
  if (params.align > gst_tensormem::max_align_mask(GST_TENSOR_MEM_STORAGE_D3D11)) {
    GST_WARNING_OBJECT(pool, "alignment mask %" G_GSIZE_FORMAT " exceeds the alignment of D3D11 tensor memory",
                       params.align);
    return FALSE;
  }
  params.align |= GST_TENSOR_MEM_BUFFER_POOL_STRIDE_ALIGN - 1;
  if (!gst_tensormem::pool_force_device_allocator(pool, config, allocator, &params, GST_TYPE_TENSOR_MEM_D3D11_ALLOCATOR,
                                                  &self->allocator, "D3D11"))
    return FALSE;
  GstMemory *probe = gst_tensor_mem_d3d11_allocator_alloc_video(self->allocator, &info);
  if (!probe) {
    GST_WARNING_OBJECT(pool, "no D3D11 texture for %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  gsize offset[GST_VIDEO_MAX_PLANES];
  gint stride[GST_VIDEO_MAX_PLANES];
  const gboolean fits = gst_tensor_mem_d3d11_memory_get_plane_layout(probe, &info, offset, stride);
  const gsize bytes = probe->size;
  gst_memory_unref(probe);
  if (!fits || bytes > G_MAXUINT) {
    GST_WARNING_OBJECT(pool, "%" GST_PTR_FORMAT " does not fit a D3D11 texture of %" G_GSIZE_FORMAT " bytes", caps,
                       bytes);
    return FALSE;
  }
  self->info = info;
  gst_tensormem::pool_read_fence_config(pool, config);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_buffer_pool_config_set_params(config, caps, static_cast<guint>(bytes), min_buffers, max_buffers);
  GST_DEBUG_OBJECT(pool, "%" GST_PTR_FORMAT ": D3D11 textures, pitch %d, %" G_GSIZE_FORMAT " bytes per buffer", caps,
                   stride[0], bytes);
  return gst_tensormem::pool_set_config_unaligned(pool, config);
}

/* One texture per buffer, its video meta carrying the staging layout. */
static GstFlowReturn gst_tensor_mem_d3d11_buffer_pool_alloc_buffer(GstBufferPool *pool, GstBuffer **buffer,
                                                                   GstBufferPoolAcquireParams *) {
  GstTensorMemD3D11BufferPool *self = d3d11_pool(pool);
  const GstVideoInfo *info = &self->info;
  GstMemory *mem = gst_tensor_mem_d3d11_allocator_alloc_video(self->allocator, info);
  if (!mem)
    return GST_FLOW_ERROR;
  gsize offset[GST_VIDEO_MAX_PLANES];
  gint stride[GST_VIDEO_MAX_PLANES];
  if (!gst_tensor_mem_d3d11_memory_get_plane_layout(mem, info, offset, stride)) {
    gst_memory_unref(mem);
    return GST_FLOW_ERROR;
  }
  *buffer = gst_buffer_new();
  gst_buffer_append_memory(*buffer, mem);
  gst_buffer_add_video_meta_full(*buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(info),
                                 GST_VIDEO_INFO_WIDTH(info), GST_VIDEO_INFO_HEIGHT(info), GST_VIDEO_INFO_N_PLANES(info),
                                 offset, stride);
  return gst_tensormem::pool_adopt_buffer(pool, buffer);
}

static void gst_tensor_mem_d3d11_buffer_pool_dispose(GObject *object) {
  gst_clear_object(&d3d11_pool(GST_BUFFER_POOL_CAST(object))->allocator);
  G_OBJECT_CLASS(gst_tensor_mem_d3d11_buffer_pool_parent_class)->dispose(object);
}

static void gst_tensor_mem_d3d11_buffer_pool_class_init(GstTensorMemD3D11BufferPoolClass *klass) {
  G_OBJECT_CLASS(klass)->dispose = gst_tensor_mem_d3d11_buffer_pool_dispose;
  GST_BUFFER_POOL_CLASS(klass)->set_config = gst_tensor_mem_d3d11_buffer_pool_set_config;
  GST_BUFFER_POOL_CLASS(klass)->alloc_buffer = gst_tensor_mem_d3d11_buffer_pool_alloc_buffer;
}

static void gst_tensor_mem_d3d11_buffer_pool_init(GstTensorMemD3D11BufferPool *self) {
  gst_video_info_init(&self->info);
}

namespace gst_tensormem {

GstBufferPool *d3d11_buffer_pool_new(GstAllocator *allocator) {
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new_for_storage(GST_TENSOR_MEM_STORAGE_D3D11);
  d3d11_pool(pool)->allocator = GST_ALLOCATOR_CAST(gst_object_ref(allocator));
  return pool;
}

} // namespace gst_tensormem

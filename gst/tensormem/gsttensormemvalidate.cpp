// SPDX-License-Identifier: Apache-2.0
/**
 * SECTION:gsttensormemvalidate
 * @title: Frame validation
 * @short_description: one check of caps and buffers before any byte is read
 *
 * Every element that reads a frame validates each incoming buffer once,
 * through gst_tensor_mem_validate_buffer(), before it maps or copies a byte,
 * and parses its caps through gst_tensor_mem_video_info_from_caps(). The
 * checks are the ones a reader would otherwise trip over as an out-of-bounds
 * read, a wrapped size or a SIGBUS:
 *
 * - caps: raw video (`video/x-raw`) of a known format, positive width and
 *   height, and a frame whose size fits GStreamer's sizes (checked
 *   arithmetic; a wrapped width × height is refused, never used);
 * - a buffer of at least one byte;
 * - every file-descriptor memory (DMA-BUF, memfd): its maxsize against the
 *   real size of its fd (fstat(), or lseek(SEEK_END) for a DMA-BUF), since a
 *   CPU read past the end of a shorter file raises SIGBUS;
 * - without a #GstVideoMeta: the buffer holds the default layout's bytes;
 * - with one: the meta's format, width, height and number of planes are the
 *   caps', and for every plane the stride is not negative, covers a row, and
 *   offset + (rows - 1) × stride + row does not overflow and ends inside the
 *   one memory that holds the plane's first byte (gst_video_frame_map() maps
 *   only that memory); tiled formats are refused (their strides count tiles).
 *   Palette planes and packed sub-byte formats (v210, …) take their row from
 *   the caps' default layout.
 *
 * Each error is a #GError naming the field and the numbers (for buffers
 * %GST_STREAM_ERROR_FORMAT, %GST_RESOURCE_ERROR_READ when an fd cannot be
 * examined; for caps %GST_CORE_ERROR_NEGOTIATION). Elements post it with
 * gst_tensor_mem_element_validate_buffer() and
 * gst_tensor_mem_element_video_info_from_caps().
 *
 * Since: 0.1
 */
#include "gsttensormemvalidate.h"

#include <gst/allocators/gstdmabuf.h>
#include <gst/allocators/gstfdmemory.h>
#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensormemconfig.h>

#include <cerrno>
#include <cstdarg>

#include <sys/stat.h>
#include <unistd.h>

namespace {

/* The bytes a plane's rows cover: `rows` rows of which each but the last
 * is one stride long and the last `row` bytes (picture only, no padding). */
struct PlaneShape {
  gsize row = 0;
  guint rows = 0;
};

/* The shape of `plane` of a width × height frame, or FALSE when a row does
 * not fit a gsize. Planes that GStreamer lays out by rules of its own — a
 * palette (no component in the plane) or packed pixels that do not fill
 * whole bytes (v210, IYU1, …: a pixel stride of 0) — take their row and row
 * count from `defaults`, the caps' default layout, and are empty without it. */
gboolean plane_shape(const GstVideoFormatInfo *finfo, guint plane, guint width, guint height,
                     const GstVideoInfo *defaults, PlaneShape *shape) {
  gint comp[GST_VIDEO_MAX_COMPONENTS];
  gst_video_format_info_component(finfo, plane, comp);
  // A palette (plane 1 of RGB8P) reports a component, yet holds 256 entries, not rows of pixels.
  const bool palette = GST_VIDEO_FORMAT_INFO_HAS_PALETTE(finfo) && plane == 1;
  if (palette)
    comp[0] = -1;
  const gint pstride = comp[0] >= 0 ? GST_VIDEO_FORMAT_INFO_PSTRIDE(finfo, comp[0]) : 0;
  if (pstride > 0) {
    shape->rows = GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT(finfo, comp[0], height);
    const guint pixels = GST_VIDEO_FORMAT_INFO_SCALE_WIDTH(finfo, comp[0], width);
    return g_size_checked_mul(&shape->row, pixels, static_cast<gsize>(pstride));
  }
  *shape = PlaneShape{};
  if (!defaults || GST_VIDEO_INFO_PLANE_STRIDE(defaults, plane) <= 0)
    return TRUE;
  shape->row = static_cast<gsize>(GST_VIDEO_INFO_PLANE_STRIDE(defaults, plane));
  if (comp[0] >= 0) {
    shape->rows = GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT(finfo, comp[0], height);
  } else {
    const guint n = GST_VIDEO_INFO_N_PLANES(defaults);
    const gsize end = plane + 1 < n ? GST_VIDEO_INFO_PLANE_OFFSET(defaults, plane + 1) : GST_VIDEO_INFO_SIZE(defaults);
    shape->rows = static_cast<guint>((end - GST_VIDEO_INFO_PLANE_OFFSET(defaults, plane)) / shape->row);
  }
  return TRUE;
}

/* The real size of the file behind `fd`: st_size for a regular file (memfd)
 * or a DMA-BUF that reports it, else lseek(SEEK_END) (DMA-BUF answers it;
 * its file position means nothing). FALSE with `*known` FALSE when the fd
 * has no size (a pipe, a socket): mapping it fails cleanly, so there is
 * nothing to refuse here. FALSE with errno set when fstat() fails. */
gboolean fd_size(gint fd, guint64 *size, gboolean *known) {
  *known = FALSE;
  struct stat st;
  if (fstat(fd, &st) != 0)
    return FALSE;
  if (S_ISREG(st.st_mode) || st.st_size > 0) {
    *size = static_cast<guint64>(st.st_size);
    *known = TRUE;
    return TRUE;
  }
  const off_t here = lseek(fd, 0, SEEK_CUR);
  const off_t end = lseek(fd, 0, SEEK_END);
  if (end < 0)
    return TRUE;
  if (here >= 0)
    lseek(fd, here, SEEK_SET);
  *size = static_cast<guint64>(end);
  *known = TRUE;
  return TRUE;
}

/* Every fd-backed memory of `buffer` against the file behind it. A
 * GstFdMemory maps maxsize bytes from file offset 0, so maxsize is what must
 * fit. */
gboolean check_fd_memories(GstBuffer *buffer, GError **error) {
  const guint n = gst_buffer_n_memory(buffer);
  for (guint i = 0; i < n; ++i) {
    GstMemory *mem = gst_buffer_peek_memory(buffer, i);
    guint64 size = 0;
    gboolean known = FALSE;
    /* Our own memory (the commonest here, checked at every element for
     * every buffer): the family says what is behind it. System memory is a
     * heap block with no fd; a DMA-BUF storage measured its fd once, when it
     * was allocated or imported, and maps exactly that many bytes: compare
     * with that instead of asking the kernel. */
    const gst_tensormem::Backend *family = gst_tensormem::backend_of_memory(mem);
    if (family && family->fd_bytes && family->fd_bytes(mem, &size)) {
      if (size == 0)
        continue;
      known = TRUE;
    } else if (!gst_is_fd_memory(mem)) {
      continue;
    } else if (!fd_size(gst_fd_memory_get_fd(mem), &size, &known)) {
      const int err = errno;
      g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ,
                  "Memory %u of the buffer: fstat on its fd %d failed (%s), so its size cannot be checked.", i,
                  gst_fd_memory_get_fd(mem), g_strerror(err));
      return FALSE;
    }
    if (known && static_cast<guint64>(mem->maxsize) > size) {
      g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                  "Memory %u of the buffer (fd %d) claims maxsize %" G_GSIZE_FORMAT " (offset %" G_GSIZE_FORMAT
                  ", size %" G_GSIZE_FORMAT "), which exceeds the %" G_GUINT64_FORMAT
                  "-byte %s behind it: a read past its end would raise SIGBUS.",
                  i, gst_fd_memory_get_fd(mem), mem->maxsize, mem->offset, mem->size, size,
                  gst_is_dmabuf_memory(mem) ? "DMA-BUF" : "file");
      return FALSE;
    }
  }
  return TRUE;
}

/* `buffer_size`: the buffer's size, measured once by the caller for every check. */
gboolean check_default_layout(gsize buffer_size, const GstVideoInfo *info, GError **error) {
  if (buffer_size < GST_VIDEO_INFO_SIZE(info)) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "The buffer size %" G_GSIZE_FORMAT " is smaller than the %" G_GSIZE_FORMAT
                "-byte %dx%d %s frame the caps describe (and there is no GstVideoMeta).",
                buffer_size, GST_VIDEO_INFO_SIZE(info), GST_VIDEO_INFO_WIDTH(info), GST_VIDEO_INFO_HEIGHT(info),
                GST_VIDEO_INFO_NAME(info));
    return FALSE;
  }
  return TRUE;
}

/* The meta describes the caps' frame: same format, size and plane count. */
gboolean check_meta_matches_caps(const GstVideoMeta *meta, const GstVideoInfo *info, GError **error) {
  const char *caps_format = GST_VIDEO_INFO_NAME(info);
  if (meta->format != GST_VIDEO_INFO_FORMAT(info)) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "GstVideoMeta format = %s does not match the caps' format %s.",
                gst_video_format_to_string(meta->format), caps_format);
    return FALSE;
  }
  if (meta->width != static_cast<guint>(GST_VIDEO_INFO_WIDTH(info)) ||
      meta->height != static_cast<guint>(GST_VIDEO_INFO_HEIGHT(info))) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "GstVideoMeta width = %u, height = %u do not match the caps' %dx%d %s frame.", meta->width,
                meta->height, GST_VIDEO_INFO_WIDTH(info), GST_VIDEO_INFO_HEIGHT(info), caps_format);
    return FALSE;
  }
  if (meta->n_planes != GST_VIDEO_INFO_N_PLANES(info)) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "GstVideoMeta n_planes = %u, but the caps' format %s has %u plane(s).", meta->n_planes, caps_format,
                GST_VIDEO_INFO_N_PLANES(info));
    return FALSE;
  }
  if (GST_VIDEO_FORMAT_INFO_IS_TILED(info->finfo)) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "GstVideoMeta of the tiled format %s: its strides count tiles, and tiled layouts are not read here.",
                caps_format);
    return FALSE;
  }
  return TRUE;
}

/* Plane `p` of the meta: stride, extent and placement inside one memory. */
gboolean check_meta_plane(GstBuffer *buffer, gsize buffer_size, const GstVideoMeta *meta, const GstVideoInfo *info,
                          guint p, GError **error) {
  const char *format = GST_VIDEO_INFO_NAME(info);
  const gint stride = meta->stride[p];
  const gsize offset = meta->offset[p];
  PlaneShape shape;
  if (!plane_shape(info->finfo, p, meta->width, GST_VIDEO_INFO_FIELD_HEIGHT(info), info, &shape)) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "GstVideoMeta width = %u: a row of plane %u of %s overflows a %u-bit size.", meta->width, p, format,
                static_cast<guint>(8 * sizeof(gsize)));
    return FALSE;
  }
  const gsize row = shape.row;
  const guint rows = shape.rows;
  if (stride < 0) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "GstVideoMeta stride[%u] = %d is negative (plane %u of %s, width %u).", p, stride, p, format,
                meta->width);
    return FALSE;
  }
  if (static_cast<gsize>(stride) < row) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "GstVideoMeta stride[%u] = %d is smaller than the %" G_GSIZE_FORMAT
                "-byte row of plane %u (%s, width %u).",
                p, stride, row, p, format, meta->width);
    return FALSE;
  }
  if (rows == 0)
    return TRUE;
  // (rows - 1) strides to the last row, plus that row.
  gsize span = 0, end = 0;
  if (!g_size_checked_mul(&span, static_cast<gsize>(stride), static_cast<gsize>(rows - 1)) ||
      !g_size_checked_add(&span, span, row)) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "GstVideoMeta stride[%u] = %d times %u rows of plane %u overflows a %u-bit size.", p, stride, rows, p,
                static_cast<guint>(8 * sizeof(gsize)));
    return FALSE;
  }
  if (!g_size_checked_add(&end, offset, span)) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "GstVideoMeta offset[%u] = %" G_GSIZE_FORMAT " plus the %" G_GSIZE_FORMAT
                " bytes of plane %u (stride[%u] = %d, %u rows of %" G_GSIZE_FORMAT " bytes) overflows a %u-bit size.",
                p, offset, span, p, p, stride, rows, row, static_cast<guint>(8 * sizeof(gsize)));
    return FALSE;
  }
  if (end > buffer_size) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "GstVideoMeta plane %u (offset[%u] = %" G_GSIZE_FORMAT ", stride[%u] = %d, %u rows of %" G_GSIZE_FORMAT
                " bytes) ends at byte %" G_GSIZE_FORMAT ", past the end of the %" G_GSIZE_FORMAT "-byte buffer.",
                p, p, offset, p, stride, rows, row, end, buffer_size);
    return FALSE;
  }
  // gst_video_frame_map() maps only the memory holding the plane's first byte.
  guint idx = 0, length = 0;
  gsize skip = 0;
  if (!gst_buffer_find_memory(buffer, offset, 1, &idx, &length, &skip))
    return TRUE; // unreachable: end <= buffer_size and row > 0 put offset inside the buffer
  const gsize mem_start = offset - skip;
  const gsize mem_end = mem_start + gst_buffer_peek_memory(buffer, idx)->size;
  if (end > mem_end) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "GstVideoMeta plane %u (offset[%u] = %" G_GSIZE_FORMAT ", stride[%u] = %d, %u rows of %" G_GSIZE_FORMAT
                " bytes) ends at byte %" G_GSIZE_FORMAT ", past the end of memory %u (bytes %" G_GSIZE_FORMAT
                " to %" G_GSIZE_FORMAT " of the buffer) that holds its first byte; a plane must lie in one memory.",
                p, p, offset, p, stride, rows, row, end, idx, mem_start, mem_end);
    return FALSE;
  }
  return TRUE;
}

/* The meta places every plane where the caps' default layout does. */
bool meta_is_default_layout(const GstVideoMeta *meta, const GstVideoInfo *info) {
  for (guint p = 0; p < meta->n_planes; ++p) {
    if (meta->offset[p] != GST_VIDEO_INFO_PLANE_OFFSET(info, p) ||
        meta->stride[p] != GST_VIDEO_INFO_PLANE_STRIDE(info, p))
      return false;
  }
  return true;
}

gboolean check_meta_layout(GstBuffer *buffer, gsize buffer_size, const GstVideoMeta *meta, const GstVideoInfo *info,
                           GError **error) {
  if (!check_meta_matches_caps(meta, info, error))
    return FALSE;
  /* The commonest buffer (a pool's: one memory, the caps' own layout, the
   * whole frame): the default layout's planes lie inside the frame's size,
   * so they lie inside this memory. Anything else, a short buffer included,
   * is checked plane by plane, which names the plane that does not fit. */
  if (gst_buffer_n_memory(buffer) == 1 && buffer_size >= GST_VIDEO_INFO_SIZE(info) &&
      meta_is_default_layout(meta, info))
    return TRUE;
  for (guint p = 0; p < meta->n_planes; ++p) {
    if (!check_meta_plane(buffer, buffer_size, meta, info, p, error))
      return FALSE;
  }
  return TRUE;
}

/* A frame of `finfo` at width × height in the tightest layout, in bytes;
 * FALSE when it overflows a gsize or a row overflows a gint (GstVideoMeta's
 * stride type). Planes GStreamer lays out by its own rules (palettes, packed
 * sub-byte pixels) count as 0 here. */
gboolean tight_frame_size(const GstVideoFormatInfo *finfo, guint width, guint height, gsize *size) {
  *size = 0;
  for (guint p = 0; p < GST_VIDEO_FORMAT_INFO_N_PLANES(finfo); ++p) {
    PlaneShape shape;
    gsize bytes = 0;
    if (!plane_shape(finfo, p, width, height, nullptr, &shape) || shape.row > static_cast<gsize>(G_MAXINT) ||
        !g_size_checked_mul(&bytes, shape.row, shape.rows) || !g_size_checked_add(size, *size, bytes))
      return FALSE;
  }
  return TRUE;
}

void set_caps_error(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);
void set_caps_error(GError **error, const char *format, ...) {
  va_list args;
  va_start(args, format);
  gchar *text = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error_literal(error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION, text);
  g_free(text);
}

#if GST_TENSOR_MEM_HAVE_DMA_DRM
/* Fixed DMA_DRM caps as the ordinary caps of the same frame (new reference),
 * or NULL after setting `error`: only a linear modifier lays a frame out as
 * the rows GstVideoInfo describes, so a tiled or compressed one is refused by
 * name rather than read as garbled rows. */
GstCaps *linear_caps_of_dma_drm(const GstCaps *caps, GError **error) {
  const char *drm_format = gst_structure_get_string(gst_caps_get_structure(caps, 0), "drm-format");
  if (!drm_format) {
    set_caps_error(error, "Caps format = DMA_DRM without a drm-format field: the DMA-BUF's DRM fourcc and modifier "
                          "are unknown.");
    return nullptr;
  }
  guint64 modifier = 0;
  const guint32 fourcc = gst_video_dma_drm_fourcc_from_string(drm_format, &modifier);
  if (fourcc == 0) {
    set_caps_error(error, "Caps field drm-format = %s is not a DRM fourcc[:modifier] GStreamer knows.", drm_format);
    return nullptr;
  }
  const GstVideoFormat format = gst_video_dma_drm_fourcc_to_format(fourcc);
  gchar *linear = gst_video_dma_drm_fourcc_to_string(fourcc, 0);
  if (modifier != 0) {
    set_caps_error(error,
                   "Caps field drm-format = %s: modifier 0x%016" G_GINT64_MODIFIER
                   "x is not linear, so the planes are tiled or compressed and reading them as rows would garble the "
                   "frame. Only linear DMA-BUFs can be read here: drm-format = %s (modifier 0); decode or convert "
                   "to a linear layout upstream.",
                   drm_format, modifier, linear);
    g_free(linear);
    return nullptr;
  }
  g_free(linear);
  if (format == GST_VIDEO_FORMAT_UNKNOWN) {
    set_caps_error(error, "Caps field drm-format = %s: the DRM fourcc has no GStreamer video format.", drm_format);
    return nullptr;
  }
  GstCaps *plain = gst_caps_copy(caps);
  GstStructure *s = gst_caps_get_structure(plain, 0);
  gst_structure_set(s, "format", G_TYPE_STRING, gst_video_format_to_string(format), nullptr);
  gst_structure_remove_field(s, "drm-format");
  return plain;
}
#endif

} // namespace

/**
 * gst_tensor_mem_video_info_from_caps:
 * @info: (out caller-allocates): the video info, filled on success
 * @caps: fixed caps
 * @error: (out) (optional): where the reason goes, in the
 *   %GST_CORE_ERROR_NEGOTIATION error
 *
 * gst_video_info_from_caps() for caps that must describe a frame a tensor
 * can hold, saying why when they do not: caps that are not `video/x-raw`, a
 * missing or unknown `format` (or `ENCODED`), a `width` or `height` that is
 * missing or not positive (GStreamer itself accepts a negative width and
 * wraps the frame size), or a frame whose size overflows (checked
 * arithmetic) or that GStreamer cannot lay out. Each message names the field
 * and its value.
 *
 * DMA_DRM caps (`format=DMA_DRM`, GStreamer 1.24 and later) describe the
 * frame of their `drm-format` when its modifier is linear (0); any other
 * modifier is refused with a message naming it, since a tiled or compressed
 * frame read as rows is garbage.
 *
 * Returns: %TRUE when @info describes the caps' frame.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_video_info_from_caps(GstVideoInfo *info, const GstCaps *caps, GError **error) {
  g_return_val_if_fail(info != nullptr, FALSE);
  g_return_val_if_fail(GST_IS_CAPS(caps), FALSE);
  if (gst_caps_is_any(caps) || gst_caps_is_empty(caps) || !gst_caps_is_fixed(caps)) {
    gchar *text = gst_caps_to_string(caps);
    set_caps_error(error, "Caps %s do not describe one frame (they are ANY, empty or not fixed).", text);
    g_free(text);
    return FALSE;
  }
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  if (!gst_structure_has_name(s, "video/x-raw")) {
    set_caps_error(error, "Caps of media type %s are not raw video (video/x-raw).", gst_structure_get_name(s));
    return FALSE;
  }
  const char *format_name = gst_structure_get_string(s, "format");
#if GST_TENSOR_MEM_HAVE_DMA_DRM
  if (format_name && g_str_equal(format_name, "DMA_DRM")) {
    GstCaps *plain = linear_caps_of_dma_drm(caps, error);
    const gboolean described = plain && gst_tensor_mem_video_info_from_caps(info, plain, error);
    if (plain)
      gst_caps_unref(plain);
    return described;
  }
#endif
  const GstVideoFormat format = format_name ? gst_video_format_from_string(format_name) : GST_VIDEO_FORMAT_UNKNOWN;
  if (format == GST_VIDEO_FORMAT_UNKNOWN || format == GST_VIDEO_FORMAT_ENCODED) {
    set_caps_error(error, "Caps field format = %s is not a raw video format GStreamer knows.",
                   format_name ? format_name : "(missing)");
    return FALSE;
  }
  gint width = 0, height = 0;
  if (!gst_structure_get_int(s, "width", &width) || !gst_structure_get_int(s, "height", &height)) {
    set_caps_error(error, "Caps field %s is missing or not an integer.",
                   gst_structure_get_int(s, "width", &width) ? "height" : "width");
    return FALSE;
  }
  if (width <= 0 || height <= 0) {
    set_caps_error(error, "Caps field %s = %d is not positive (width = %d, height = %d): no frame has that size.",
                   width <= 0 ? "width" : "height", width <= 0 ? width : height, width, height);
    return FALSE;
  }
  gsize tight = 0;
  if (!tight_frame_size(gst_video_format_get_info(format), static_cast<guint>(width), static_cast<guint>(height),
                        &tight)) {
    set_caps_error(error,
                   "Caps width = %d, height = %d: a %s frame of that size overflows (a row must fit %d bytes and "
                   "the frame a %u-bit size).",
                   width, height, format_name, G_MAXINT, static_cast<guint>(8 * sizeof(gsize)));
    return FALSE;
  }
  if (!gst_video_info_from_caps(info, caps)) {
    gchar *text = gst_caps_to_string(caps);
    set_caps_error(error,
                   "Caps width = %d, height = %d, format = %s (a frame of at least %" G_GSIZE_FORMAT
                   " bytes): GStreamer cannot lay out a frame of these caps (%s).",
                   width, height, format_name, tight, text);
    g_free(text);
    return FALSE;
  }
  return TRUE;
}

/**
 * gst_tensor_mem_validate_buffer:
 * @buffer: the incoming buffer
 * @info: the negotiated video info (from gst_tensor_mem_video_info_from_caps())
 * @error: (out) (optional): where the reason goes
 *
 * Checks, without mapping it, that @buffer holds the frame @info describes
 * and that reading it cannot run out of bounds or raise SIGBUS: each
 * fd-backed memory fits the file behind its fd, and the frame fits the
 * buffer (default layout) or every #GstVideoMeta plane fits its memory (see
 * the section description for each check). Call it once per buffer, before
 * the first map. The #GError names the field and the numbers:
 * %GST_STREAM_ERROR_FORMAT for a buffer that does not hold its frame,
 * %GST_RESOURCE_ERROR_READ for an fd that cannot be examined.
 *
 * Returns: %TRUE when every byte the frame's planes cover may be read.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_validate_buffer(GstBuffer *buffer, const GstVideoInfo *info, GError **error) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), FALSE);
  g_return_val_if_fail(info != nullptr && info->finfo != nullptr, FALSE);
  g_return_val_if_fail(GST_VIDEO_INFO_FORMAT(info) != GST_VIDEO_FORMAT_UNKNOWN, FALSE);
  const gsize buffer_size = gst_buffer_get_size(buffer);
  if (buffer_size == 0) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "The buffer size is 0 (%u memories): it holds none of the %" G_GSIZE_FORMAT
                " bytes of the %dx%d %s frame the caps describe.",
                gst_buffer_n_memory(buffer), GST_VIDEO_INFO_SIZE(info), GST_VIDEO_INFO_WIDTH(info),
                GST_VIDEO_INFO_HEIGHT(info), GST_VIDEO_INFO_NAME(info));
    return FALSE;
  }
  if (!check_fd_memories(buffer, error))
    return FALSE;
  const GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
  return meta ? check_meta_layout(buffer, buffer_size, meta, info, error)
              : check_default_layout(buffer_size, info, error);
}

/**
 * gst_tensor_mem_element_video_info_from_caps:
 * @element: the element negotiating
 * @info: (out caller-allocates): the video info, filled on success
 * @caps: the caps to parse
 *
 * gst_tensor_mem_video_info_from_caps() for a set_caps implementation: on
 * failure it posts the reason as a %GST_CORE_ERROR_NEGOTIATION element error
 * of @element (so the application reads why, not only upstream's
 * "not-negotiated") and returns %FALSE.
 *
 * Returns: %TRUE when @info describes @caps.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_element_video_info_from_caps(GstElement *element, GstVideoInfo *info, const GstCaps *caps) {
  g_return_val_if_fail(GST_IS_ELEMENT(element), FALSE);
  GError *error = nullptr;
  if (gst_tensor_mem_video_info_from_caps(info, caps, &error))
    return TRUE;
  gchar *debug = gst_info_strdup_printf("refused caps %" GST_PTR_FORMAT, caps);
  gst_element_message_full(element, GST_MESSAGE_ERROR, error->domain, error->code, g_strdup(error->message), debug,
                           __FILE__, GST_FUNCTION, __LINE__);
  g_error_free(error);
  return FALSE;
}

/**
 * gst_tensor_mem_element_validate_buffer:
 * @element: the element about to read @buffer
 * @buffer: the incoming buffer
 * @info: the negotiated video info
 *
 * gst_tensor_mem_validate_buffer() for a streaming-thread call site: on
 * failure it posts the reason as an element error of @element (the
 * #GError's domain and code; its message names the field and the numbers)
 * and returns %GST_FLOW_ERROR, which stops the pipeline.
 *
 * Returns: %GST_FLOW_OK when @buffer may be read, %GST_FLOW_ERROR otherwise.
 *
 * Since: 0.1
 */
GstFlowReturn gst_tensor_mem_element_validate_buffer(GstElement *element, GstBuffer *buffer, const GstVideoInfo *info) {
  g_return_val_if_fail(GST_IS_ELEMENT(element), GST_FLOW_ERROR);
  GError *error = nullptr;
  if (gst_tensor_mem_validate_buffer(buffer, info, &error))
    return GST_FLOW_OK;
  gchar *debug = gst_info_strdup_printf(
      "refused %" GST_PTR_FORMAT " for the caps' %dx%d %s frame of %" G_GSIZE_FORMAT " bytes", buffer,
      GST_VIDEO_INFO_WIDTH(info), GST_VIDEO_INFO_HEIGHT(info), GST_VIDEO_INFO_NAME(info), GST_VIDEO_INFO_SIZE(info));
  gst_element_message_full(element, GST_MESSAGE_ERROR, error->domain, error->code, g_strdup(error->message), debug,
                           __FILE__, GST_FUNCTION, __LINE__);
  g_error_free(error);
  return GST_FLOW_ERROR;
}

/**
 * gst_tensor_mem_validate_tensor_buffer:
 * @buffer: the incoming buffer
 * @tensor_bytes: the bytes of the one tensor its `other/tensors` caps describe
 *
 * The checks of gst_tensor_mem_validate_buffer() for a tensor instead of a
 * video frame: the buffer holds at least @tensor_bytes bytes, and every
 * DMA-BUF memory in it lies inside its fd (so nothing maps past a buffer's
 * end).
 *
 * Returns: %TRUE when @buffer may be read; %FALSE with @error naming the
 * numbers otherwise.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_validate_tensor_buffer(GstBuffer *buffer, guint64 tensor_bytes, GError **error) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), FALSE);
  const gsize size = gst_buffer_get_size(buffer);
  if (size == 0 || size < tensor_bytes) {
    g_set_error(error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                "The buffer holds %" G_GSIZE_FORMAT " bytes, the caps' tensor needs %" G_GUINT64_FORMAT ".", size,
                tensor_bytes);
    return FALSE;
  }
  return check_fd_memories(buffer, error);
}

/**
 * gst_tensor_mem_element_validate_tensor_buffer:
 * @element: the element about to read @buffer
 * @buffer: the incoming buffer
 * @tensor_bytes: the bytes of the caps' tensor
 *
 * gst_tensor_mem_validate_tensor_buffer() for a streaming-thread call site:
 * on failure an element error of @element and %GST_FLOW_ERROR.
 *
 * Returns: %GST_FLOW_OK when @buffer may be read, %GST_FLOW_ERROR otherwise.
 *
 * Since: 0.1
 */
GstFlowReturn gst_tensor_mem_element_validate_tensor_buffer(GstElement *element, GstBuffer *buffer,
                                                            guint64 tensor_bytes) {
  g_return_val_if_fail(GST_IS_ELEMENT(element), GST_FLOW_ERROR);
  GError *error = nullptr;
  if (gst_tensor_mem_validate_tensor_buffer(buffer, tensor_bytes, &error))
    return GST_FLOW_OK;
  gchar *debug = gst_info_strdup_printf(
      "refused %" GST_PTR_FORMAT " for the caps' tensor of %" G_GUINT64_FORMAT " bytes", buffer, tensor_bytes);
  gst_element_message_full(element, GST_MESSAGE_ERROR, error->domain, error->code, g_strdup(error->message), debug,
                           __FILE__, GST_FUNCTION, __LINE__);
  g_error_free(error);
  return GST_FLOW_ERROR;
}

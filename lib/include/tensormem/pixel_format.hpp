// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/types.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

namespace tensormem {

/// Image layouts a tensor can describe. The mapping to GstVideoFormat lives
/// in the GStreamer layer.
enum class PixelFormat : std::uint8_t {
  RGBA,
  BGRA,
  RGBx,
  BGRx,
  RGB,
  BGR,
  GRAY8,
  NV12,
  NV16,
  NV24,
  I420,
  RGBP, ///< planar RGB, three full-size 8-bit planes
};

inline constexpr std::size_t kMaxPlanes = 3;

struct PlaneGeometry {
  std::uint8_t bytes_per_sample; ///< bytes per (sub-sampled) pixel in this plane
  std::uint8_t x_shift;          ///< horizontal sub-sampling as a shift
  std::uint8_t y_shift;          ///< vertical sub-sampling as a shift
};

struct FormatInfo {
  PixelFormat format;
  const char *name;
  std::uint8_t n_planes;
  std::array<PlaneGeometry, kMaxPlanes> planes;
};

TENSORMEM_API const FormatInfo &format_info(PixelFormat format) noexcept;

/// Strides, offsets and total size of an image with every row padded to a
/// multiple of `stride_align` bytes (a power of two, 1 for tight rows). With
/// vertically sub-sampled chroma (NV12, I420) the luma plane has an even
/// number of rows, as GStreamer lays such frames out.
struct ImageLayout {
  PixelFormat format;
  std::uint32_t width;
  std::uint32_t height;
  std::uint8_t n_planes;
  std::array<std::size_t, kMaxPlanes> stride{};
  std::array<std::size_t, kMaxPlanes> offset{};
  std::array<std::size_t, kMaxPlanes> rows{};
  std::size_t size = 0;
};

/// Checked: zero width/height → InvalidSize(0); a non-power-of-two alignment
/// → InvalidArgument; arithmetic overflow → InvalidShape.
TENSORMEM_API Result<ImageLayout> image_layout(PixelFormat format, std::uint32_t width, std::uint32_t height,
                                               std::size_t stride_align);

} // namespace tensormem

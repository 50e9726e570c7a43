// SPDX-License-Identifier: Apache-2.0
#include <tensormem/pixel_format.hpp>

#include <algorithm>
#include <string>

namespace tensormem {
namespace {

constexpr PlaneGeometry kNone{0, 0, 0};

constexpr FormatInfo kFormats[] = {
    {PixelFormat::RGBA, "RGBA", 1, {{{4, 0, 0}, kNone, kNone}}},
    {PixelFormat::BGRA, "BGRA", 1, {{{4, 0, 0}, kNone, kNone}}},
    {PixelFormat::RGBx, "RGBx", 1, {{{4, 0, 0}, kNone, kNone}}},
    {PixelFormat::BGRx, "BGRx", 1, {{{4, 0, 0}, kNone, kNone}}},
    {PixelFormat::RGB, "RGB", 1, {{{3, 0, 0}, kNone, kNone}}},
    {PixelFormat::BGR, "BGR", 1, {{{3, 0, 0}, kNone, kNone}}},
    {PixelFormat::GRAY8, "GRAY8", 1, {{{1, 0, 0}, kNone, kNone}}},
    // Semi-planar: interleaved chroma pairs, two bytes per chroma sample.
    {PixelFormat::NV12, "NV12", 2, {{{1, 0, 0}, {2, 1, 1}, kNone}}},
    {PixelFormat::NV16, "NV16", 2, {{{1, 0, 0}, {2, 1, 0}, kNone}}},
    {PixelFormat::NV24, "NV24", 2, {{{1, 0, 0}, {2, 0, 0}, kNone}}},
    {PixelFormat::I420, "I420", 3, {{{1, 0, 0}, {1, 1, 1}, {1, 1, 1}}}},
    {PixelFormat::RGBP, "RGBP", 3, {{{1, 0, 0}, {1, 0, 0}, {1, 0, 0}}}},
};

static_assert(std::size(kFormats) == static_cast<std::size_t>(PixelFormat::RGBP) + 1);

std::size_t subsampled(std::uint32_t n, std::uint8_t shift) {
  return (static_cast<std::size_t>(n) + ((std::size_t{1} << shift) - 1)) >> shift;
}

} // namespace

const FormatInfo &format_info(PixelFormat format) noexcept { return kFormats[static_cast<std::size_t>(format)]; }

Result<ImageLayout> image_layout(PixelFormat format, std::uint32_t width, std::uint32_t height,
                                 std::size_t stride_align) {
  const FormatInfo &info = format_info(format);
  if (width == 0 || height == 0)
    return Error::invalid_size(0, std::string("image_layout: ") + info.name + " " + std::to_string(width) + "x" +
                                      std::to_string(height) + " has no pixels");
  if (stride_align == 0 || (stride_align & (stride_align - 1)) != 0)
    return Error::invalid_argument("image_layout: stride alignment " + std::to_string(stride_align) +
                                   " is not a power of two");

  ImageLayout layout{format, width, height, info.n_planes};
  // With vertically sub-sampled chroma, the luma plane is padded to a whole
  // number of chroma rows (an odd-height NV12 has an even number of luma
  // rows), which is where GStreamer puts the chroma plane too.
  std::uint8_t max_y_shift = 0;
  for (std::uint8_t p = 0; p < info.n_planes; ++p)
    max_y_shift = std::max(max_y_shift, info.planes[p].y_shift);
  std::size_t total = 0;
  for (std::uint8_t p = 0; p < info.n_planes; ++p) {
    const PlaneGeometry &g = info.planes[p];
    auto row = checked_mul(subsampled(width, g.x_shift), g.bytes_per_sample, "image_layout row bytes");
    if (!row)
      return std::move(row).error();
    std::size_t stride;
    if (__builtin_add_overflow(*row, stride_align - 1, &stride))
      return Error::invalid_shape("image_layout: row of " + std::to_string(*row) + " bytes overflows when aligned");
    stride &= ~(stride_align - 1);
    const std::size_t rows = p == 0 ? subsampled(height, max_y_shift) << max_y_shift : subsampled(height, g.y_shift);
    auto plane = checked_mul(stride, rows, "image_layout plane bytes");
    if (!plane)
      return std::move(plane).error();
    layout.stride[p] = stride;
    layout.rows[p] = rows;
    layout.offset[p] = total;
    if (__builtin_add_overflow(total, *plane, &total))
      return Error::invalid_shape("image_layout: total size overflows");
  }
  layout.size = total;
  return layout;
}

} // namespace tensormem

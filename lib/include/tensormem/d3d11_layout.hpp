// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/pixel_format.hpp>
#include <tensormem/types.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace tensormem {

/// DXGI_FORMAT values the D3D11 storage uses, numbered as DirectX-Headers'
/// dxgiformat.h numbers them (tests/lib/d3d11 checks them against that header
/// where it is installed).
enum class DxgiFormat : std::uint32_t {
  Unknown = 0,
  R32G32B32A32_Float = 2,
  R16G16B16A16_Float = 10,
  R8G8B8A8_Unorm = 28,
  R8G8_Unorm = 49,
  R32_Float = 41,
  R16_Float = 54,
  R8_Unorm = 61,
  B8G8R8A8_Unorm = 87,
  B8G8R8X8_Unorm = 88,
};

TENSORMEM_API const char *dxgi_format_name(DxgiFormat format) noexcept;
/// Bytes per texel of `format`; 0 for Unknown.
TENSORMEM_API std::size_t dxgi_format_bytes(DxgiFormat format) noexcept;

/// How an image of one pixel format and element type lives in one 2-D
/// texture. Semi-planar formats (NV12, NV16, NV24) are one R8 texture holding
/// the combined plane: the luma rows, then the chroma rows, all at the
/// texture's width (NV12 64×64 → a 64×96 texture; NV24 chroma line i is
/// 2·width bytes at combined row height + 2i).
struct TENSORMEM_API D3d11ImageLayout {
  PixelFormat format;
  DType dtype;
  std::uint32_t width;  ///< image width in pixels
  std::uint32_t height; ///< image height in pixels
  std::uint32_t texture_width;
  std::uint32_t texture_height;
  DxgiFormat dxgi_format;

  bool semi_planar() const noexcept;
  /// Texture width × bytes per texel: one texture row without padding.
  std::size_t tight_row_bytes() const noexcept;
  /// tight_row_bytes() × texture_height.
  std::size_t tight_bytes() const noexcept;
  /// The bytes a row of the image itself holds: width × dtype size for
  /// semi-planar formats (whose texture may be wider), else the tight row.
  std::size_t image_row_bytes() const noexcept;
  /// The same layout at a wider texture (semi-planar widening to a pitch).
  D3d11ImageLayout widened_to(std::uint32_t new_texture_width) const noexcept;
};

/// The texture layout of an image, or nullopt where no single texture holds
/// it (a format/dtype pair without a DXGI texel, zero or overflowing sizes).
TENSORMEM_API std::optional<D3d11ImageLayout> image_d3d11_layout(PixelFormat format, DType dtype, std::uint32_t width,
                                                                 std::uint32_t height) noexcept;

} // namespace tensormem

// SPDX-License-Identifier: Apache-2.0
//
// Image → texture layouts for the D3D11 storage, and their row quantities.
//
// Table (format, dtype → DXGI format, texture width × height):
//   RGBA/RGBx U8 → R8G8B8A8_Unorm, w × h;  BGRA U8 → B8G8R8A8_Unorm;
//   BGRx U8 → B8G8R8X8_Unorm;  RGBA F16/F32 → R16G16B16A16_Float/R32G32B32A32_Float
//   RGB/BGR U8 → R8_Unorm, 3w × h (one texel per channel byte); RGB F32 → R32_Float, 3w × h
//   GRAY8 U8/F16/F32 → R8_Unorm/R16_Float/R32_Float, w × h
//   RGBP U8/F16/F32 → R8_Unorm/R16_Float/R32_Float, w × 3h (three stacked planes)
//   NV12/NV16/NV24 U8 → R8_Unorm, even(w) × (h + chroma rows): NV12 h + ceil(h/2),
//     NV16 2h, NV24 3h (each 2w-byte NV24 chroma line spans two texture rows).
// Everything else (I420, other dtypes, zero or overflowing sizes) → nullopt.

#include <tensormem/d3d11_layout.hpp>

#include <limits>

namespace tensormem {

/// \brief The DXGI spelling of `format`.
const char *dxgi_format_name(DxgiFormat format) noexcept {
  switch (format) {
  case DxgiFormat::Unknown: return "DXGI_FORMAT_UNKNOWN";
  case DxgiFormat::R32G32B32A32_Float: return "DXGI_FORMAT_R32G32B32A32_FLOAT";
  case DxgiFormat::R16G16B16A16_Float: return "DXGI_FORMAT_R16G16B16A16_FLOAT";
  case DxgiFormat::R8G8B8A8_Unorm: return "DXGI_FORMAT_R8G8B8A8_UNORM";
  case DxgiFormat::R8G8_Unorm: return "DXGI_FORMAT_R8G8_UNORM";
  case DxgiFormat::R32_Float: return "DXGI_FORMAT_R32_FLOAT";
  case DxgiFormat::R16_Float: return "DXGI_FORMAT_R16_FLOAT";
  case DxgiFormat::R8_Unorm: return "DXGI_FORMAT_R8_UNORM";
  case DxgiFormat::B8G8R8A8_Unorm: return "DXGI_FORMAT_B8G8R8A8_UNORM";
  case DxgiFormat::B8G8R8X8_Unorm: return "DXGI_FORMAT_B8G8R8X8_UNORM";
  }
  return "DXGI_FORMAT_?";
}

/// \brief Bytes in one texel of `format` (0 for Unknown or a value outside the enum).
std::size_t dxgi_format_bytes(DxgiFormat format) noexcept {
  switch (format) {
  case DxgiFormat::Unknown: return 0;
  case DxgiFormat::R32G32B32A32_Float: return 16;
  case DxgiFormat::R16G16B16A16_Float: return 8;
  case DxgiFormat::R8G8B8A8_Unorm:
  case DxgiFormat::B8G8R8A8_Unorm:
  case DxgiFormat::B8G8R8X8_Unorm:
  case DxgiFormat::R32_Float: return 4;
  case DxgiFormat::R8G8_Unorm:
  case DxgiFormat::R16_Float: return 2;
  case DxgiFormat::R8_Unorm: return 1;
  }
  return 0;
}

/// \brief True for the formats held as one combined luma+chroma R8 texture.
bool D3d11ImageLayout::semi_planar() const noexcept {
  return format == PixelFormat::NV12 || format == PixelFormat::NV16 || format == PixelFormat::NV24;
}

/// \brief One texture row without padding (texture width × texel bytes).
std::size_t D3d11ImageLayout::tight_row_bytes() const noexcept {
  return static_cast<std::size_t>(texture_width) * dxgi_format_bytes(dxgi_format);
}

/// \brief The whole texture without row padding.
std::size_t D3d11ImageLayout::tight_bytes() const noexcept { return tight_row_bytes() * texture_height; }

/// \brief The bytes of one image row: the pixel width for semi-planar formats
/// (their texture may be widened past it), else the tight texture row.
std::size_t D3d11ImageLayout::image_row_bytes() const noexcept {
  if (semi_planar())
    return static_cast<std::size_t>(width) * dtype_size(dtype);
  return tight_row_bytes();
}

/// \brief A copy whose texture is `new_texture_width` texels wide.
D3d11ImageLayout D3d11ImageLayout::widened_to(std::uint32_t new_texture_width) const noexcept {
  D3d11ImageLayout wider = *this;
  wider.texture_width = new_texture_width;
  return wider;
}

namespace {

/// \brief The single-channel texel format for `dtype`, Unknown when none fits.
DxgiFormat single_channel(DType dtype) noexcept {
  switch (dtype) {
  case DType::U8: return DxgiFormat::R8_Unorm;
  case DType::F16: return DxgiFormat::R16_Float;
  case DType::F32: return DxgiFormat::R32_Float;
  default: return DxgiFormat::Unknown;
  }
}

struct Shape2 {
  DxgiFormat dxgi;
  std::uint64_t width_mul; ///< texture width = width × width_mul (rounded even when even_width)
  bool even_width;
  std::uint64_t rows; ///< texture height, computed from h
};

/// \brief The texel format and texture size for one (format, dtype) pair at
/// `h` rows, or Unknown where no single texture holds it.
Shape2 shape_for(PixelFormat format, DType dtype, std::uint64_t h) noexcept {
  const Shape2 none{DxgiFormat::Unknown, 0, false, 0};
  switch (format) {
  case PixelFormat::RGBA:
    if (dtype == DType::F16)
      return {DxgiFormat::R16G16B16A16_Float, 1, false, h};
    if (dtype == DType::F32)
      return {DxgiFormat::R32G32B32A32_Float, 1, false, h};
    [[fallthrough]];
  case PixelFormat::RGBx: return dtype == DType::U8 ? Shape2{DxgiFormat::R8G8B8A8_Unorm, 1, false, h} : none;
  case PixelFormat::BGRA: return dtype == DType::U8 ? Shape2{DxgiFormat::B8G8R8A8_Unorm, 1, false, h} : none;
  case PixelFormat::BGRx: return dtype == DType::U8 ? Shape2{DxgiFormat::B8G8R8X8_Unorm, 1, false, h} : none;
  case PixelFormat::RGB:
    if (dtype == DType::F32)
      return {DxgiFormat::R32_Float, 3, false, h};
    [[fallthrough]];
  case PixelFormat::BGR: return dtype == DType::U8 ? Shape2{DxgiFormat::R8_Unorm, 3, false, h} : none;
  case PixelFormat::GRAY8: return {single_channel(dtype), 1, false, h};
  case PixelFormat::RGBP: return {single_channel(dtype), 1, false, h * 3};
  case PixelFormat::NV12: return dtype == DType::U8 ? Shape2{DxgiFormat::R8_Unorm, 1, true, h + (h + 1) / 2} : none;
  case PixelFormat::NV16: return dtype == DType::U8 ? Shape2{DxgiFormat::R8_Unorm, 1, true, h * 2} : none;
  case PixelFormat::NV24: return dtype == DType::U8 ? Shape2{DxgiFormat::R8_Unorm, 1, true, h * 3} : none;
  case PixelFormat::I420: return none;
  }
  return none;
}

} // namespace

/// \brief The texture layout of a `width`×`height` image (see the table above).
std::optional<D3d11ImageLayout> image_d3d11_layout(PixelFormat format, DType dtype, std::uint32_t width,
                                                   std::uint32_t height) noexcept {
  if (width == 0 || height == 0)
    return std::nullopt;
  const Shape2 shape = shape_for(format, dtype, height);
  if (shape.dxgi == DxgiFormat::Unknown)
    return std::nullopt;
  std::uint64_t tex_w = static_cast<std::uint64_t>(width) * shape.width_mul; // ≤ 3·2^32: no 64-bit overflow
  if (shape.even_width)
    tex_w += tex_w & 1U;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint32_t>::max();
  if (tex_w > kMax || shape.rows > kMax)
    return std::nullopt;
  const auto row = checked_mul(static_cast<std::size_t>(tex_w), dxgi_format_bytes(shape.dxgi), "d3d11 texture row");
  if (!row)
    return std::nullopt;
  if (!checked_mul(*row, static_cast<std::size_t>(shape.rows), "d3d11 texture bytes"))
    return std::nullopt;
  return D3d11ImageLayout{
      format,    dtype, width, height, static_cast<std::uint32_t>(tex_w), static_cast<std::uint32_t>(shape.rows),
      shape.dxgi};
}

} // namespace tensormem

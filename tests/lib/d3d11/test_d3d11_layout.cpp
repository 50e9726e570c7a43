// SPDX-License-Identifier: Apache-2.0
// Image → texture layouts (the table in d3d11_layout.cpp) and the DXGI numbering.

#include <tensormem/d3d11_layout.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#if __has_include(<directx/dxgiformat.h>)
#include <directx/dxgiformat.h>
#define TM_HAVE_DXGIFORMAT_H 1
#elif defined(_WIN32) && __has_include(<dxgiformat.h>)
// The MinGW-w64 build checks against the Windows SDK header it ships.
#include <dxgiformat.h>
#define TM_HAVE_DXGIFORMAT_H 1
#endif

using namespace tensormem;

namespace {

struct Row {
  PixelFormat format;
  DType dtype;
  DxgiFormat dxgi;
  std::uint32_t width_mul; // texture width = image width × this (then even for semi-planar)
  std::uint32_t rows_num;  // texture height = h × rows_num / 2, rounded up
};

// One row per supported (format, dtype): the table in d3d11_layout.cpp.
const std::vector<Row> kTable = {
    {PixelFormat::RGBA, DType::U8, DxgiFormat::R8G8B8A8_Unorm, 1, 2},
    {PixelFormat::RGBx, DType::U8, DxgiFormat::R8G8B8A8_Unorm, 1, 2},
    {PixelFormat::BGRA, DType::U8, DxgiFormat::B8G8R8A8_Unorm, 1, 2},
    {PixelFormat::BGRx, DType::U8, DxgiFormat::B8G8R8X8_Unorm, 1, 2},
    {PixelFormat::RGBA, DType::F16, DxgiFormat::R16G16B16A16_Float, 1, 2},
    {PixelFormat::RGBA, DType::F32, DxgiFormat::R32G32B32A32_Float, 1, 2},
    {PixelFormat::RGB, DType::U8, DxgiFormat::R8_Unorm, 3, 2},
    {PixelFormat::BGR, DType::U8, DxgiFormat::R8_Unorm, 3, 2},
    {PixelFormat::RGB, DType::F32, DxgiFormat::R32_Float, 3, 2},
    {PixelFormat::GRAY8, DType::U8, DxgiFormat::R8_Unorm, 1, 2},
    {PixelFormat::GRAY8, DType::F16, DxgiFormat::R16_Float, 1, 2},
    {PixelFormat::GRAY8, DType::F32, DxgiFormat::R32_Float, 1, 2},
    {PixelFormat::RGBP, DType::U8, DxgiFormat::R8_Unorm, 1, 6},
    {PixelFormat::RGBP, DType::F16, DxgiFormat::R16_Float, 1, 6},
    {PixelFormat::RGBP, DType::F32, DxgiFormat::R32_Float, 1, 6},
    {PixelFormat::NV12, DType::U8, DxgiFormat::R8_Unorm, 1, 3},
    {PixelFormat::NV16, DType::U8, DxgiFormat::R8_Unorm, 1, 4},
    {PixelFormat::NV24, DType::U8, DxgiFormat::R8_Unorm, 1, 6},
};

struct Size {
  std::uint32_t w, h;
};

} // namespace

TEST(D3d11Layout, every_supported_pair_maps_to_its_texture) {
  for (const Row &row : kTable) {
    for (const Size size : {Size{640, 480}, Size{641, 481}, Size{1, 1}}) {
      SCOPED_TRACE(std::string(format_info(row.format).name) + "/" + dtype_name(row.dtype) + " " +
                   std::to_string(size.w) + "x" + std::to_string(size.h));
      const auto layout = image_d3d11_layout(row.format, row.dtype, size.w, size.h);
      ASSERT_TRUE(layout.has_value());
      std::uint32_t tex_w = size.w * row.width_mul;
      const bool semi =
          row.format == PixelFormat::NV12 || row.format == PixelFormat::NV16 || row.format == PixelFormat::NV24;
      if (semi)
        tex_w += tex_w & 1U;
      // NV12 rounds its chroma rows up: h + ceil(h/2); the rest are exact multiples of h.
      const std::uint32_t tex_h = (size.h * row.rows_num + 1) / 2;
      EXPECT_EQ(layout->dxgi_format, row.dxgi);
      EXPECT_EQ(layout->texture_width, tex_w);
      EXPECT_EQ(layout->texture_height, tex_h);
      EXPECT_EQ(layout->width, size.w);
      EXPECT_EQ(layout->height, size.h);
      EXPECT_EQ(layout->semi_planar(), semi);
      EXPECT_EQ(layout->tight_row_bytes(), std::size_t{tex_w} * dxgi_format_bytes(row.dxgi));
      EXPECT_EQ(layout->tight_bytes(), layout->tight_row_bytes() * tex_h);
      EXPECT_EQ(layout->image_row_bytes(),
                semi ? std::size_t{size.w} * dtype_size(row.dtype) : layout->tight_row_bytes());
    }
  }
}

TEST(D3d11Layout, nv12_64x64_is_one_64x96_r8_texture) {
  const auto layout = image_d3d11_layout(PixelFormat::NV12, DType::U8, 64, 64);
  ASSERT_TRUE(layout);
  EXPECT_EQ(layout->texture_width, 64U);
  EXPECT_EQ(layout->texture_height, 96U);
  EXPECT_EQ(layout->dxgi_format, DxgiFormat::R8_Unorm);
  EXPECT_EQ(layout->tight_bytes(), 64U * 96U);
}

TEST(D3d11Layout, nv24_chroma_line_spans_two_texture_rows) {
  const auto layout = image_d3d11_layout(PixelFormat::NV24, DType::U8, 64, 64);
  ASSERT_TRUE(layout);
  EXPECT_EQ(layout->texture_width, 64U);
  EXPECT_EQ(layout->texture_height, 192U);
  // Chroma line i (2·width bytes) starts at texture row height + 2i, so the
  // chroma block fills exactly the 2·height rows after the luma.
  const std::size_t chroma_line = 2 * std::size_t{layout->width};
  EXPECT_EQ(chroma_line, 2 * layout->tight_row_bytes());
  EXPECT_EQ(std::size_t{layout->height} + 2 * (layout->height - 1) + 2, layout->texture_height);
  EXPECT_EQ(layout->image_row_bytes(), 64U);
}

TEST(D3d11Layout, D3D_LAYOUT_05_widened_to_changes_the_texture_width_only) {
  const auto layout = image_d3d11_layout(PixelFormat::NV12, DType::U8, 100, 50);
  ASSERT_TRUE(layout);
  const D3d11ImageLayout wide = layout->widened_to(256);
  EXPECT_EQ(wide.texture_width, 256U);
  EXPECT_EQ(wide.texture_height, layout->texture_height);
  EXPECT_EQ(wide.width, 100U);
  EXPECT_EQ(wide.height, 50U);
  EXPECT_EQ(wide.dxgi_format, layout->dxgi_format);
  EXPECT_EQ(wide.tight_row_bytes(), 256U);
  EXPECT_EQ(wide.image_row_bytes(), 100U);
}

TEST(D3d11Layout, refuses_what_no_single_texture_holds) {
  EXPECT_FALSE(image_d3d11_layout(PixelFormat::I420, DType::U8, 64, 64));
  EXPECT_FALSE(image_d3d11_layout(PixelFormat::RGBA, DType::U16, 64, 64));
  EXPECT_FALSE(image_d3d11_layout(PixelFormat::BGRA, DType::F32, 64, 64));
  EXPECT_FALSE(image_d3d11_layout(PixelFormat::RGB, DType::F16, 64, 64));
  EXPECT_FALSE(image_d3d11_layout(PixelFormat::NV12, DType::F32, 64, 64));
  EXPECT_FALSE(image_d3d11_layout(PixelFormat::GRAY8, DType::F64, 64, 64));
  EXPECT_FALSE(image_d3d11_layout(PixelFormat::RGBA, DType::U8, 0, 64));
  EXPECT_FALSE(image_d3d11_layout(PixelFormat::RGBA, DType::U8, 64, 0));
  // Texture dimensions past uint32.
  EXPECT_FALSE(image_d3d11_layout(PixelFormat::RGB, DType::U8, 0x60000000U, 1));
  EXPECT_FALSE(image_d3d11_layout(PixelFormat::RGBP, DType::U8, 1, 0x60000000U));
  EXPECT_FALSE(image_d3d11_layout(PixelFormat::NV12, DType::U8, 0xFFFFFFFFU, 1));
  if constexpr (sizeof(std::size_t) == 8) {
    // 2^32-1 × 16 bytes × (2^32-1) rows overflows a 64-bit size.
    EXPECT_FALSE(image_d3d11_layout(PixelFormat::RGBA, DType::F32, 0xFFFFFFFFU, 0xFFFFFFFFU));
  }
}

TEST(D3d11Layout, format_names_and_texel_sizes) {
  EXPECT_STREQ(dxgi_format_name(DxgiFormat::R8_Unorm), "DXGI_FORMAT_R8_UNORM");
  EXPECT_STREQ(dxgi_format_name(DxgiFormat::B8G8R8X8_Unorm), "DXGI_FORMAT_B8G8R8X8_UNORM");
  EXPECT_STREQ(dxgi_format_name(DxgiFormat::Unknown), "DXGI_FORMAT_UNKNOWN");
  EXPECT_EQ(dxgi_format_bytes(DxgiFormat::Unknown), 0U);
  EXPECT_EQ(dxgi_format_bytes(DxgiFormat::R8_Unorm), 1U);
  EXPECT_EQ(dxgi_format_bytes(DxgiFormat::R8G8_Unorm), 2U);
  EXPECT_EQ(dxgi_format_bytes(DxgiFormat::R16_Float), 2U);
  EXPECT_EQ(dxgi_format_bytes(DxgiFormat::R32_Float), 4U);
  EXPECT_EQ(dxgi_format_bytes(DxgiFormat::R8G8B8A8_Unorm), 4U);
  EXPECT_EQ(dxgi_format_bytes(DxgiFormat::B8G8R8A8_Unorm), 4U);
  EXPECT_EQ(dxgi_format_bytes(DxgiFormat::R16G16B16A16_Float), 8U);
  EXPECT_EQ(dxgi_format_bytes(DxgiFormat::R32G32B32A32_Float), 16U);
}

TEST(D3d11Layout, D3D_CONST_05_enumerators_match_dxgiformat_h) {
#ifdef TM_HAVE_DXGIFORMAT_H
#define TM_CHECK_DXGI(ours, theirs)                                                                                    \
  static_assert(static_cast<std::uint32_t>(DxgiFormat::ours) == static_cast<std::uint32_t>(DXGI_FORMAT_##theirs));     \
  EXPECT_STREQ(dxgi_format_name(DxgiFormat::ours), "DXGI_FORMAT_" #theirs)
  TM_CHECK_DXGI(Unknown, UNKNOWN);
  TM_CHECK_DXGI(R32G32B32A32_Float, R32G32B32A32_FLOAT);
  TM_CHECK_DXGI(R16G16B16A16_Float, R16G16B16A16_FLOAT);
  TM_CHECK_DXGI(R8G8B8A8_Unorm, R8G8B8A8_UNORM);
  TM_CHECK_DXGI(R8G8_Unorm, R8G8_UNORM);
  TM_CHECK_DXGI(R32_Float, R32_FLOAT);
  TM_CHECK_DXGI(R16_Float, R16_FLOAT);
  TM_CHECK_DXGI(R8_Unorm, R8_UNORM);
  TM_CHECK_DXGI(B8G8R8A8_Unorm, B8G8R8A8_UNORM);
  TM_CHECK_DXGI(B8G8R8X8_Unorm, B8G8R8X8_UNORM);
#undef TM_CHECK_DXGI
#else
  GTEST_SKIP() << "<directx/dxgiformat.h> is not installed (Debian: directx-headers-dev); "
                  "the enumerators cannot be checked against DirectX-Headers here";
#endif
}

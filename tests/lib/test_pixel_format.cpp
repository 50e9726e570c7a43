// SPDX-License-Identifier: Apache-2.0
// Image geometry: 64-byte aligned strides and plane offsets for every layout.
#include <tensormem/pixel_format.hpp>

#include <gtest/gtest.h>

using namespace tensormem;

TEST(PixelFormat, packed_rgba_odd_width_rows_are_padded_to_64_bytes) {
  auto l = image_layout(PixelFormat::RGBA, 321, 17, 64);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->n_planes, 1);
  EXPECT_EQ(l->stride[0], 1344u); // 1284 rounded up
  EXPECT_EQ(l->size, 1344u * 17);
  auto tight = image_layout(PixelFormat::RGB, 321, 17, 1);
  EXPECT_EQ(tight->stride[0], 963u);
}

TEST(PixelFormat, nv12_planes_follow_the_luma_plane) {
  auto l = image_layout(PixelFormat::NV12, 320, 240, 64);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->n_planes, 2);
  EXPECT_EQ(l->stride[0], 320u);
  EXPECT_EQ(l->stride[1], 320u);
  EXPECT_EQ(l->offset[1], 320u * 240);
  EXPECT_EQ(l->rows[1], 120u);
  EXPECT_EQ(l->size, 320u * 240 * 3 / 2);
}

TEST(PixelFormat, odd_sizes_round_chroma_up) {
  auto nv12 = image_layout(PixelFormat::NV12, 321, 17, 64);
  EXPECT_EQ(nv12->stride[0], 384u);
  EXPECT_EQ(nv12->stride[1], 384u); // 161 pairs * 2 = 322 bytes
  EXPECT_EQ(nv12->rows[0], 18u); // luma padded to whole chroma rows, as GStreamer does
  EXPECT_EQ(nv12->rows[1], 9u);
  EXPECT_EQ(nv12->offset[1], 384u * 18);
  EXPECT_EQ(nv12->size, 384u * 18 + 384u * 9);
  auto i420 = image_layout(PixelFormat::I420, 321, 17, 1);
  EXPECT_EQ(i420->stride[1], 161u);
  EXPECT_EQ(i420->offset[2], 321u * 18 + 161u * 9);
  auto nv16 = image_layout(PixelFormat::NV16, 321, 17, 1);
  EXPECT_EQ(nv16->rows[0], 17u); // no vertical sub-sampling, no padding row
}

TEST(PixelFormat, nv16_nv24_and_planar_rgb) {
  auto nv16 = image_layout(PixelFormat::NV16, 64, 8, 64);
  EXPECT_EQ(nv16->rows[1], 8u);
  EXPECT_EQ(nv16->stride[1], 64u);
  auto nv24 = image_layout(PixelFormat::NV24, 64, 8, 64);
  EXPECT_EQ(nv24->stride[1], 128u);
  EXPECT_EQ(nv24->size, 64u * 8 + 128u * 8);
  auto rgbp = image_layout(PixelFormat::RGBP, 10, 10, 64);
  EXPECT_EQ(rgbp->n_planes, 3);
  EXPECT_EQ(rgbp->offset[2], 2u * 64 * 10);
  EXPECT_STREQ(format_info(PixelFormat::GRAY8).name, "GRAY8");
}

TEST(PixelFormat, bad_geometry_gets_a_specific_error) {
  EXPECT_EQ(image_layout(PixelFormat::RGBA, 0, 10, 64).error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(image_layout(PixelFormat::RGBA, 10, 0, 64).error().kind(), ErrorKind::InvalidSize);
  EXPECT_EQ(image_layout(PixelFormat::RGBA, 10, 10, 48).error().kind(), ErrorKind::InvalidArgument);
  EXPECT_EQ(image_layout(PixelFormat::RGBA, 10, 10, 0).error().kind(), ErrorKind::InvalidArgument);
  auto huge = image_layout(PixelFormat::RGBA, UINT32_MAX, UINT32_MAX, 64);
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().kind(), ErrorKind::InvalidShape);
}

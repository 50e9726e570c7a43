// SPDX-License-Identifier: Apache-2.0
/* The plain reference implementation of tensorconvert the tests compare
 * with, written from the definitions in docs/tensorconvert.md, and the
 * comparison with its tolerances: shared by the CPU path's tests
 * (test_convert.cpp) and the GL path's (test_convert_gl.cpp). */
#pragma once

#include "test_util.hpp"

#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace convtest {

enum class Resize { Stretch, Letterbox, Crop };
inline const char *resize_name(Resize r) {
  return r == Resize::Stretch ? "stretch" : r == Resize::Letterbox ? "letterbox" : "crop-center";
}

struct Case {
  const char *format;
  int in_w, in_h, out_w, out_h;
  Resize resize;
  const char *dtype; // uint8, float16, float32
  bool nchw;
  bool bgr;
};

/* Reference geometry, straight from the definitions: a frame point p lands
 * on tensor point p * scale + offset; letterbox rounds the picture to whole
 * tensor pixels and centres it. */
struct Geometry {
  double sx, sy, ox, oy;
  int cx, cy, cw, ch;
};
inline Geometry geometry(const Case &c) {
  const double iw = c.in_w, ih = c.in_h, ow = c.out_w, oh = c.out_h;
  if (c.resize == Resize::Stretch)
    return {ow / iw, oh / ih, 0, 0, 0, 0, c.out_w, c.out_h};
  if (c.resize == Resize::Crop) {
    const double s = std::max(ow / iw, oh / ih);
    return {s, s, (ow - iw * s) / 2, (oh - ih * s) / 2, 0, 0, c.out_w, c.out_h};
  }
  const double s = std::min(ow / iw, oh / ih);
  const int cw = std::clamp(static_cast<int>(std::lround(iw * s)), 1, c.out_w);
  const int ch = std::clamp(static_cast<int>(std::lround(ih * s)), 1, c.out_h);
  const int px = (c.out_w - cw) / 2, py = (c.out_h - ch) / 2;
  return {cw / iw, ch / ih, static_cast<double>(px), static_cast<double>(py), px, py, cw, ch};
}

/* One plane of 8-bit samples with `channels` interleaved samples a pixel. */
struct Plane {
  const std::uint8_t *data;
  int stride, width, height, channels;
  double sample(double x, double y, int channel) const {
    auto at = [&](int xi, int yi) {
      xi = std::clamp(xi, 0, width - 1);
      yi = std::clamp(yi, 0, height - 1);
      return static_cast<double>(data[yi * stride + xi * channels + channel]);
    };
    const int x0 = static_cast<int>(std::floor(x)), y0 = static_cast<int>(std::floor(y));
    const double fx = x - x0, fy = y - y0;
    const double top = at(x0, y0) * (1 - fx) + at(x0 + 1, y0) * fx;
    const double bottom = at(x0, y0 + 1) * (1 - fx) + at(x0 + 1, y0 + 1) * fx;
    return top * (1 - fy) + bottom * fy;
  }
};

/* R, G, B (0-255) of the frame at sample coordinate (x, y). */
inline void reference_rgb(const GstVideoInfo *info, const std::vector<std::uint8_t> &bytes, double x, double y,
                          double rgb[3]) {
  const GstVideoFormat f = GST_VIDEO_INFO_FORMAT(info);
  auto plane = [&](int p, int w, int h, int channels) {
    return Plane{bytes.data() + GST_VIDEO_INFO_PLANE_OFFSET(info, p), GST_VIDEO_INFO_PLANE_STRIDE(info, p), w, h,
                 channels};
  };
  const int w = GST_VIDEO_INFO_WIDTH(info), h = GST_VIDEO_INFO_HEIGHT(info);
  if (f == GST_VIDEO_FORMAT_NV12 || f == GST_VIDEO_FORMAT_I420) {
    const int cw = (w + 1) / 2, ch = (h + 1) / 2;
    const double cx = (x + 0.5) / 2 - 0.5, cy = (y + 0.5) / 2 - 0.5;
    const double Y = plane(0, w, h, 1).sample(x, y, 0);
    double U, V;
    if (f == GST_VIDEO_FORMAT_NV12) {
      U = plane(1, cw, ch, 2).sample(cx, cy, 0);
      V = plane(1, cw, ch, 2).sample(cx, cy, 1);
    } else {
      U = plane(1, cw, ch, 1).sample(cx, cy, 0);
      V = plane(2, cw, ch, 1).sample(cx, cy, 0);
    }
    double kr, kb;
    EXPECT_TRUE(gst_video_color_matrix_get_Kr_Kb(info->colorimetry.matrix, &kr, &kb));
    const bool full = info->colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255;
    const double yy = full ? Y : (Y - 16) * 255 / 219;
    const double cb = full ? U - 128 : (U - 128) * 255 / 224;
    const double cr = full ? V - 128 : (V - 128) * 255 / 224;
    const double kg = 1 - kr - kb;
    rgb[0] = yy + 2 * (1 - kr) * cr;
    rgb[1] = yy - 2 * (1 - kb) * kb / kg * cb - 2 * (1 - kr) * kr / kg * cr;
    rgb[2] = yy + 2 * (1 - kb) * cb;
    for (int i = 0; i < 3; ++i)
      rgb[i] = std::clamp(rgb[i], 0.0, 255.0);
    return;
  }
  int order[3];
  int channels;
  switch (f) {
  case GST_VIDEO_FORMAT_RGBA:
  case GST_VIDEO_FORMAT_RGBx: channels = 4, order[0] = 0, order[1] = 1, order[2] = 2; break;
  case GST_VIDEO_FORMAT_BGRA:
  case GST_VIDEO_FORMAT_BGRx: channels = 4, order[0] = 2, order[1] = 1, order[2] = 0; break;
  case GST_VIDEO_FORMAT_RGB: channels = 3, order[0] = 0, order[1] = 1, order[2] = 2; break;
  case GST_VIDEO_FORMAT_BGR: channels = 3, order[0] = 2, order[1] = 1, order[2] = 0; break;
  default: channels = 1, order[0] = order[1] = order[2] = 0; break; // GRAY8
  }
  const Plane p = plane(0, w, h, channels);
  for (int i = 0; i < 3; ++i)
    rgb[i] = p.sample(x, y, order[i]);
}

inline const double kMean[3] = {0.485, 0.456, 0.406};
inline const double kStd[3] = {0.229, 0.224, 0.225};
inline constexpr int kPad = 114;

/* The tensor element (n, c, y, x) as a double, by the definitions. */
inline std::vector<double> reference_tensor(const Case &c, const GstVideoInfo *info,
                                            const std::vector<std::uint8_t> &bytes) {
  const Geometry g = geometry(c);
  const bool u8 = std::string(c.dtype) == "uint8";
  std::vector<double> out(static_cast<std::size_t>(c.out_w) * c.out_h * 3);
  for (int y = 0; y < c.out_h; ++y) {
    for (int x = 0; x < c.out_w; ++x) {
      double rgb[3] = {kPad, kPad, kPad};
      if (x >= g.cx && x < g.cx + g.cw && y >= g.cy && y < g.cy + g.ch)
        reference_rgb(info, bytes, (x + 0.5 - g.ox) / g.sx - 0.5, (y + 0.5 - g.oy) / g.sy - 0.5, rgb);
      for (int ch = 0; ch < 3; ++ch) {
        const double v = rgb[c.bgr ? 2 - ch : ch];
        const double value = u8 ? std::floor(std::clamp(v, 0.0, 255.0) + 0.5) : (v / 255 - kMean[ch]) / kStd[ch];
        const std::size_t index = c.nchw ? (static_cast<std::size_t>(ch) * c.out_h + y) * c.out_w + x
                                         : (static_cast<std::size_t>(y) * c.out_w + x) * 3 + ch;
        out[index] = value;
      }
    }
  }
  return out;
}

inline double half_to_double(std::uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1 : 1;
  if (e == 0)
    return sign * std::ldexp(m, -24);
  if (e == 31)
    return m ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + m, e - 25);
}

inline std::vector<std::uint8_t> random_frame(const GstVideoInfo *info, std::uint32_t seed) {
  std::vector<std::uint8_t> bytes(GST_VIDEO_INFO_SIZE(info));
  std::mt19937 rng(seed);
  for (auto &b : bytes)
    b = static_cast<std::uint8_t>(rng());
  return bytes;
}

inline std::string in_caps(const Case &c, const char *extra = "") {
  return std::string("video/x-raw,format=") + c.format + ",width=" + std::to_string(c.in_w) +
         ",height=" + std::to_string(c.in_h) + ",framerate=30/1" + extra;
}

/* Whether `c` samples every tensor pixel exactly on a frame pixel. */
inline bool resampled(const Case &c) {
  const Geometry g = geometry(c);
  return !(g.sx == 1 && g.sy == 1 && g.ox == std::floor(g.ox) && g.oy == std::floor(g.oy));
}

/* The tensor's elements as doubles (uint8, float16 or float32 bytes). */
inline std::vector<double> tensor_values(const Case &c, const std::uint8_t *data, std::size_t elements) {
  const std::string dtype = c.dtype;
  std::vector<double> out(elements);
  for (std::size_t i = 0; i < elements; ++i) {
    if (dtype == "uint8") {
      out[i] = data[i];
    } else if (dtype == "float16") {
      std::uint16_t h;
      std::memcpy(&h, data + 2 * i, 2);
      out[i] = half_to_double(h);
    } else {
      float f;
      std::memcpy(&f, data + 4 * i, 4);
      out[i] = f;
    }
  }
  return out;
}

/* How far two results for `c` may be apart: uint8 exact (±1 once
 * resampled, or `cross_path`: two implementations round differently);
 * float32 1e-3 (1/255 once resampled); float16 that or its own precision. */
inline double tolerance(const Case &c, double want, bool cross_path = false) {
  const std::string dtype = c.dtype;
  if (dtype == "uint8")
    return resampled(c) || cross_path ? 1 : 0;
  if (dtype == "float16")
    return std::max(1e-3, std::abs(want) / 1024); // binary16 keeps 11 significant bits
  return resampled(c) ? 1.0 / 255 : 1e-3;
}

/* Counts the elements of `got` farther from `want` than the tolerance and
 * names the first. */
inline void expect_close(const Case &c, const std::vector<double> &got, const std::vector<double> &want,
                         bool cross_path, const char *what) {
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0;
  std::string first;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= tolerance(c, want[i], cross_path)) && bad++ == 0)
      first = "element " + std::to_string(i) + ": " + std::to_string(got[i]) + " vs " + std::to_string(want[i]);
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << want.size() << " elements off; first " << first;
}

/* The values of a tensor buffer for `c`, checking its size. */
inline std::vector<double> buffer_values(const Case &c, GstBuffer *buffer) {
  const std::string dtype = c.dtype;
  const std::size_t element = dtype == "uint8" ? 1 : dtype == "float16" ? 2 : 4;
  const std::size_t elements = static_cast<std::size_t>(c.out_w) * c.out_h * 3;
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    ADD_FAILURE() << "the tensor does not map";
    return {};
  }
  std::vector<double> out;
  EXPECT_EQ(map.size, elements * element);
  if (map.size == elements * element)
    out = tensor_values(c, map.data, elements);
  gst_buffer_unmap(buffer, &map);
  return out;
}

} // namespace convtest

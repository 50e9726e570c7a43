// SPDX-License-Identifier: Apache-2.0
#include <tensormem/frame_convert.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

namespace tensormem {
namespace {

/// Byte positions of red, green and blue in a packed pixel of `bpp` bytes.
struct Packed {
  std::uint32_t bpp;
  std::uint32_t r, g, b;
};

bool packed_of(PixelFormat format, Packed *out) noexcept {
  switch (format) {
  case PixelFormat::RGBA:
  case PixelFormat::RGBx: *out = {4, 0, 1, 2}; return true;
  case PixelFormat::BGRA:
  case PixelFormat::BGRx: *out = {4, 2, 1, 0}; return true;
  case PixelFormat::RGB: *out = {3, 0, 1, 2}; return true;
  case PixelFormat::BGR: *out = {3, 2, 1, 0}; return true;
  case PixelFormat::GRAY8: *out = {1, 0, 0, 0}; return true;
  default: return false;
  }
}

bool is_yuv420(PixelFormat format) noexcept { return format == PixelFormat::NV12 || format == PixelFormat::I420; }

/// The two source samples around continuous coordinate `s` (pixel centres
/// at integers) on an axis of `n` samples, edges clamped.
template <typename Tap> Tap tap_at(double s, std::uint32_t n) {
  const double floor = std::floor(s);
  const auto last = static_cast<double>(n - 1);
  const double a = std::clamp(floor, 0.0, last);
  const double b = std::clamp(floor + 1.0, 0.0, last);
  return Tap{static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(b), static_cast<float>(s - floor)};
}

inline float lerp(float a, float b, float t) noexcept { return a + (b - a) * t; }

} // namespace

std::uint16_t float_to_half(float value) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const int exponent = static_cast<int>((x >> 23) & 0xffu);
  std::uint32_t mantissa = x & 0x7fffffu;
  if (exponent == 0xff) // infinity stays infinity; NaN stays a (quiet) NaN
    return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
  const int e = exponent - 127 + 15;
  if (e >= 31)
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (e <= 0) { // a half subnormal, or zero
    if (e < -10)
      return static_cast<std::uint16_t>(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - e;
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u)))
      ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = sign | (static_cast<std::uint32_t>(e) << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1fffu;
  // A carry out of the mantissa moves into the exponent, as rounding must.
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half;
  return static_cast<std::uint16_t>(half);
}

namespace {

/// \brief Refuses a mean/std pair that would write a value the output type
/// cannot hold. Every converted value is x * scale + bias with x an 8-bit
/// sample (0..255: pixels, padding and YUV after clamping) and scale, bias the
/// floats the conversion itself uses, so the two ends x = 0 and x = 255 bound
/// them all. Checked here, once for both the CPU and the GL path.
Result<void> check_finite_outputs(const ConvertSpec &spec) {
  if (spec.dtype == DType::U8)
    return {};
  const bool half = spec.dtype == DType::F16;
  const double limit = half ? 65504.0 : static_cast<double>(std::numeric_limits<float>::max());
  for (std::size_t c = 0; c < 3; ++c) {
    const float scale = 1.f / (255.f * spec.std[c]);
    const float bias = -spec.mean[c] / spec.std[c];
    const double at_zero = bias;
    /* Both roundings of x * scale + bias at x = 255: fused (a GL shader may
     * contract it into one fma) and unfused, as convert_rows computes it. The
     * unfused product alone can overflow where the fused result fits: a
     * mean of 0.5 over a denormal std gives 255 * scale > FLT_MAX with a
     * bias of nearly -FLT_MAX (found by tests/fuzz/fuzz_convert.cpp). */
    const double at_full = static_cast<double>(std::fma(255.f, scale, bias));
    const float product = 255.f * scale;
    const double at_full_unfused = static_cast<double>(product) + static_cast<double>(bias);
    double worst = at_zero; // the value farthest out, for the message
    for (double v : {at_full, std::isfinite(product) ? at_full_unfused : HUGE_VAL})
      if (!std::isfinite(v) || (std::isfinite(worst) && std::abs(v) > std::abs(worst)))
        worst = v;
    if (std::isfinite(scale) && std::isfinite(bias) && std::isfinite(at_full) && std::abs(at_full) <= limit &&
        std::isfinite(product) && std::abs(at_full_unfused) <= limit && std::abs(at_zero) <= limit)
      continue;
    char text[320];
    std::snprintf(text, sizeof text,
                  "FrameConverter: channel %zu: mean %g and std %g give output values up to %g, beyond %s's "
                  "range of +-%g; choose a mean and std that keep (x/255 - mean)/std finite for x in 0..255",
                  c, static_cast<double>(spec.mean[c]), static_cast<double>(spec.std[c]),
                  std::isfinite(worst) ? worst : HUGE_VAL, half ? "float16" : "float32", limit);
    return Error::invalid_argument(text);
  }
  return {};
}

} // namespace

Result<FrameConverter> FrameConverter::create(const ConvertSpec &spec) {
  Packed packed{};
  if (!packed_of(spec.input, &packed) && !is_yuv420(spec.input))
    return Error::invalid_argument(std::string("FrameConverter: input format ") + format_info(spec.input).name +
                                   " is not one of RGBA, BGRA, RGBx, BGRx, RGB, BGR, GRAY8, NV12, I420");
  if (spec.in_width == 0 || spec.in_height == 0 || spec.out_width == 0 || spec.out_height == 0)
    return Error::invalid_size(0, "FrameConverter: a frame or tensor size is 0 (" + std::to_string(spec.in_width) +
                                      "x" + std::to_string(spec.in_height) + " -> " + std::to_string(spec.out_width) +
                                      "x" + std::to_string(spec.out_height) + ")");
  if (spec.dtype != DType::U8 && spec.dtype != DType::F16 && spec.dtype != DType::F32)
    return Error::invalid_argument(std::string("FrameConverter: output type ") + dtype_name(spec.dtype) +
                                   " is not one of u8, f16, f32");
  for (std::size_t c = 0; c < 3; ++c) {
    if (!std::isfinite(spec.mean[c]) || !std::isfinite(spec.std[c]) || spec.std[c] == 0.f)
      return Error::invalid_argument("FrameConverter: channel " + std::to_string(c) + " has mean " +
                                     std::to_string(spec.mean[c]) + " and std " + std::to_string(spec.std[c]) +
                                     "; both must be finite and the std not 0");
  }
  if (Result<void> finite = check_finite_outputs(spec); !finite)
    return std::move(finite).error();
  if (is_yuv420(spec.input) && (!(spec.kr > 0 && spec.kb > 0 && spec.kr + spec.kb < 1)))
    return Error::invalid_argument("FrameConverter: colour matrix weights Kr " + std::to_string(spec.kr) + ", Kb " +
                                   std::to_string(spec.kb) + " are not a matrix");
  const std::size_t pixels = std::size_t{spec.out_width} * spec.out_height;
  const std::size_t element = dtype_size(spec.dtype);
  if (pixels > std::numeric_limits<std::size_t>::max() / 3 / element)
    return Error::invalid_shape("FrameConverter: a " + std::to_string(spec.out_width) + "x" +
                                std::to_string(spec.out_height) + " tensor overflows the address space");

  FrameConverter c;
  c.spec_ = spec;
  c.output_bytes_ = pixels * 3 * element;

  const double in_w = spec.in_width, in_h = spec.in_height;
  const double out_w = spec.out_width, out_h = spec.out_height;
  FrameMapping &m = c.mapping_;
  switch (spec.resize) {
  case ResizeMode::Stretch: m = {out_w / in_w, out_h / in_h, 0, 0, 0, 0, spec.out_width, spec.out_height}; break;
  case ResizeMode::Letterbox: {
    const double s = std::min(out_w / in_w, out_h / in_h);
    const auto cw = static_cast<std::uint32_t>(std::clamp(std::lround(in_w * s), 1L, static_cast<long>(out_w)));
    const auto ch = static_cast<std::uint32_t>(std::clamp(std::lround(in_h * s), 1L, static_cast<long>(out_h)));
    const std::uint32_t px = (spec.out_width - cw) / 2, py = (spec.out_height - ch) / 2;
    m = {cw / in_w, ch / in_h, static_cast<double>(px), static_cast<double>(py), px, py, cw, ch};
    break;
  }
  case ResizeMode::CropCenter: {
    const double s = std::max(out_w / in_w, out_h / in_h);
    m = {s, s, (out_w - in_w * s) / 2, (out_h - in_h * s) / 2, 0, 0, spec.out_width, spec.out_height};
    break;
  }
  }

  // Tensor pixel centre t + 0.5 is source point (t + 0.5 - offset) / scale,
  // whose sample coordinate (centres at integers) is that minus 0.5.
  const std::uint32_t chroma_w = (spec.in_width + 1) / 2, chroma_h = (spec.in_height + 1) / 2;
  for (std::uint32_t j = 0; j < m.content_width; ++j) {
    const double s = (m.content_x + j + 0.5 - m.offset_x) / m.scale_x - 0.5;
    c.luma_x_.push_back(tap_at<Tap>(s, spec.in_width));
    if (is_yuv420(spec.input)) // chroma sample i sits at the centre of luma samples 2i and 2i+1
      c.chroma_x_.push_back(tap_at<Tap>((s + 0.5) / 2 - 0.5, chroma_w));
  }
  for (std::uint32_t i = 0; i < m.content_height; ++i) {
    const double s = (m.content_y + i + 0.5 - m.offset_y) / m.scale_y - 0.5;
    c.luma_y_.push_back(tap_at<Tap>(s, spec.in_height));
    if (is_yuv420(spec.input))
      c.chroma_y_.push_back(tap_at<Tap>((s + 0.5) / 2 - 0.5, chroma_h));
  }

  for (std::size_t ch = 0; ch < 3; ++ch) {
    if (spec.dtype == DType::U8) {
      c.scale_[ch] = 1.f;
      c.bias_[ch] = 0.f;
    } else {
      c.scale_[ch] = 1.f / (255.f * spec.std[ch]);
      c.bias_[ch] = -spec.mean[ch] / spec.std[ch];
    }
  }

  if (is_yuv420(spec.input)) {
    const double kg = 1.0 - spec.kr - spec.kb;
    const double ys = spec.full_range ? 1.0 : 255.0 / 219.0;
    const double cs = spec.full_range ? 1.0 : 255.0 / 224.0;
    c.yuv_offset_ = {spec.full_range ? 0.f : 16.f, 128.f, 128.f};
    c.yuv_row_r_ = {static_cast<float>(ys), 0.f, static_cast<float>(cs * 2 * (1 - spec.kr))};
    c.yuv_row_g_ = {static_cast<float>(ys), static_cast<float>(-cs * 2 * (1 - spec.kb) * spec.kb / kg),
                    static_cast<float>(-cs * 2 * (1 - spec.kr) * spec.kr / kg)};
    c.yuv_row_b_ = {static_cast<float>(ys), static_cast<float>(cs * 2 * (1 - spec.kb)), 0.f};
  }
  return c;
}

namespace {

constexpr std::uint32_t kChunk = 256; // columns converted at a time, in floats on the stack

/* Writes `n` pixels, channel planes r, g, b (0-255 units), at tensor
 * column x0 of row y; `ch_src` says which plane each tensor channel reads. */
template <DType D, TensorLayout L>
void write_chunk(std::byte *out, std::size_t w, std::size_t h, std::size_t x0, std::size_t y, std::uint32_t n,
                 const float *const planes[3], const float scale[3], const float bias[3]) noexcept {
  for (std::size_t c = 0; c < 3; ++c) {
    const float *src = planes[c];
    const float a = scale[c], b = bias[c];
    const std::size_t base = L == TensorLayout::Nchw ? (c * h + y) * w + x0 : (y * w + x0) * 3 + c;
    const std::size_t step = L == TensorLayout::Nchw ? 1 : 3;
    if constexpr (D == DType::U8) {
      auto *dst = reinterpret_cast<std::uint8_t *>(out) + base;
      for (std::uint32_t k = 0; k < n; ++k)
        dst[k * step] = static_cast<std::uint8_t>(std::clamp(src[k], 0.f, 255.f) + 0.5f);
    } else if constexpr (D == DType::F16) {
      auto *dst = reinterpret_cast<std::uint16_t *>(out) + base;
      for (std::uint32_t k = 0; k < n; ++k)
        dst[k * step] = float_to_half(src[k] * a + b);
    } else {
      auto *dst = reinterpret_cast<float *>(out) + base;
      std::uint32_t k = 0;
#if defined(__SSE2__)
      if constexpr (L == TensorLayout::Nchw) { // contiguous: four at a time, the same multiply and add
        const __m128 va = _mm_set1_ps(a), vb = _mm_set1_ps(b);
        for (; k + 4 <= n; k += 4)
          _mm_storeu_ps(dst + k, _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(src + k), va), vb));
      }
#endif
      for (; k < n; ++k)
        dst[k * step] = src[k] * a + b;
    }
  }
}

using WriteChunk = void (*)(std::byte *, std::size_t, std::size_t, std::size_t, std::size_t, std::uint32_t,
                            const float *const[3], const float[3], const float[3]) noexcept;

template <DType D> WriteChunk writer_for(TensorLayout layout) noexcept {
  return layout == TensorLayout::Nchw ? write_chunk<D, TensorLayout::Nchw> : write_chunk<D, TensorLayout::Nhwc>;
}

} // namespace

namespace {

/* A horizontally resampled source row of a packed input: for each of `n`
 * tensor columns, the red, green and blue values between the two taps (in
 * 0-255 units), one float line per channel. BPP is the pixel size, so the
 * byte offsets are a multiply by a constant. */
template <std::uint32_t BPP, typename Tap>
void packed_row(const std::uint8_t *row, const std::uint32_t at[3], const Tap *taps, std::uint32_t n,
                float *line[3]) noexcept {
  float *r = line[0], *g = line[1], *b = line[2];
  const std::uint32_t ar = at[0], ag = at[1], ab = at[2];
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint8_t *p0 = row + std::size_t{taps[k].i0} * BPP;
    const std::uint8_t *p1 = row + std::size_t{taps[k].i1} * BPP;
    const float w = taps[k].weight;
    r[k] = lerp(p0[ar], p1[ar], w);
    g[k] = lerp(p0[ag], p1[ag], w);
    b[k] = lerp(p0[ab], p1[ab], w);
  }
}

template <typename Tap>
using PackedRow = void (*)(const std::uint8_t *, const std::uint32_t[3], const Tap *, std::uint32_t,
                           float *[3]) noexcept;

template <typename Tap> PackedRow<Tap> packed_row_for(std::uint32_t bpp) noexcept {
  switch (bpp) {
  case 4: return packed_row<4, Tap>;
  case 3: return packed_row<3, Tap>;
  default: return packed_row<1, Tap>;
  }
}

/* Two resampled source rows, by source row index: a tensor row blends two
 * source rows, and the next one mostly needs one of them again. get()
 * returns row `row`, filling it (fill(row, line)) into the slot that does
 * not hold `keep` when neither slot has it. */
template <typename Line> class RowPair {
public:
  template <typename Fill> const Line &get(std::uint32_t row, std::uint32_t keep, Fill &fill) {
    if (held_[0] == row)
      return lines_[0];
    if (held_[1] == row)
      return lines_[1];
    const int slot = held_[0] == keep ? 1 : 0;
    fill(row, lines_[slot]);
    held_[slot] = row;
    return lines_[slot];
  }
  /// Forgets both rows (a new column chunk).
  void reset() noexcept { held_[0] = held_[1] = kNone; }

private:
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  Line lines_[2];
  std::uint32_t held_[2] = {kNone, kNone};
};

/* dst = lerp(a, b, t) over `n` floats: contiguous, so it vectorises. */
void blend_line(const float *a, const float *b, float t, std::uint32_t n, float *dst) noexcept {
  std::uint32_t k = 0;
#if defined(__SSE2__)
  const __m128 weight = _mm_set1_ps(t);
  for (; k + 4 <= n; k += 4) {
    const __m128 va = _mm_loadu_ps(a + k), vb = _mm_loadu_ps(b + k);
    _mm_storeu_ps(dst + k, _mm_add_ps(va, _mm_mul_ps(_mm_sub_ps(vb, va), weight)));
  }
#endif
  for (; k < n; ++k)
    dst[k] = lerp(a[k], b[k], t);
}

#if defined(__SSE2__)
/* 4-byte pixels with SSE2 (every x86-64): a source row resampled across into
 * `line`, four floats per tensor column in the pixel's byte order. Each lane
 * computes what lerp() computes, so the results are the scalar path's. */
template <typename Tap>
void rgba_row_sse2(const std::uint8_t *row, const Tap *taps, std::uint32_t n, float *line) noexcept {
  const __m128i zero = _mm_setzero_si128();
  auto pixel = [&](std::uint32_t i) {
    std::int32_t bytes;
    std::memcpy(&bytes, row + std::size_t{i} * 4, sizeof bytes);
    const __m128i b8 = _mm_cvtsi32_si128(bytes);
    return _mm_cvtepi32_ps(_mm_unpacklo_epi16(_mm_unpacklo_epi8(b8, zero), zero));
  };
  for (std::uint32_t k = 0; k < n; ++k) {
    const __m128 a = pixel(taps[k].i0), b = pixel(taps[k].i1);
    _mm_store_ps(line + 4 * k, _mm_add_ps(a, _mm_mul_ps(_mm_sub_ps(b, a), _mm_set1_ps(taps[k].weight))));
  }
}

/* Two resampled lines blended vertically with weight `t` into the red, green
 * and blue planes (lanes at[0], at[1], at[2] of each pixel), four pixels at
 * a time through a 4x4 transpose. */
void rgba_blend_sse2(const float *top, const float *bottom, float t, std::uint32_t n, const std::uint32_t at[3],
                     float *const rgb[3]) noexcept {
  const __m128 weight = _mm_set1_ps(t);
  auto blend = [&](std::uint32_t k) {
    const __m128 a = _mm_load_ps(top + 4 * k), b = _mm_load_ps(bottom + 4 * k);
    return _mm_add_ps(a, _mm_mul_ps(_mm_sub_ps(b, a), weight));
  };
  std::uint32_t k = 0;
  for (; k + 4 <= n; k += 4) {
    __m128 lane[4] = {blend(k), blend(k + 1), blend(k + 2), blend(k + 3)};
    _MM_TRANSPOSE4_PS(lane[0], lane[1], lane[2], lane[3]);
    for (int ch = 0; ch < 3; ++ch)
      _mm_storeu_ps(rgb[ch] + k, lane[at[ch]]);
  }
  alignas(16) float px[4];
  for (; k < n; ++k) {
    _mm_store_ps(px, blend(k));
    for (int ch = 0; ch < 3; ++ch)
      rgb[ch][k] = px[at[ch]];
  }
}
#endif

} // namespace

void FrameConverter::convert_rows(const FramePlanes &frame, std::byte *out, std::uint32_t row_begin,
                                  std::uint32_t row_end) const noexcept {
  row_end = std::min(row_end, spec_.out_height);
  if (row_begin >= row_end)
    return;
  const FrameMapping &m = mapping_;
  const WriteChunk write = spec_.dtype == DType::U8    ? writer_for<DType::U8>(spec_.layout)
                           : spec_.dtype == DType::F16 ? writer_for<DType::F16>(spec_.layout)
                                                       : writer_for<DType::F32>(spec_.layout);
  const std::size_t w = spec_.out_width, h = spec_.out_height;
  float rgb[3][kChunk];
  // Tensor channel c reads plane c (rgb) or 2 - c (bgr).
  const bool bgr = spec_.order == ChannelOrder::Bgr;
  const float *const planes[3] = {rgb[bgr ? 2 : 0], rgb[1], rgb[bgr ? 0 : 2]};

  // The padding first: whole rows outside the picture, and the margins left and right of it.
  {
    const float *const pad_planes[3] = {rgb[0], rgb[0], rgb[0]};
    std::fill_n(rgb[0], kChunk, static_cast<float>(spec_.pad_value));
    auto write_pad = [&](std::size_t y, std::size_t x_begin, std::size_t x_end) {
      for (std::size_t x = x_begin; x < x_end; x += kChunk)
        write(out, w, h, x, y, static_cast<std::uint32_t>(std::min<std::size_t>(kChunk, x_end - x)), pad_planes,
              scale_.data(), bias_.data());
    };
    for (std::uint32_t y = row_begin; y < row_end; ++y) {
      if (y < m.content_y || y >= m.content_y + m.content_height) {
        write_pad(y, 0, w);
        continue;
      }
      write_pad(y, 0, m.content_x);
      write_pad(y, m.content_x + m.content_width, w);
    }
  }
  const std::uint32_t y_begin = std::max(row_begin, m.content_y);
  const std::uint32_t y_end = std::min(row_end, m.content_y + m.content_height);
  if (y_begin >= y_end)
    return;

  /* Separable everywhere: each source row a tensor row needs is resampled
   * across once into float lines (kept for the next tensor row, which mostly
   * reads the same source rows), then two lines are blended vertically in a
   * contiguous loop. Column chunks outside, rows inside, so the lines stay on
   * the stack. Each value goes through the same operations as
   * lerp(lerp(a, b, wx), lerp(c, d, wx), wy), so the results do not change. */
  Packed packed{};
  if (packed_of(spec_.input, &packed)) {
    const std::uint32_t at[3] = {packed.r, packed.g, packed.b};
#if defined(__SSE2__)
    if (packed.bpp == 4) {
      struct alignas(16) Line {
        float v[4 * kChunk];
      };
      RowPair<Line> rows;
      float *const dst[3] = {rgb[0], rgb[1], rgb[2]};
      for (std::uint32_t j0 = 0; j0 < m.content_width; j0 += kChunk) {
        const std::uint32_t n = std::min(kChunk, m.content_width - j0);
        const Tap *taps = luma_x_.data() + j0;
        auto fill = [&](std::uint32_t i, Line &line) {
          rgba_row_sse2(frame.data[0] + std::size_t{i} * frame.stride[0], taps, n, line.v);
        };
        rows.reset();
        for (std::uint32_t y = y_begin; y < y_end; ++y) {
          const Tap &ty = luma_y_[y - m.content_y];
          const Line &top = rows.get(ty.i0, ty.i1, fill);
          const Line &bottom = rows.get(ty.i1, ty.i0, fill);
          rgba_blend_sse2(top.v, bottom.v, ty.weight, n, at, dst);
          write(out, w, h, m.content_x + j0, y, n, planes, scale_.data(), bias_.data());
        }
      }
      return;
    }
#endif
    const PackedRow<Tap> resample = packed_row_for<Tap>(packed.bpp);
    struct Line {
      float v[3][kChunk];
    };
    RowPair<Line> rows;
    for (std::uint32_t j0 = 0; j0 < m.content_width; j0 += kChunk) {
      const std::uint32_t n = std::min(kChunk, m.content_width - j0);
      const Tap *taps = luma_x_.data() + j0;
      auto fill = [&](std::uint32_t i, Line &line) {
        float *dst[3] = {line.v[0], line.v[1], line.v[2]};
        resample(frame.data[0] + std::size_t{i} * frame.stride[0], at, taps, n, dst);
      };
      rows.reset();
      for (std::uint32_t y = y_begin; y < y_end; ++y) {
        const Tap &ty = luma_y_[y - m.content_y];
        const Line &top = rows.get(ty.i0, ty.i1, fill);
        const Line &bottom = rows.get(ty.i1, ty.i0, fill);
        for (int ch = 0; ch < 3; ++ch)
          blend_line(top.v[ch], bottom.v[ch], ty.weight, n, rgb[ch]);
        write(out, w, h, m.content_x + j0, y, n, planes, scale_.data(), bias_.data());
      }
    }
    return;
  }

  // NV12: U and V interleaved in plane 1; I420: U in plane 1, V in plane 2.
  const bool nv12 = spec_.input == PixelFormat::NV12;
  const std::size_t step = nv12 ? 2 : 1;
  struct LumaLine {
    float v[kChunk];
  };
  struct ChromaLine {
    float u[kChunk], v[kChunk];
  };
  RowPair<LumaLine> luma;
  RowPair<ChromaLine> chroma;
  float yl[kChunk], ul[kChunk], vl[kChunk];
  for (std::uint32_t j0 = 0; j0 < m.content_width; j0 += kChunk) {
    const std::uint32_t n = std::min(kChunk, m.content_width - j0);
    const Tap *lx = luma_x_.data() + j0;
    const Tap *cx = chroma_x_.data() + j0;
    auto fill_luma = [&](std::uint32_t i, LumaLine &line) {
      const std::uint8_t *row = frame.data[0] + std::size_t{i} * frame.stride[0];
      for (std::uint32_t k = 0; k < n; ++k)
        line.v[k] = lerp(row[lx[k].i0], row[lx[k].i1], lx[k].weight);
    };
    auto fill_chroma = [&](std::uint32_t i, ChromaLine &line) {
      const std::uint8_t *u = frame.data[1] + std::size_t{i} * frame.stride[1];
      const std::uint8_t *v = nv12 ? u + 1 : frame.data[2] + std::size_t{i} * frame.stride[2];
      for (std::uint32_t k = 0; k < n; ++k) {
        const std::size_t a = cx[k].i0 * step, b = cx[k].i1 * step;
        line.u[k] = lerp(u[a], u[b], cx[k].weight);
        line.v[k] = lerp(v[a], v[b], cx[k].weight);
      }
    };
    luma.reset();
    chroma.reset();
    for (std::uint32_t y = y_begin; y < y_end; ++y) {
      const Tap &ty = luma_y_[y - m.content_y];
      const Tap &cy = chroma_y_[y - m.content_y];
      const LumaLine &y0 = luma.get(ty.i0, ty.i1, fill_luma);
      const LumaLine &y1 = luma.get(ty.i1, ty.i0, fill_luma);
      const ChromaLine &c0 = chroma.get(cy.i0, cy.i1, fill_chroma);
      const ChromaLine &c1 = chroma.get(cy.i1, cy.i0, fill_chroma);
      blend_line(y0.v, y1.v, ty.weight, n, yl);
      blend_line(c0.u, c1.u, cy.weight, n, ul);
      blend_line(c0.v, c1.v, cy.weight, n, vl);
      std::uint32_t k = 0;
#if defined(__SSE2__)
      {
        // Four pixels at a time, the scalar loop's operations in its order.
        const __m128 lo = _mm_setzero_ps(), hi = _mm_set1_ps(255.f);
        const __m128 oy = _mm_set1_ps(yuv_offset_[0]), ou = _mm_set1_ps(yuv_offset_[1]),
                     ov = _mm_set1_ps(yuv_offset_[2]);
        const __m128 ry = _mm_set1_ps(yuv_row_r_[0]), rv = _mm_set1_ps(yuv_row_r_[2]);
        const __m128 gy = _mm_set1_ps(yuv_row_g_[0]), gu = _mm_set1_ps(yuv_row_g_[1]), gv = _mm_set1_ps(yuv_row_g_[2]);
        const __m128 by = _mm_set1_ps(yuv_row_b_[0]), bu = _mm_set1_ps(yuv_row_b_[1]);
        auto clamp = [&](__m128 x) { return _mm_max_ps(_mm_min_ps(x, hi), lo); };
        for (; k + 4 <= n; k += 4) {
          const __m128 yv = _mm_sub_ps(_mm_loadu_ps(yl + k), oy);
          const __m128 uv = _mm_sub_ps(_mm_loadu_ps(ul + k), ou);
          const __m128 vv = _mm_sub_ps(_mm_loadu_ps(vl + k), ov);
          _mm_storeu_ps(rgb[0] + k, clamp(_mm_add_ps(_mm_mul_ps(ry, yv), _mm_mul_ps(rv, vv))));
          _mm_storeu_ps(rgb[1] + k,
                        clamp(_mm_add_ps(_mm_add_ps(_mm_mul_ps(gy, yv), _mm_mul_ps(gu, uv)), _mm_mul_ps(gv, vv))));
          _mm_storeu_ps(rgb[2] + k, clamp(_mm_add_ps(_mm_mul_ps(by, yv), _mm_mul_ps(bu, uv))));
        }
      }
#endif
      for (; k < n; ++k) {
        const float yv = yl[k] - yuv_offset_[0], uv = ul[k] - yuv_offset_[1], vv = vl[k] - yuv_offset_[2];
        rgb[0][k] = std::clamp(yuv_row_r_[0] * yv + yuv_row_r_[2] * vv, 0.f, 255.f);
        rgb[1][k] = std::clamp(yuv_row_g_[0] * yv + yuv_row_g_[1] * uv + yuv_row_g_[2] * vv, 0.f, 255.f);
        rgb[2][k] = std::clamp(yuv_row_b_[0] * yv + yuv_row_b_[1] * uv, 0.f, 255.f);
      }
      write(out, w, h, m.content_x + j0, y, n, planes, scale_.data(), bias_.data());
    }
  }
}

} // namespace tensormem

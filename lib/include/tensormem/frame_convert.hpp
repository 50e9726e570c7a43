// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/pixel_format.hpp>
#include <tensormem/types.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tensormem {

/// How a frame is fitted into a tensor of another size.
enum class ResizeMode : std::uint8_t {
  Stretch,    ///< both axes scaled on their own; the aspect ratio may change
  Letterbox,  ///< one scale for both axes, the whole picture visible, centred, the rest padded
  CropCenter, ///< one scale for both axes, the tensor filled, the picture's overhang cut off evenly
};

/// The order of the three colour channels in the tensor.
enum class ChannelOrder : std::uint8_t { Rgb, Bgr };

/// Where the channel axis goes (N is always 1).
enum class TensorLayout : std::uint8_t { Nchw, Nhwc };

/// What a converter makes of one frame. Inputs: RGBA, BGRA, RGBx, BGRx,
/// RGB, BGR, GRAY8 (three equal channels), NV12 and I420. Outputs: U8
/// (values 0-255, not normalised), F16 and F32 ((x / 255 - mean) / std per
/// channel, `mean` and `std` given in the output's channel order).
struct ConvertSpec {
  PixelFormat input = PixelFormat::RGBA;
  std::uint32_t in_width = 0;
  std::uint32_t in_height = 0;
  std::uint32_t out_width = 0;
  std::uint32_t out_height = 0;
  ResizeMode resize = ResizeMode::Stretch;
  std::uint8_t pad_value = 0; ///< the value, in 0-255 input units, of every channel of a padding pixel
  ChannelOrder order = ChannelOrder::Rgb;
  DType dtype = DType::F32;
  TensorLayout layout = TensorLayout::Nchw;
  std::array<float, 3> mean{0.f, 0.f, 0.f};
  std::array<float, 3> std{1.f, 1.f, 1.f};
  /// YUV inputs: the colour matrix's luma weights of red and blue (BT.601
  /// 0.299 / 0.114, BT.709 0.2126 / 0.0722) and whether the samples span
  /// 0-255 (full range) or 16-235 / 16-240 (limited).
  double kr = 0.2126;
  double kb = 0.0722;
  bool full_range = false;
};

/// Where the source frame landed in the tensor: a source point (x, y), in
/// pixels from the frame's top-left corner, is at tensor point
/// (x * scale_x + offset_x, y * scale_y + offset_y). The picture covers the
/// content rectangle; the rest of the tensor is padding (letterbox only).
/// Detections in tensor coordinates map back with (t - offset) / scale.
struct FrameMapping {
  double scale_x = 1;
  double scale_y = 1;
  double offset_x = 0;
  double offset_y = 0;
  std::uint32_t content_x = 0;
  std::uint32_t content_y = 0;
  std::uint32_t content_width = 0;
  std::uint32_t content_height = 0;
};

/// The planes of one input frame (as many as the format has).
struct FramePlanes {
  std::array<const std::uint8_t *, kMaxPlanes> data{};
  std::array<std::size_t, kMaxPlanes> stride{};
};

/// Converts video frames into one model-input tensor in one pass: sampling
/// (bilinear, pixel centres aligned, edges clamped; exact where a tensor
/// pixel falls on a source pixel), YUV to RGB, channel order, normalisation,
/// layout and type. Immutable once made; convert_rows may run on several
/// threads at once over disjoint row ranges.
class TENSORMEM_API FrameConverter {
public:
  /// Checks `spec`: an input format outside the list, a zero size, an
  /// output dtype other than U8/F16/F32, a std of 0 or not finite, a mean
  /// not finite, or a tensor whose byte size overflows → an error naming
  /// what is wrong.
  static Result<FrameConverter> create(const ConvertSpec &spec);

  const ConvertSpec &spec() const noexcept { return spec_; }
  const FrameMapping &mapping() const noexcept { return mapping_; }
  /// out_width * out_height * 3 * dtype size.
  std::size_t output_bytes() const noexcept { return output_bytes_; }

  /// Writes tensor rows [row_begin, row_end) (clamped to out_height) of the
  /// conversion of `frame` into `out`, the whole tensor of output_bytes().
  /// The planes must hold the spec's frame (the caller validated them).
  void convert_rows(const FramePlanes &frame, std::byte *out, std::uint32_t row_begin,
                    std::uint32_t row_end) const noexcept;

private:
  /// Where one tensor column or row samples its source: the two
  /// neighbouring source indices and the weight of the second.
  struct Tap {
    std::uint32_t i0;
    std::uint32_t i1;
    float weight;
  };

  FrameConverter() = default;

  ConvertSpec spec_;
  FrameMapping mapping_;
  std::size_t output_bytes_ = 0;
  std::vector<Tap> luma_x_, luma_y_;     // per content column / row
  std::vector<Tap> chroma_x_, chroma_y_; // YUV inputs
  std::array<float, 3> scale_{};         // per output channel: value * scale + bias
  std::array<float, 3> bias_{};
  std::array<float, 3> yuv_row_r_{}, yuv_row_g_{}, yuv_row_b_{}; // Y, Cb, Cr weights (0-255 units)
  std::array<float, 3> yuv_offset_{};                            // subtracted from Y, Cb, Cr first

public:
  // What convert_rows works from, read by other implementations of the same
  // conversion (the GL compute path) so that both use one set of numbers.

  /// A source index pair and the weight of the second, as convert_rows samples.
  using SampleTap = Tap;
  /// Per content column (row): the luma (packed RGB) taps.
  const std::vector<Tap> &luma_taps_x() const noexcept { return luma_x_; }
  const std::vector<Tap> &luma_taps_y() const noexcept { return luma_y_; }
  /// Per content column (row): the chroma taps (YUV inputs; empty otherwise).
  const std::vector<Tap> &chroma_taps_x() const noexcept { return chroma_x_; }
  const std::vector<Tap> &chroma_taps_y() const noexcept { return chroma_y_; }
  /// Per output channel: a 0-255 value v is written as v * scale + bias.
  const std::array<float, 3> &channel_scale() const noexcept { return scale_; }
  const std::array<float, 3> &channel_bias() const noexcept { return bias_; }
  /// YUV inputs: R, G, B = row · (Y, Cb, Cr - offsets), before clamping.
  const std::array<float, 3> &yuv_row_r() const noexcept { return yuv_row_r_; }
  const std::array<float, 3> &yuv_row_g() const noexcept { return yuv_row_g_; }
  const std::array<float, 3> &yuv_row_b() const noexcept { return yuv_row_b_; }
  const std::array<float, 3> &yuv_offset() const noexcept { return yuv_offset_; }
};

/// IEEE 754 binary16 of `value`, rounded to nearest even; overflow gives
/// infinity, NaN stays NaN.
TENSORMEM_API std::uint16_t float_to_half(float value) noexcept;

} // namespace tensormem

// SPDX-License-Identifier: Apache-2.0
/* fuzz-convert: tensormem::FrameConverter, the conversion behind
 * tensorconvert (both its CPU path and, through the same taps and
 * constants, its GL path). Each input picks a format (the three the
 * converter does not take included), frame and tensor sizes from 1x1 to
 * 48x48 (0 now and then), a resize mode, a pad value, channel order, dtype
 * (outside U8/F16/F32 too), layout, mean/std (sane values, or any float bit
 * pattern: NaN, infinities, denormals, extremes), colour matrix and range,
 * a stride alignment, and the frame's bytes. Asserted:
 *  - a format, size, dtype, mean or std the converter does not take is
 *    refused by create(), never converted;
 *  - the content rectangle lies inside the tensor and is the whole tensor
 *    unless the mode is letterbox;
 *  - the tensor is exactly out_w x out_h x 3 x dtype bytes, every byte of it
 *    is written (two runs over different fill patterns agree), nothing is
 *    read outside the frame's planes or written outside the tensor
 *    (the planes and the tensor are allocations of exactly their size, for
 *    ASan and valgrind), and the rows converted in pieces equal the rows
 *    converted at once;
 *  - every F32 and F16 value is finite (the negotiation check of issue 28
 *    promises it for every mean/std create() accepts);
 *  - a U8 letterbox padding pixel holds the pad value. */
#include "fuzz_input.hpp"

#include <tensormem/frame_convert.hpp>
#include <tensormem/pixel_format.hpp>

#include <cmath>
#include <cstring>
#include <vector>

using namespace tensormem;
using tensormem_fuzz::FuzzInput;

namespace {

constexpr std::uint32_t kMaxSide = 48;

float pick_float(FuzzInput &in, bool is_std) {
  switch (in.u8() % 4) {
  case 0: return is_std ? 1.f : 0.f; // the defaults
  case 1: return static_cast<float>(in.u8()) / 64.f * (is_std ? 1.f : (in.flag() ? -1.f : 1.f));
  case 2: return in.f32_bits();
  default: return std::ldexp(1.f, static_cast<int>(in.u8() % 256) - 150) * (in.flag() ? -1.f : 1.f);
  }
}

bool accepted_format(PixelFormat f) {
  return f != PixelFormat::NV16 && f != PixelFormat::NV24 && f != PixelFormat::RGBP;
}

void convert(const FrameConverter &conv, const FramePlanes &planes, std::vector<std::byte> &out, std::uint8_t fill,
             const std::vector<std::uint32_t> &cuts) {
  std::memset(out.data(), fill, out.size());
  std::uint32_t begin = 0;
  for (std::uint32_t cut : cuts) {
    conv.convert_rows(planes, out.data(), begin, cut);
    begin = cut;
  }
  // Past the end on purpose: convert_rows clamps to out_height.
  conv.convert_rows(planes, out.data(), begin, conv.spec().out_height + 7);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  FuzzInput in(data, size);
  ConvertSpec spec;
  spec.input = static_cast<PixelFormat>(in.pick(12));
  const bool zero_size = in.u8() == 0;
  spec.in_width = in.range(1, kMaxSide);
  spec.in_height = in.range(1, kMaxSide);
  spec.out_width = zero_size ? 0 : in.range(1, kMaxSide);
  spec.out_height = in.range(1, kMaxSide);
  spec.resize = static_cast<ResizeMode>(in.pick(3));
  spec.pad_value = in.u8();
  spec.order = in.flag() ? ChannelOrder::Bgr : ChannelOrder::Rgb;
  static constexpr DType kTypes[] = {DType::U8, DType::F16, DType::F32, DType::F32, DType::I8, DType::F64};
  spec.dtype = kTypes[in.pick(6)];
  spec.layout = in.flag() ? TensorLayout::Nhwc : TensorLayout::Nchw;
  for (std::size_t c = 0; c < 3; ++c) {
    spec.mean[c] = pick_float(in, false);
    spec.std[c] = pick_float(in, true);
  }
  spec.kr = in.u8() / 255.0;
  spec.kb = in.u8() / 255.0;
  spec.full_range = in.flag();
  static constexpr std::size_t kAligns[] = {1, 2, 4, 8, 16, 64};
  const std::size_t align = kAligns[in.pick(6)];
  std::vector<std::uint32_t> cuts;
  for (std::uint32_t n = in.pick(3), r = 0; n > 0; --n)
    cuts.push_back(r = std::min<std::uint32_t>(spec.out_height, r + in.range(0, spec.out_height)));

  Result<FrameConverter> made = FrameConverter::create(spec);
  const bool valid_type = spec.dtype == DType::U8 || spec.dtype == DType::F16 || spec.dtype == DType::F32;
  bool valid_params = true;
  for (std::size_t c = 0; c < 3; ++c)
    valid_params = valid_params && std::isfinite(spec.mean[c]) && std::isfinite(spec.std[c]) && spec.std[c] != 0.f;
  if (!accepted_format(spec.input) || zero_size || !valid_type || !valid_params) {
    FUZZ_CHECK(!made, "create() accepted format %s, %ux%u -> %ux%u, dtype %s, mean/std %g/%g %g/%g %g/%g",
               format_info(spec.input).name, spec.in_width, spec.in_height, spec.out_width, spec.out_height,
               dtype_name(spec.dtype), spec.mean[0], spec.std[0], spec.mean[1], spec.std[1], spec.mean[2], spec.std[2]);
    return 0;
  }
  if (!made)
    return 0; // outputs that could not be finite, a colour matrix out of range: refused by name
  const FrameConverter &conv = *made;
  const std::size_t elem = dtype_size(spec.dtype);
  FUZZ_CHECK(conv.output_bytes() == std::size_t{spec.out_width} * spec.out_height * 3 * elem, "output_bytes %zu",
             conv.output_bytes());
  const FrameMapping &m = conv.mapping();
  FUZZ_CHECK(m.content_width >= 1 && m.content_height >= 1 && m.content_x + m.content_width <= spec.out_width &&
                 m.content_y + m.content_height <= spec.out_height,
             "content %u,%u %ux%u in a %ux%u tensor", m.content_x, m.content_y, m.content_width, m.content_height,
             spec.out_width, spec.out_height);
  if (spec.resize != ResizeMode::Letterbox)
    FUZZ_CHECK(m.content_width == spec.out_width && m.content_height == spec.out_height,
               "resize mode %d leaves padding", static_cast<int>(spec.resize));

  // The frame: each plane an allocation of its own exact size.
  Result<ImageLayout> layout = image_layout(spec.input, spec.in_width, spec.in_height, align);
  FUZZ_CHECK(static_cast<bool>(layout), "no layout for a %ux%u %s frame", spec.in_width, spec.in_height,
             format_info(spec.input).name);
  std::vector<std::vector<std::uint8_t>> plane_bytes(layout->n_planes);
  FramePlanes planes;
  for (std::size_t p = 0; p < layout->n_planes; ++p) {
    plane_bytes[p].resize(layout->stride[p] * layout->rows[p]);
    in.fill(plane_bytes[p].data(), plane_bytes[p].size());
    planes.data[p] = plane_bytes[p].data();
    planes.stride[p] = layout->stride[p];
  }

  std::vector<std::byte> a(conv.output_bytes()), b(conv.output_bytes());
  convert(conv, planes, a, 0x00, cuts);
  convert(conv, planes, b, 0xff, {});
  FUZZ_CHECK(std::memcmp(a.data(), b.data(), a.size()) == 0,
             "tensor bytes left unwritten or rows in pieces differ from rows at once (%s, %ux%u -> %ux%u)",
             format_info(spec.input).name, spec.in_width, spec.in_height, spec.out_width, spec.out_height);

  const std::size_t values = conv.output_bytes() / elem;
  if (spec.dtype == DType::F32) {
    for (std::size_t i = 0; i < values; ++i) {
      float v;
      std::memcpy(&v, a.data() + i * 4, 4);
      FUZZ_CHECK(std::isfinite(v), "value %zu is %g (mean %g %g %g, std %g %g %g)", i, v, spec.mean[0], spec.mean[1],
                 spec.mean[2], spec.std[0], spec.std[1], spec.std[2]);
    }
  } else if (spec.dtype == DType::F16) {
    for (std::size_t i = 0; i < values; ++i) {
      std::uint16_t h;
      std::memcpy(&h, a.data() + i * 2, 2);
      FUZZ_CHECK((h & 0x7c00) != 0x7c00, "float16 value %zu is 0x%04x (mean %g %g %g, std %g %g %g)", i, h,
                 spec.mean[0], spec.mean[1], spec.mean[2], spec.std[0], spec.std[1], spec.std[2]);
    }
  } else if (spec.resize == ResizeMode::Letterbox && (m.content_x > 0 || m.content_y > 0)) {
    // Tensor pixel (0, 0) is padding: every channel holds the pad value.
    for (std::size_t c = 0; c < 3; ++c) {
      const std::size_t at =
          spec.layout == TensorLayout::Nhwc ? c : c * std::size_t{spec.out_width} * spec.out_height;
      FUZZ_CHECK(static_cast<std::uint8_t>(a[at]) == spec.pad_value, "padding channel %zu is %u, pad_value %u", c,
                 static_cast<unsigned>(a[at]), spec.pad_value);
    }
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// The GL compute path of FrameConverter: one dispatch per frame on the GL
// worker, reading the frame from one shader storage buffer and writing the
// tensor into another. Everything that decides a value (taps, channel scale
// and bias, colour matrix) comes from the FrameConverter, so the two paths
// differ only in float rounding.
#include "gl_compute.hpp"
#include "gl_task.hpp"

#include <tensormem/gl_convert.hpp>

#include <epoxy/gl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

namespace tensormem {
namespace {

constexpr std::uint32_t kLocalSize = 64;    // invocations per work group (x)
constexpr std::uint32_t kMaxGroups = 65535; // per dispatch axis, the least GL guarantees

/// GLSL text of `value` that the compiler turns back into exactly that float.
std::string float_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  char text[48];
  std::snprintf(text, sizeof text, "uintBitsToFloat(0x%08xu)", bits);
  return text;
}

void define(std::string &out, const char *name, const std::string &value) {
  out += "#define ";
  out += name;
  out += ' ';
  out += value;
  out += '\n';
}

void define(std::string &out, const char *name, std::uint64_t value) { define(out, name, std::to_string(value) + "u"); }

/// Byte positions of R, G, B in a packed pixel and its size; false for YUV.
bool packed_layout(PixelFormat format, std::uint32_t *bpp, std::array<std::uint32_t, 3> *at) {
  switch (format) {
  case PixelFormat::RGBA:
  case PixelFormat::RGBx: *bpp = 4, *at = {0, 1, 2}; return true;
  case PixelFormat::BGRA:
  case PixelFormat::BGRx: *bpp = 4, *at = {2, 1, 0}; return true;
  case PixelFormat::RGB: *bpp = 3, *at = {0, 1, 2}; return true;
  case PixelFormat::BGR: *bpp = 3, *at = {2, 1, 0}; return true;
  case PixelFormat::GRAY8: *bpp = 1, *at = {0, 0, 0}; return true;
  default: return false;
  }
}

// The body of the pass. The defines above it fix everything but the frame's
// plane offsets and strides, which change per buffer.
constexpr const char *kBody = R"GLSL(
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Frame { uint frame[]; };
layout(std430, binding = 1) writeonly buffer Tensor { uint tensor[]; };
layout(std430, binding = 2) readonly buffer Taps { uvec4 taps[]; };
uniform uvec3 plane_offset;
uniform uvec3 plane_stride;
// The tensor's first word within the bound range (the range starts at the
// output offset rounded down to the SSBO offset alignment).
uniform uint tensor_base;

uint byte_at(uint at) { return (frame[at >> 2u] >> ((at & 3u) << 3u)) & 0xffu; }

float lerp1(float a, float b, float t) { return a + (b - a) * t; }

// Bilinear sample of one 8-bit channel: `step` bytes between neighbours.
float sample_plane(uint base, uint stride, uint step, uvec4 tx, uvec4 ty) {
  float wx = uintBitsToFloat(tx.z);
  uint r0 = base + ty.x * stride;
  uint r1 = base + ty.y * stride;
  float top = lerp1(float(byte_at(r0 + tx.x * step)), float(byte_at(r0 + tx.y * step)), wx);
  float bottom = lerp1(float(byte_at(r1 + tx.x * step)), float(byte_at(r1 + tx.y * step)), wx);
  return lerp1(top, bottom, uintBitsToFloat(ty.z));
}

// R, G, B (0-255) of tensor pixel (x, y); the pad value outside the picture.
vec3 rgb_at(uint x, uint y) {
  if (x < CONTENT_X || x >= CONTENT_X + CONTENT_W || y < CONTENT_Y || y >= CONTENT_Y + CONTENT_H)
    return vec3(PAD);
  uint j = x - CONTENT_X;
  uint i = y - CONTENT_Y;
  uvec4 tx = taps[j];
  uvec4 ty = taps[CONTENT_W + i];
#if YUV
  uvec4 cx = taps[CONTENT_W + CONTENT_H + j];
  uvec4 cy = taps[2u * CONTENT_W + CONTENT_H + i];
  float yv = sample_plane(plane_offset.x, plane_stride.x, 1u, tx, ty) - Y_OFFSET;
#if NV12
  float uv = sample_plane(plane_offset.y, plane_stride.y, 2u, cx, cy) - C_OFFSET;
  float vv = sample_plane(plane_offset.y + 1u, plane_stride.y, 2u, cx, cy) - C_OFFSET;
#else
  float uv = sample_plane(plane_offset.y, plane_stride.y, 1u, cx, cy) - C_OFFSET;
  float vv = sample_plane(plane_offset.z, plane_stride.z, 1u, cx, cy) - C_OFFSET;
#endif
  return vec3(clamp(R_Y * yv + R_V * vv, 0.0, 255.0), clamp(G_Y * yv + G_U * uv + G_V * vv, 0.0, 255.0),
              clamp(B_Y * yv + B_U * uv, 0.0, 255.0));
#else
  return vec3(sample_plane(plane_offset.x + R_AT, plane_stride.x, BPP, tx, ty),
              sample_plane(plane_offset.x + G_AT, plane_stride.x, BPP, tx, ty),
              sample_plane(plane_offset.x + B_AT, plane_stride.x, BPP, tx, ty));
#endif
}

// Tensor channel c of a pixel: normalised for float types, as is for uint8.
float channel_value(vec3 rgb, uint c) {
  float v = rgb[BGR ? 2u - c : c];
#if DTYPE_U8
  return v;
#else
  float scale = c == 0u ? SCALE0 : (c == 1u ? SCALE1 : SCALE2);
  float bias = c == 0u ? BIAS0 : (c == 1u ? BIAS1 : BIAS2);
  return v * scale + bias;
#endif
}

void main() {
  uint id = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * (gl_NumWorkGroups.x * 64u);
  if (id >= INVOCATIONS)
    return;
#if DTYPE_F32
  // One pixel: its three elements, each a whole word.
  vec3 rgb = rgb_at(id % OUT_W, id / OUT_W);
  for (uint c = 0u; c < 3u; ++c)
    tensor[tensor_base + (NCHW ? c * PLANE + id : id * 3u + c)] = floatBitsToUint(channel_value(rgb, c));
#else
  // One word of PER_WORD elements (uint8: 4, float16: 2), each sampled for
  // its own pixel and channel, so that no two invocations share a word.
  uint word = 0u;
  vec2 halves = vec2(0.0);
  uint pixel = 0xffffffffu;
  vec3 rgb = vec3(0.0);
  for (uint k = 0u; k < PER_WORD; ++k) {
    uint e = id * PER_WORD + k;
    if (e >= ELEMENTS)
      break;
    uint p = NCHW ? e % PLANE : e / 3u;
    uint c = NCHW ? e / PLANE : e % 3u;
    if (p != pixel) {
      rgb = rgb_at(p % OUT_W, p / OUT_W);
      pixel = p;
    }
    float v = channel_value(rgb, c);
#if DTYPE_U8
    word |= uint(clamp(v, 0.0, 255.0) + 0.5) << (8u * k);
#else
    halves[k] = v;
#endif
  }
#if DTYPE_F16
  word = packHalf2x16(halves);
#endif
  tensor[tensor_base + id] = word;
#endif
}
)GLSL";

} // namespace

GlFrameConverter::GlFrameConverter(std::shared_ptr<GlWorker> worker, const FrameConverter &converter) noexcept
    : worker_(std::move(worker)), converter_(converter) {}

GlFrameConverter::~GlFrameConverter() {
  if (!worker_ || (!program_ && !taps_))
    return;
  const GLuint program = program_, taps = taps_;
  // After shutdown the context took both with it.
  (void)worker_->post([program, taps] {
    if (program)
      glDeleteProgram(program);
    if (taps)
      glDeleteBuffers(1, &taps);
  });
}

Result<std::shared_ptr<GlFrameConverter>> GlFrameConverter::create(std::shared_ptr<GlWorker> worker,
                                                                   const FrameConverter &converter) {
  if (!worker)
    return Error::invalid_argument("GlFrameConverter: no GL worker");
  const GlInfo &info = worker->info();
  if (!gl_compute::available(info))
    return Error::not_implemented("GlFrameConverter: compute shaders need desktop GL 4.3 or GLES 3.1; the GL worker "
                                  "has " +
                                  info.version);
  const ConvertSpec &spec = converter.spec();
  const FrameMapping &m = converter.mapping();
  const std::uint64_t plane = std::uint64_t{spec.out_width} * spec.out_height;
  const std::uint64_t elements = plane * 3;
  const std::size_t element_size = dtype_size(spec.dtype);
  const std::uint64_t bytes = elements * element_size;
  // Word indices of the tensor and element indices must fit the shader's uint.
  if (elements > std::numeric_limits<std::uint32_t>::max() / 4 || bytes > std::numeric_limits<GLsizeiptr>::max())
    return Error::invalid_shape("GlFrameConverter: a " + std::to_string(spec.out_width) + "x" +
                                std::to_string(spec.out_height) + " tensor is beyond the shader's 32-bit indices");

  std::shared_ptr<GlFrameConverter> self;
  try {
    self.reset(new GlFrameConverter(worker, converter));
  } catch (const std::bad_alloc &) {
    return Error::io(ENOMEM, "GlFrameConverter: allocating");
  }
  self->padded_bytes_ = static_cast<std::size_t>((bytes + 3) / 4 * 4);
  const bool f32 = spec.dtype == DType::F32;
  const std::uint32_t per_word = spec.dtype == DType::U8 ? 4 : 2;
  self->invocations_ = f32 ? plane : (elements + per_word - 1) / per_word;
  const bool yuv = spec.input == PixelFormat::NV12 || spec.input == PixelFormat::I420;

  std::string &src = self->source_;
  src = gl_compute::glsl_header(info);
  define(src, "OUT_W", spec.out_width);
  define(src, "PLANE", plane);
  define(src, "ELEMENTS", elements);
  define(src, "INVOCATIONS", self->invocations_);
  define(src, "PER_WORD", per_word);
  define(src, "CONTENT_X", m.content_x);
  define(src, "CONTENT_Y", m.content_y);
  define(src, "CONTENT_W", m.content_width);
  define(src, "CONTENT_H", m.content_height);
  define(src, "PAD", float_bits(static_cast<float>(spec.pad_value)));
  define(src, "NCHW", spec.layout == TensorLayout::Nchw ? "true" : "false");
  define(src, "BGR", spec.order == ChannelOrder::Bgr ? "true" : "false");
  define(src, "DTYPE_U8", spec.dtype == DType::U8 ? "1" : "0");
  define(src, "DTYPE_F16", spec.dtype == DType::F16 ? "1" : "0");
  define(src, "DTYPE_F32", f32 ? "1" : "0");
  define(src, "YUV", yuv ? "1" : "0");
  define(src, "NV12", spec.input == PixelFormat::NV12 ? "1" : "0");
  const char *scale_names[3] = {"SCALE0", "SCALE1", "SCALE2"};
  const char *bias_names[3] = {"BIAS0", "BIAS1", "BIAS2"};
  for (std::size_t c = 0; c < 3; ++c) {
    define(src, scale_names[c], float_bits(converter.channel_scale()[c]));
    define(src, bias_names[c], float_bits(converter.channel_bias()[c]));
  }
  if (yuv) {
    define(src, "Y_OFFSET", float_bits(converter.yuv_offset()[0]));
    define(src, "C_OFFSET", float_bits(converter.yuv_offset()[1]));
    define(src, "R_Y", float_bits(converter.yuv_row_r()[0]));
    define(src, "R_V", float_bits(converter.yuv_row_r()[2]));
    define(src, "G_Y", float_bits(converter.yuv_row_g()[0]));
    define(src, "G_U", float_bits(converter.yuv_row_g()[1]));
    define(src, "G_V", float_bits(converter.yuv_row_g()[2]));
    define(src, "B_Y", float_bits(converter.yuv_row_b()[0]));
    define(src, "B_U", float_bits(converter.yuv_row_b()[1]));
  } else {
    std::uint32_t bpp = 0;
    std::array<std::uint32_t, 3> at{};
    if (!packed_layout(spec.input, &bpp, &at))
      return Error::invalid_argument(std::string("GlFrameConverter: input format ") + format_info(spec.input).name +
                                     " is not one it reads");
    define(src, "BPP", bpp);
    define(src, "R_AT", at[0]);
    define(src, "G_AT", at[1]);
    define(src, "B_AT", at[2]);
  }
  src += kBody;

  // The taps, one uvec4 each (i0, i1, weight bits, unused): luma columns,
  // luma rows, then for YUV chroma columns and rows.
  std::vector<std::uint32_t> table;
  auto append = [&table](const std::vector<FrameConverter::SampleTap> &taps) {
    for (const FrameConverter::SampleTap &t : taps) {
      std::uint32_t w;
      std::memcpy(&w, &t.weight, sizeof w);
      table.insert(table.end(), {t.i0, t.i1, w, 0u});
    }
  };
  try {
    append(converter.luma_taps_x());
    append(converter.luma_taps_y());
    append(converter.chroma_taps_x());
    append(converter.chroma_taps_y());
  } catch (const std::bad_alloc &) {
    return Error::io(ENOMEM, "GlFrameConverter: allocating the tap table");
  }

  GlFrameConverter *raw = self.get();
  Result<void> built = result_from_worker<void>(
      [&](std::function<void()> task) { return worker->submit(std::move(task)); },
      [&]() -> Result<void> {
        while (glGetError() != GL_NO_ERROR) {
        }
        GLint max_block = 0;
        glGetIntegerv(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &max_block);
        GLint ssbo_align = 0;
        glGetIntegerv(GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT, &ssbo_align);
        raw->max_block_ = max_block > 0 ? static_cast<std::size_t>(max_block) : 0;
        raw->range_align_ = ssbo_align > 0 ? static_cast<std::size_t>(ssbo_align) : 256;
        if (max_block > 0 && raw->padded_bytes_ > static_cast<std::size_t>(max_block))
          return Error::invalid_shape("GlFrameConverter: the tensor's " + std::to_string(raw->padded_bytes_) +
                                      " bytes exceed GL_MAX_SHADER_STORAGE_BLOCK_SIZE (" + std::to_string(max_block) +
                                      ")");
        Result<GLuint> program = gl_compute::build_program(raw->source_, "GlFrameConverter");
        if (!program)
          return std::move(program).error();
        raw->program_ = *program;
        raw->offset_location_ = glGetUniformLocation(raw->program_, "plane_offset");
        raw->stride_location_ = glGetUniformLocation(raw->program_, "plane_stride");
        raw->base_location_ = glGetUniformLocation(raw->program_, "tensor_base");
        glGenBuffers(1, &raw->taps_);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, raw->taps_);
        glBufferData(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(table.size() * sizeof(std::uint32_t)),
                     table.data(), GL_STATIC_DRAW);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, 0);
        const GLenum err = glGetError();
        if (err != GL_NO_ERROR)
          return Error::device("GlFrameConverter: uploading the tap table: GL error " + std::to_string(err));
        return {};
      },
      "GlFrameConverter::create");
  if (!built)
    return std::move(built).error();
  return self;
}

Result<std::size_t> GlFrameConverter::source_extent(const GlFrameSource &source) const {
  const ConvertSpec &spec = converter_.spec();
  const std::uint64_t w = spec.in_width, h = spec.in_height, cw = (w + 1) / 2, ch = (h + 1) / 2;
  struct Extent {
    std::uint64_t rows, row_bytes;
  };
  std::array<Extent, 3> planes{};
  std::size_t n = 1;
  std::uint32_t bpp = 0;
  std::array<std::uint32_t, 3> at{};
  if (packed_layout(spec.input, &bpp, &at)) {
    planes[0] = {h, w * bpp};
  } else if (spec.input == PixelFormat::NV12) {
    planes[0] = {h, w}, planes[1] = {ch, cw * 2}, n = 2;
  } else {
    planes[0] = {h, w}, planes[1] = {ch, cw}, planes[2] = {ch, cw}, n = 3;
  }
  std::uint64_t end = 0;
  for (std::size_t p = 0; p < n; ++p) {
    const std::uint64_t stride = source.stride[p], offset = source.offset[p];
    if (stride < planes[p].row_bytes || stride > std::numeric_limits<std::uint32_t>::max() ||
        offset > std::numeric_limits<std::uint32_t>::max())
      return Error::invalid_argument("GlFrameConverter: plane " + std::to_string(p) + " stride " +
                                     std::to_string(stride) + " / offset " + std::to_string(offset) +
                                     " do not fit a row or the shader's 32-bit offsets");
    end = std::max(end, offset + stride * (planes[p].rows - 1) + planes[p].row_bytes);
  }
  if (end > std::numeric_limits<std::uint32_t>::max())
    return Error::invalid_argument("GlFrameConverter: the frame reaches past the shader's 32-bit offsets");
  return static_cast<std::size_t>(end);
}

Result<void> GlFrameConverter::convert(const GlFrameSource &source, std::uint32_t output, std::size_t output_size,
                                       std::size_t output_offset) {
  if (source.buffer == 0 || output == 0)
    return Error::invalid_argument("GlFrameConverter::convert: GL buffer name 0");
  if (output_offset % 4 != 0)
    return Error::invalid_argument("GlFrameConverter::convert: output offset " + std::to_string(output_offset) +
                                   " is not a whole 32-bit word");
  if (output_offset > output_size || output_size - output_offset < padded_bytes_)
    return Error::invalid_argument("GlFrameConverter::convert: the output buffer holds " + std::to_string(output_size) +
                                   " bytes, the tensor needs " + std::to_string(padded_bytes_) + " from byte " +
                                   std::to_string(output_offset));
  // The bound range starts at the offset rounded down to the SSBO offset
  // alignment; the shader adds the rest in words.
  const std::size_t range_start = output_offset / range_align_ * range_align_;
  const std::size_t range_bytes = output_offset - range_start + padded_bytes_;
  if (max_block_ && range_bytes > max_block_)
    return Error::invalid_argument("GlFrameConverter::convert: a range of " + std::to_string(range_bytes) +
                                   " bytes exceeds GL_MAX_SHADER_STORAGE_BLOCK_SIZE (" + std::to_string(max_block_) +
                                   ")");
  Result<std::size_t> extent = source_extent(source);
  if (!extent)
    return std::move(extent).error();
  // The shader reads whole words: the last byte's word must lie in the buffer.
  if ((*extent + 3) / 4 * 4 > source.size)
    return Error::invalid_argument("GlFrameConverter::convert: the frame's planes reach byte " +
                                   std::to_string(*extent) + " (in whole words) of a " + std::to_string(source.size) +
                                   "-byte buffer");
  const std::uint64_t groups = (invocations_ + kLocalSize - 1) / kLocalSize;
  const auto gx = static_cast<GLuint>(std::min<std::uint64_t>(groups, kMaxGroups));
  const auto gy = static_cast<GLuint>((groups + gx - 1) / gx);
  return result_from_worker<void>(
      [&](std::function<void()> task) { return worker_->submit(std::move(task)); },
      [&]() -> Result<void> {
        while (glGetError() != GL_NO_ERROR) {
        }
        glUseProgram(program_);
        glUniform3ui(offset_location_, static_cast<GLuint>(source.offset[0]), static_cast<GLuint>(source.offset[1]),
                     static_cast<GLuint>(source.offset[2]));
        glUniform3ui(stride_location_, static_cast<GLuint>(source.stride[0]), static_cast<GLuint>(source.stride[1]),
                     static_cast<GLuint>(source.stride[2]));
        glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, source.buffer);
        glUniform1ui(base_location_, static_cast<GLuint>((output_offset - range_start) / 4));
        glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 1, output, static_cast<GLintptr>(range_start),
                          static_cast<GLsizeiptr>(range_bytes));
        glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 2, taps_);
        glDispatchCompute(gx, gy, 1);
        // CPU maps (persistent or not) and later GL reads of the buffers see
        // the shader's writes once the caller's fence has signalled.
        glMemoryBarrier(gl_compute::storage_write_barriers(worker_->info()));
        for (GLuint b = 0; b < 3; ++b)
          glBindBufferBase(GL_SHADER_STORAGE_BUFFER, b, 0);
        glUseProgram(0);
        const GLenum err = glGetError();
        if (err != GL_NO_ERROR)
          return Error::device("GlFrameConverter::convert: GL error " + std::to_string(err) + " dispatching");
        return {};
      },
      "GlFrameConverter::convert");
}

} // namespace tensormem

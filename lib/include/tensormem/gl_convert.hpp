// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/frame_convert.hpp>
#include <tensormem/gl_worker.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tensormem {

/// One input frame held in a GL buffer of the converter's worker: plane p
/// starts at byte `offset[p]` of the buffer and its rows are `stride[p]`
/// bytes apart.
struct GlFrameSource {
  std::uint32_t buffer = 0; ///< GL buffer name on the worker
  std::size_t size = 0;     ///< the buffer's bytes
  std::array<std::size_t, kMaxPlanes> offset{};
  std::array<std::size_t, kMaxPlanes> stride{};
};

/// FrameConverter's conversion as one GL compute pass on a GL worker: the
/// input frame is read from a GL buffer bound as a shader storage buffer and
/// the tensor written into another, with the sampling taps, channel scales
/// and colour matrix FrameConverter computed (so both paths use one set of
/// numbers). Needs compute shaders: desktop GL 4.3 or GLES 3.1.
///
/// Each shader invocation writes whole 32-bit words, so the output buffer
/// must hold output_bytes() rounded up to 4 (padded_output_bytes()); the
/// bytes past output_bytes() in the last word are written as zero.
class TENSORMEM_API GlFrameConverter {
public:
  /// Compiles the pass for `converter`'s spec on `worker`. NotImplemented
  /// where the worker's GL has no compute shaders (naming its version);
  /// InvalidShape where an offset or the tensor does not fit the shader's
  /// 32-bit indices; Device with the compiler's log when the shader fails.
  static Result<std::shared_ptr<GlFrameConverter>> create(std::shared_ptr<GlWorker> worker,
                                                          const FrameConverter &converter);
  /// Deletes the program and its tables on the worker (queued; nothing to do
  /// once the worker has shut down).
  ~GlFrameConverter();
  GlFrameConverter(const GlFrameConverter &) = delete;
  GlFrameConverter &operator=(const GlFrameConverter &) = delete;

  const FrameConverter &converter() const noexcept { return converter_; }
  const std::shared_ptr<GlWorker> &worker() const noexcept { return worker_; }
  /// output_bytes() rounded up to a whole 32-bit word.
  std::size_t padded_output_bytes() const noexcept { return padded_bytes_; }
  /// Bytes of the input frame the shader reads: the furthest plane byte of
  /// a frame laid out with `source`'s offsets and strides.
  Result<std::size_t> source_extent(const GlFrameSource &source) const;

  /// Queues the conversion of `source` into GL buffer `output` (of
  /// `output_size` bytes), the tensor starting at byte `output_offset` (a
  /// window of a larger buffer: one slot of a batch), on the worker and
  /// returns once it is queued, with a barrier after it so that CPU maps and
  /// other GL readers see the write. Only padded_output_bytes() from the
  /// offset are bound and written. The caller fences the write
  /// (GlWorker::fence_write). InvalidArgument for a source whose planes
  /// reach past its buffer, an offset that is not a multiple of 4, fewer
  /// than padded_output_bytes() after it, or a buffer name 0.
  Result<void> convert(const GlFrameSource &source, std::uint32_t output, std::size_t output_size,
                       std::size_t output_offset = 0);

  /// The GLSL source of the pass (for tests and debugging).
  const std::string &shader_source() const noexcept { return source_; }

private:
  GlFrameConverter(std::shared_ptr<GlWorker> worker, const FrameConverter &converter) noexcept;

  std::shared_ptr<GlWorker> worker_;
  FrameConverter converter_;
  std::size_t padded_bytes_ = 0;
  std::uint64_t invocations_ = 0;
  std::string source_;
  std::uint32_t program_ = 0;
  std::uint32_t taps_ = 0;
  int offset_location_ = -1;
  int stride_location_ = -1;
  int base_location_ = -1;
  std::size_t range_align_ = 256; // GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT
  std::size_t max_block_ = 0;     // GL_MAX_SHADER_STORAGE_BLOCK_SIZE, 0: unknown
};

} // namespace tensormem

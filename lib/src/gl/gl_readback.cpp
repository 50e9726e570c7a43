// SPDX-License-Identifier: Apache-2.0
// GstGL interop: a texture of the share group read into a PBO, for
// tensorupload's memory:GLMemory input, by one of four paths (a pack-buffer
// glReadPixels or glGetTextureSubImage, a compute shader, a glReadPixels
// into the PBO's CPU mapping); the worker picks the fastest its context has.
#include "gl_compute.hpp"

#include <tensormem/gl_worker.hpp>

#include <epoxy/gl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

namespace tensormem {

namespace {

std::string hex(unsigned value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%04x", value);
  return text;
}

/// Checked: the bytes from the PBO's start to the end of the last row.
Result<std::size_t> rows_end(const GlWorker::TextureRegion &r) {
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  const std::size_t row_bytes = static_cast<std::size_t>(r.width) * 4;
  if (r.width == 0 || r.height == 0)
    return Error::invalid_argument("read_texture_into: an empty region");
  if (r.row_stride < row_bytes || r.row_stride % 4 != 0)
    return Error::invalid_argument("read_texture_into: row stride " + std::to_string(r.row_stride) +
                                   " is not a multiple of 4 of at least " + std::to_string(row_bytes) + " bytes");
  if (r.offset % 4 != 0)
    return Error::invalid_argument("read_texture_into: offset " + std::to_string(r.offset) + " is not a multiple of 4");
  const std::size_t rows = r.height - 1u;
  if (rows > 0 && r.row_stride > (max - row_bytes) / rows)
    return Error::invalid_argument("read_texture_into: the region's size overflows");
  const std::size_t span = r.row_stride * rows + row_bytes;
  if (r.offset > max - span)
    return Error::invalid_argument("read_texture_into: the region's end overflows");
  return r.offset + span;
}

/* The compute readback: one invocation a texel, its RGBA8 value (unorm
 * floats from texelFetch, packed back exactly by packUnorm4x8: byte 0 is R)
 * stored as one word of the PBO bound as shader storage. */
constexpr const char *kReadBody = R"GLSL(
layout(local_size_x = 16, local_size_y = 4) in;
layout(binding = 0) uniform highp sampler2D src;
layout(std430, binding = 0) writeonly buffer Pbo { uint words[]; };
uniform uvec4 geometry; // width, height, row stride in words, first word
void main() {
  uvec2 p = gl_GlobalInvocationID.xy;
  if (p.x >= geometry.x || p.y >= geometry.y)
    return;
  words[geometry.w + p.y * geometry.z + p.x] = packUnorm4x8(texelFetch(src, ivec2(p), 0));
}
)GLSL";

/* The compute program and a nearest sampler (texelFetch needs a complete
 * texture; GstGL's have no mipmaps, and a bound sampler object decides
 * completeness) of the worker thread's context, made on first use and gone
 * with the context. One context a worker thread, so thread-local. */
struct ComputeRead {
  GLuint program = 0;
  GLuint sampler = 0;
  GLint geometry = -1;
};
thread_local ComputeRead t_compute;

Result<ComputeRead *> compute_read(const GlInfo &info) {
  if (t_compute.program)
    return &t_compute;
  Result<GLuint> program =
      gl_compute::build_program(std::string(gl_compute::glsl_header(info)) + kReadBody, "read_texture_into");
  if (!program)
    return std::move(program).error();
  t_compute.program = *program;
  t_compute.geometry = glGetUniformLocation(*program, "geometry");
  glGenSamplers(1, &t_compute.sampler);
  glSamplerParameteri(t_compute.sampler, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glSamplerParameteri(t_compute.sampler, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  return &t_compute;
}

/* The texture as this context's read framebuffer; "" or why not. */
std::string attach_for_reading(GLuint texture, GLuint *fbo) {
  glGenFramebuffers(1, fbo);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, *fbo);
  glFramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, texture, 0);
  const GLenum status = glCheckFramebufferStatus(GL_READ_FRAMEBUFFER);
  if (status == GL_FRAMEBUFFER_COMPLETE)
    return "";
  return "texture " + std::to_string(texture) + " is not readable through a framebuffer (status " + hex(status) + ")";
}

void detach(GLuint *fbo) {
  glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
  glDeleteFramebuffers(1, fbo);
}

/* Rows of `row_texels` (0: tight) for the pack operations. */
void pack_rows(const GlWorker::TextureRegion &r) {
  const std::size_t row_texels = r.row_stride / 4;
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  // Tight rows as 0: drivers take their fast (memcpy) path only then.
  glPixelStorei(GL_PACK_ROW_LENGTH, row_texels == r.width ? 0 : static_cast<GLint>(row_texels));
}

} // namespace

bool GlWorker::has_texture_read(TextureRead path) const noexcept {
  const GlInfo &gl = info();
  switch (path) {
  case TextureRead::Auto:
  case TextureRead::PackReadPixels:
  case TextureRead::MappedReadPixels: return true;
  case TextureRead::PackGetTexImage:
    return gl.api == GlApi::DesktopCore &&
           (gl.major * 10 + gl.minor >= 45 || epoxy_has_gl_extension("GL_ARB_get_texture_sub_image"));
  case TextureRead::Compute: return gl_compute::available(gl);
  }
  return false;
}

const char *GlWorker::texture_read_name(TextureRead path) noexcept {
  switch (path) {
  case TextureRead::Auto: return "auto";
  case TextureRead::PackReadPixels: return "readpixels";
  case TextureRead::PackGetTexImage: return "gettexture";
  case TextureRead::Compute: return "compute";
  case TextureRead::MappedReadPixels: return "mapped";
  }
  return "?";
}

GlWorker::TextureRead GlWorker::texture_read_path() const noexcept {
  if (const char *forced = std::getenv("TENSORMEM_GL_TEXTURE_READ")) {
    for (TextureRead path : {TextureRead::PackReadPixels, TextureRead::PackGetTexImage, TextureRead::Compute,
                             TextureRead::MappedReadPixels})
      if (std::strcmp(forced, texture_read_name(path)) == 0 && has_texture_read(path))
        return path;
  }
  // Measured on Mesa llvmpipe (docs/performance.md): the pack readbacks and
  // the mapped one within noise of each other, the compute pass ten times
  // slower; hardware not measured yet, so the path every GL has.
  return TextureRead::PackReadPixels;
}

Result<void> GlWorker::read_texture_into(PboStorage &pbo, const TextureRegion &region) {
  // A refused region still takes the sync it was handed (never leaked).
  auto refuse = [&](Error error) -> Result<void> {
    if (region.wait_sync)
      (void)submit([sync = static_cast<GLsync>(region.wait_sync)] { glDeleteSync(sync); });
    return error;
  };
  if (region.texture == 0)
    return refuse(Error::invalid_argument("read_texture_into: texture name 0"));
  Result<std::size_t> end = rows_end(region);
  if (!end)
    return refuse(std::move(end).error());
  if (*end > pbo.size_bytes())
    return refuse(Error::invalid_argument("read_texture_into: " + std::to_string(region.width) + "x" +
                                          std::to_string(region.height) + " texels need " + std::to_string(*end) +
                                          " bytes, the PBO has " + std::to_string(pbo.size_bytes())));
  const TextureRead path = region.path == TextureRead::Auto ? texture_read_path() : region.path;
  if (!has_texture_read(path))
    return refuse(Error::not_implemented(std::string("read_texture_into: the ") + texture_read_name(path) +
                                         " path needs what this context (" + info().version + ") lacks"));
  // The shader's word indices are 32-bit.
  if (path == TextureRead::Compute && *end / 4 > std::numeric_limits<std::uint32_t>::max())
    return refuse(Error::invalid_argument("read_texture_into: the region reaches past 32-bit word indices"));

  std::string failure;
  Result<void> ran = submit([&] {
    while (glGetError() != GL_NO_ERROR) {
    }
    if (region.wait_sync) {
      auto sync = static_cast<GLsync>(region.wait_sync);
      glWaitSync(sync, 0, GL_TIMEOUT_IGNORED);
      glDeleteSync(sync);
    }
    const auto w = static_cast<GLsizei>(region.width), h = static_cast<GLsizei>(region.height);
    const char *call = texture_read_name(path);
    switch (path) {
    case TextureRead::Auto: // resolved above
    case TextureRead::PackReadPixels: {
      GLuint fbo = 0;
      failure = attach_for_reading(region.texture, &fbo);
      if (failure.empty()) {
        glBindBuffer(GL_PIXEL_PACK_BUFFER, pbo.buffer_id());
        pack_rows(region);
        glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, reinterpret_cast<void *>(region.offset));
        glPixelStorei(GL_PACK_ROW_LENGTH, 0);
        glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
      }
      detach(&fbo);
      call = "glReadPixels into a pack buffer";
      break;
    }
    case TextureRead::PackGetTexImage: {
      glBindBuffer(GL_PIXEL_PACK_BUFFER, pbo.buffer_id());
      pack_rows(region);
      glGetTextureSubImage(region.texture, 0, 0, 0, 0, w, h, 1, GL_RGBA, GL_UNSIGNED_BYTE,
                           static_cast<GLsizei>(std::min<std::size_t>(pbo.size_bytes() - region.offset,
                                                                      std::numeric_limits<GLsizei>::max())),
                           reinterpret_cast<void *>(region.offset));
      glPixelStorei(GL_PACK_ROW_LENGTH, 0);
      glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
      call = "glGetTextureSubImage into a pack buffer";
      break;
    }
    case TextureRead::Compute: {
      Result<ComputeRead *> compute = compute_read(info());
      if (!compute) {
        failure = compute.error().message();
        break;
      }
      glUseProgram((*compute)->program);
      glUniform4ui((*compute)->geometry, region.width, region.height, static_cast<GLuint>(region.row_stride / 4),
                   static_cast<GLuint>(region.offset / 4));
      glActiveTexture(GL_TEXTURE0);
      glBindTexture(GL_TEXTURE_2D, region.texture);
      glBindSampler(0, (*compute)->sampler);
      glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, pbo.buffer_id());
      glDispatchCompute((region.width + 15) / 16, (region.height + 3) / 4, 1);
      glMemoryBarrier(gl_compute::storage_write_barriers(info()));
      glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, 0);
      glBindSampler(0, 0);
      glBindTexture(GL_TEXTURE_2D, 0);
      glUseProgram(0);
      call = "the compute readback";
      break;
    }
    case TextureRead::MappedReadPixels: {
      // Inline on this thread: the persistent address, or a glMapBufferRange.
      Result<BackendMapping> mapped = ops_->map_buffer(pbo.buffer_id(), pbo.size_bytes(), CpuAccess::Write);
      if (!mapped) {
        failure = "mapping PBO " + std::to_string(pbo.buffer_id()) + ": " + mapped.error().message();
        break;
      }
      GLuint fbo = 0;
      failure = attach_for_reading(region.texture, &fbo);
      if (failure.empty()) {
        pack_rows(region);
        glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, mapped->data + region.offset);
        glPixelStorei(GL_PACK_ROW_LENGTH, 0);
      }
      detach(&fbo);
      (void)ops_->unmap_buffer(pbo.buffer_id());
      call = "glReadPixels into the PBO's mapping";
      break;
    }
    }
    if (const GLenum error = glGetError(); error != GL_NO_ERROR && failure.empty())
      failure = std::string(call) + " (PBO " + std::to_string(pbo.buffer_id()) + "): GL error " + hex(error);
  });
  if (!ran)
    return std::move(ran).error();
  if (!failure.empty())
    return Error::device("read_texture_into: " + failure);
  return {};
}

} // namespace tensormem

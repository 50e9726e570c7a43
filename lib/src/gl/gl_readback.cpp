// SPDX-License-Identifier: Apache-2.0
// GstGL interop: a texture of the share group read into a PBO on the GPU
// (a pack-buffer readback), for tensorupload's memory:GLMemory input.
#include <tensormem/gl_worker.hpp>

#include <epoxy/gl.h>

#include <cstdio>
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
  const std::size_t rows = r.height - 1u;
  if (rows > 0 && r.row_stride > (max - row_bytes) / rows)
    return Error::invalid_argument("read_texture_into: the region's size overflows");
  const std::size_t span = r.row_stride * rows + row_bytes;
  if (r.offset > max - span)
    return Error::invalid_argument("read_texture_into: the region's end overflows");
  return r.offset + span;
}

} // namespace

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
  std::string failure;
  Result<void> ran = submit([&] {
    while (glGetError() != GL_NO_ERROR) {
    }
    if (region.wait_sync) {
      auto sync = static_cast<GLsync>(region.wait_sync);
      glWaitSync(sync, 0, GL_TIMEOUT_IGNORED);
      glDeleteSync(sync);
    }
    GLuint fbo = 0;
    glGenFramebuffers(1, &fbo);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, fbo);
    glFramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, region.texture, 0);
    const GLenum status = glCheckFramebufferStatus(GL_READ_FRAMEBUFFER);
    if (status != GL_FRAMEBUFFER_COMPLETE) {
      failure = "texture " + std::to_string(region.texture) + " is not readable through a framebuffer (status " +
                hex(status) + ")";
    } else {
      glBindBuffer(GL_PIXEL_PACK_BUFFER, pbo.buffer_id());
      glPixelStorei(GL_PACK_ALIGNMENT, 4);
      // Tight rows as 0: drivers take their fast (memcpy) path only then.
      const std::size_t row_texels = region.row_stride / 4;
      glPixelStorei(GL_PACK_ROW_LENGTH, row_texels == region.width ? 0 : static_cast<GLint>(row_texels));
      glReadPixels(0, 0, static_cast<GLsizei>(region.width), static_cast<GLsizei>(region.height), GL_RGBA,
                   GL_UNSIGNED_BYTE, reinterpret_cast<void *>(region.offset));
      glPixelStorei(GL_PACK_ROW_LENGTH, 0);
      glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
    }
    glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
    glDeleteFramebuffers(1, &fbo);
    if (const GLenum error = glGetError(); error != GL_NO_ERROR && failure.empty())
      failure = "glReadPixels into PBO " + std::to_string(pbo.buffer_id()) + ": GL error " + hex(error);
  });
  if (!ran)
    return std::move(ran).error();
  if (!failure.empty())
    return Error::device("read_texture_into: " + failure);
  return {};
}

} // namespace tensormem

// SPDX-License-Identifier: Apache-2.0
// The tests' proof that bytes went through GL: a texture round trip between
// two PBO tensors on the worker, with the write into `dst` fenced the way a
// producer fences its GPU writes (GlWorker::fence_write). It lives here, not
// in the library, because no application needs it.
#pragma once

#include <tensormem/gl_worker.hpp>
#include <tensormem/pbo_storage.hpp>

#include <epoxy/gl.h>

#include <cstdint>
#include <memory>
#include <string>

namespace tmtest {

/// Uploads `width`×`height` RGBA8 pixels from the PBO tensor `src` into a new
/// texture and reads the texture back into the PBO tensor `dst` with
/// glReadPixels. InvalidArgument before any GL work when either tensor is not
/// a PBO; Mapped when either is mapped; InsufficientCapacity when a buffer is
/// smaller than the image.
inline tensormem::Result<void> copy_through_texture(tensormem::GlWorker &worker, const tensormem::Tensor &src,
                                                    const tensormem::Tensor &dst, std::uint32_t width,
                                                    std::uint32_t height) {
  using tensormem::Error;
  const std::shared_ptr<tensormem::PboStorage> from = tensormem::pbo_storage_of(src);
  const std::shared_ptr<tensormem::PboStorage> to = tensormem::pbo_storage_of(dst);
  if (!from || !to)
    return Error::invalid_argument("copy_through_texture: both tensors must be PBO-backed");
  if (width == 0 || height == 0)
    return Error::invalid_size(0, "copy_through_texture: empty image");
  if (width > 16384 || height > 16384)
    return Error::invalid_argument("copy_through_texture: beyond the 16384 limit of this helper");
  if (src.is_mapped() || dst.is_mapped())
    return Error::mapped("copy_through_texture: a tensor is mapped");

  const GLint64 bytes = static_cast<GLint64>(width) * height * 4;
  const auto w = static_cast<GLsizei>(width);
  const auto h = static_cast<GLsizei>(height);
  tensormem::Result<void> outcome;
  tensormem::Result<void> submitted = worker.submit([&] {
    for (GLuint id : {from->buffer_id(), to->buffer_id()}) {
      GLint64 size = 0;
      glBindBuffer(GL_COPY_WRITE_BUFFER, id);
      glGetBufferParameteri64v(GL_COPY_WRITE_BUFFER, GL_BUFFER_SIZE, &size);
      glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
      if (size < bytes) {
        outcome = Error::insufficient_capacity(static_cast<std::uint64_t>(bytes), static_cast<std::uint64_t>(size),
                                               "copy_through_texture: GL buffer " + std::to_string(id));
        return;
      }
    }
    while (glGetError() != GL_NO_ERROR) {
    }
    GLuint tex = 0, fbo = 0;
    glGenTextures(1, &tex);
    glBindTexture(GL_TEXTURE_2D, tex);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, w, h, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, from->buffer_id());
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
    glGenFramebuffers(1, &fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex, 0);
    const GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
    if (status == GL_FRAMEBUFFER_COMPLETE) {
      glPixelStorei(GL_PACK_ALIGNMENT, 4);
      glBindBuffer(GL_PIXEL_PACK_BUFFER, to->buffer_id());
      glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
      glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
    }
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glDeleteFramebuffers(1, &fbo);
    glBindTexture(GL_TEXTURE_2D, 0);
    glDeleteTextures(1, &tex);
    const GLenum err = glGetError();
    if (status != GL_FRAMEBUFFER_COMPLETE)
      outcome = Error::device("copy_through_texture: framebuffer incomplete (" + std::to_string(status) + ")");
    else if (err != GL_NO_ERROR)
      outcome = Error::device("copy_through_texture: GL error " + std::to_string(err));
  });
  if (!submitted)
    return submitted;
  if (!outcome)
    return outcome;
  tensormem::Result<std::uint64_t> fenced = worker.fence_write(*to);
  if (!fenced)
    return std::move(fenced).error();
  return {};
}

} // namespace tmtest

// SPDX-License-Identifier: Apache-2.0
#include "gl_compute.hpp"

#include <algorithm>
#include <cstring>

namespace tensormem::gl_compute {

namespace {

std::string info_log(GLuint object, bool program) {
  GLint length = 0;
  if (program)
    glGetProgramiv(object, GL_INFO_LOG_LENGTH, &length);
  else
    glGetShaderiv(object, GL_INFO_LOG_LENGTH, &length);
  std::string text(static_cast<std::size_t>(std::max(length, 1)), '\0');
  if (program)
    glGetProgramInfoLog(object, length, nullptr, text.data());
  else
    glGetShaderInfoLog(object, length, nullptr, text.data());
  text.resize(std::strlen(text.c_str()));
  return text;
}

} // namespace

bool available(const GlInfo &info) noexcept {
  const int version = info.major * 10 + info.minor;
  return version >= (info.api == GlApi::Gles ? 31 : 43);
}

const char *glsl_header(const GlInfo &info) noexcept {
  return info.api == GlApi::Gles ? "#version 310 es\nprecision highp float;\nprecision highp int;\n"
                                 : "#version 430 core\n";
}

Result<GLuint> build_program(const std::string &source, const char *what) {
  GLuint shader = glCreateShader(GL_COMPUTE_SHADER);
  const char *text = source.c_str();
  glShaderSource(shader, 1, &text, nullptr);
  glCompileShader(shader);
  GLint ok = GL_FALSE;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (ok != GL_TRUE) {
    std::string why = info_log(shader, false);
    glDeleteShader(shader);
    return Error::device(std::string(what) + ": compiling the compute shader: " + why);
  }
  GLuint program = glCreateProgram();
  glAttachShader(program, shader);
  glLinkProgram(program);
  glDeleteShader(shader);
  glGetProgramiv(program, GL_LINK_STATUS, &ok);
  if (ok != GL_TRUE) {
    std::string why = info_log(program, true);
    glDeleteProgram(program);
    return Error::device(std::string(what) + ": linking the compute shader: " + why);
  }
  return program;
}

GLbitfield storage_write_barriers(const GlInfo &info) noexcept {
  GLbitfield barriers = GL_BUFFER_UPDATE_BARRIER_BIT | GL_SHADER_STORAGE_BARRIER_BIT | GL_PIXEL_BUFFER_BARRIER_BIT;
  // GLES knows the client-mapped bit only with EXT_buffer_storage.
  if (info.api == GlApi::DesktopCore || info.persistent_maps)
    barriers |= GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT;
  return barriers;
}

} // namespace tensormem::gl_compute

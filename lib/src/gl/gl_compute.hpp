// SPDX-License-Identifier: Apache-2.0
// Private to lib/src/gl: what the worker's compute passes share (tensorconvert's
// GL path, the texture readback): whether the context runs compute shaders,
// the GLSL header for it, building a program, and the barriers after a pass
// that wrote shader storage a CPU map or a later GL read will see.
#pragma once

#include <tensormem/gl_worker.hpp>
#include <tensormem/result.hpp>

#include <epoxy/gl.h>

#include <string>

namespace tensormem::gl_compute {

/// Whether `info`'s context runs compute shaders with shader storage
/// buffers (desktop GL 4.3, GLES 3.1).
bool available(const GlInfo &info) noexcept;

/// "#version 430 core" or "#version 310 es" with high precision defaults,
/// a newline after each line.
const char *glsl_header(const GlInfo &info) noexcept;

/// Compiles and links compute shader `source` on the worker thread (the
/// context current). Device error with the driver's log, prefixed `what`.
Result<GLuint> build_program(const std::string &source, const char *what);

/// The barrier bits after a dispatch that wrote a shader storage buffer:
/// later buffer updates, shader reads, pixel transfers and CPU maps
/// (persistent ones included, where GLES has the bit) see the writes.
GLbitfield storage_write_barriers(const GlInfo &info) noexcept;

} // namespace tensormem::gl_compute

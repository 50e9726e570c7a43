// SPDX-License-Identifier: Apache-2.0
/* ONNX Runtime, found and opened at run time (dlopen), as CUDA is: the
 * plugin builds against ORT's API header alone, never links the library,
 * and runs on whichever runtime the machine has (a distribution's package,
 * a release archive, a Python or npm package, a vendor's build). No
 * GStreamer here. Include this instead of onnxruntime_cxx_api.h: it sets
 * the C++ API up for a table set at run time. */
#pragma once

#ifndef ORT_API_MANUAL_INIT
#define ORT_API_MANUAL_INIT
#endif
#include <onnxruntime_cxx_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gst_tensorinfer {

/* The oldest ONNX Runtime whose API this element calls (1.16: every
 * function used here is in its table). */
constexpr std::uint32_t kOldestOrtApi = 16;

struct Runtime {
  std::string path;         // the file opened
  std::string version;      // the runtime's own ("1.21.0")
  std::uint32_t api = 0;    // the API table in use: min(the header's, the runtime's)
};

/* Bytes per element of `type`; 0 for the types tensorinfer does not carry
 * (strings, 4-bit, complex). */
std::size_t element_size(ONNXTensorElementDataType type);

/* Opens ONNX Runtime once per process and points the C++ API at its table.
 * Where it looks, in order: the file TENSORMEM_ONNXRUNTIME names; the
 * system's libonnxruntime.so.1 (onnxruntime.dll on Windows); the copy the
 * project's scripts install (`bundled`, empty for none). nullptr with
 * `*error` saying what was tried when none opens or none has a table this
 * element can use; the result is kept, so a later call answers the same. */
const Runtime *load_runtime(const std::string &bundled, std::string *error);

} // namespace gst_tensorinfer

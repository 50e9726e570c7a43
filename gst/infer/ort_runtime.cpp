// SPDX-License-Identifier: Apache-2.0
#include "ort_runtime.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <vector>

#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace gst_tensorinfer {

namespace {

#ifdef _WIN32
std::vector<std::string> system_names() { return {"onnxruntime.dll"}; }
void *open_library(const std::string &path, std::string *why) {
  HMODULE module = LoadLibraryA(path.c_str());
  if (!module)
    *why = "LoadLibrary error " + std::to_string(GetLastError());
  return reinterpret_cast<void *>(module);
}
void *symbol(void *library, const char *name) {
  return reinterpret_cast<void *>(GetProcAddress(static_cast<HMODULE>(library), name));
}
void close_library(void *library) { FreeLibrary(static_cast<HMODULE>(library)); }
#else
/* Upstream's soname (release archives, Python and npm packages), then the
 * versioned sonames distributions give it (Debian 13: libonnxruntime.so.1.21),
 * newest first, then the development link. */
std::vector<std::string> system_names() {
  std::vector<std::string> names = {"libonnxruntime.so.1"};
  for (std::uint32_t minor = ORT_API_VERSION + 8; minor >= kOldestOrtApi; --minor)
    names.push_back("libonnxruntime.so.1." + std::to_string(minor));
  names.emplace_back("libonnxruntime.so");
  return names;
}
void *open_library(const std::string &path, std::string *why) {
  // RTLD_LOCAL: ORT's many symbols stay out of the process's namespace.
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *text = dlerror();
    *why = text ? text : "dlopen failed";
  }
  return library;
}
void *symbol(void *library, const char *name) { return dlsym(library, name); }
void close_library(void *library) { dlclose(library); }
#endif

using GetApiBase = const OrtApiBase *(ORT_API_CALL *)();

/* The API version a runtime's version string implies: 1.N has table N. */
std::uint32_t api_of_version(const std::string &version) {
  const std::size_t dot = version.find('.');
  if (dot == std::string::npos || version.compare(0, dot, "1") != 0)
    return 0;
  return static_cast<std::uint32_t>(std::strtoul(version.c_str() + dot + 1, nullptr, 10));
}

/* One candidate: opened, its table taken; false with `*why`. The library
 * stays open for the process once its table is in use. */
bool try_open(const std::string &path, Runtime *runtime, std::string *why) {
  void *library = open_library(path, why);
  if (!library)
    return false;
  auto get_base = reinterpret_cast<GetApiBase>(symbol(library, "OrtGetApiBase"));
  const OrtApiBase *base = get_base ? get_base() : nullptr;
  if (!base) {
    *why = "no OrtGetApiBase: not an ONNX Runtime library";
    close_library(library);
    return false;
  }
  const std::string version = base->GetVersionString();
  const std::uint32_t newest = std::min<std::uint32_t>(ORT_API_VERSION, api_of_version(version));
  if (newest < kOldestOrtApi) {
    *why = "ONNX Runtime " + version + " is older than 1." + std::to_string(kOldestOrtApi) +
           ", the oldest tensorinfer supports";
    close_library(library);
    return false;
  }
  const OrtApi *api = base->GetApi(newest);
  if (!api) {
    *why = "ONNX Runtime " + version + " has no API table " + std::to_string(newest);
    close_library(library);
    return false;
  }
  Ort::InitApi(api);
  runtime->path = path;
  runtime->version = version;
  runtime->api = newest;
  return true;
}

} // namespace

std::size_t element_size(ONNXTensorElementDataType type) {
  switch (type) {
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return 1;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return 2;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return 4;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return 8;
  default: return 0;
  }
}

const Runtime *load_runtime(const std::string &bundled, std::string *error) {
  static std::mutex lock;
  static bool tried = false;
  static Runtime runtime;
  static std::string failure;
  std::lock_guard<std::mutex> guard(lock);
  if (!tried) {
    tried = true;
    // Each group is one place to look; a group's failure is told once.
    std::vector<std::vector<std::string>> places;
    if (const char *named = std::getenv("TENSORMEM_ONNXRUNTIME"); named && *named)
      places.push_back({named});
    places.push_back(system_names());
    if (!bundled.empty())
      places.push_back({bundled});
    bool found = false;
    for (const std::vector<std::string> &place : places) {
      std::string first_why;
      for (const std::string &path : place) {
        std::string why;
        if (try_open(path, &runtime, &why)) {
          found = true;
          break;
        }
        if (first_why.empty())
          first_why = why;
      }
      if (found)
        break;
      failure += (failure.empty() ? "" : "; ") + place.front() +
                 (place.size() > 1 ? " (and " + std::to_string(place.size() - 1) + " other names)" : "") + ": " +
                 first_why;
    }
    if (!found)
      failure = "no usable ONNX Runtime (" + failure +
                "); install one (Debian 13: libonnxruntime1.21; elsewhere scripts/deps.sh --demo) or name its "
                "library in TENSORMEM_ONNXRUNTIME";
    else
      failure.clear();
  }
  if (runtime.api == 0) {
    *error = failure;
    return nullptr;
  }
  return &runtime;
}

} // namespace gst_tensorinfer

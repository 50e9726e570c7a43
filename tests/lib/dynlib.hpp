// SPDX-License-Identifier: Apache-2.0
// A shared library opened by a test, on Linux (dlopen) and Windows
// (LoadLibraryW, for the MinGW build run under Wine): open, look up, close.
#pragma once

#include <string>

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace tmtest {

class DynLib {
public:
  explicit DynLib(const char *path) {
#ifdef _WIN32
    // Test paths are ASCII; a bare name is searched beside the program first.
    std::wstring wide(path, path + std::char_traits<char>::length(path));
    handle_ = LoadLibraryW(wide.c_str());
    if (!handle_)
      error_ = "LoadLibraryW(" + std::string(path) + ") failed: error " + std::to_string(GetLastError());
#else
    handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char *e = dlerror();
      error_ = e ? e : "dlopen failed";
    }
#endif
  }
  DynLib(const DynLib &) = delete;
  DynLib &operator=(const DynLib &) = delete;
  ~DynLib() {
    if (!handle_)
      return;
#ifdef _WIN32
    FreeLibrary(handle_);
#else
    dlclose(handle_);
#endif
  }

  bool loaded() const { return handle_ != nullptr; }
  const std::string &error() const { return error_; }

  /// The exported function `name` as type F, or null.
  template <typename F> F function(const char *name) const {
    if (!handle_)
      return nullptr;
#ifdef _WIN32
    return reinterpret_cast<F>(reinterpret_cast<void *>(GetProcAddress(handle_, name)));
#else
    return reinterpret_cast<F>(dlsym(handle_, name));
#endif
  }

private:
#ifdef _WIN32
  HMODULE handle_ = nullptr;
#else
  void *handle_ = nullptr;
#endif
  std::string error_;
};

} // namespace tmtest

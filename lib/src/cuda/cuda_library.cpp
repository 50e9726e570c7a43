// SPDX-License-Identifier: Apache-2.0
// Opening CUDA libraries (runtime or driver) and resolving their entry
// points, on Linux (dlopen) and Windows (LoadLibraryW).
#include "cuda_library.hpp"

#include <cstdlib>
#include <cstring>

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace tensormem::cuda_library {
namespace {

#ifdef _WIN32

std::wstring widen(const std::string &text) {
  if (text.empty())
    return {};
  int n = MultiByteToWideChar(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), nullptr, 0);
  std::wstring out(static_cast<std::size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), out.data(), n);
  return out;
}

std::string narrow(const wchar_t *text, std::size_t length) {
  if (length == 0)
    return {};
  int n = WideCharToMultiByte(CP_UTF8, 0, text, static_cast<int>(length), nullptr, 0, nullptr, nullptr);
  std::string out(static_cast<std::size_t>(n), '\0');
  WideCharToMultiByte(CP_UTF8, 0, text, static_cast<int>(length), out.data(), n, nullptr, nullptr);
  return out;
}

void *find_symbol(void *lib, const char *name) {
  return reinterpret_cast<void *>(GetProcAddress(reinterpret_cast<HMODULE>(lib), name));
}

#else

void *find_symbol(void *lib, const char *name) {
  dlerror();
  return dlsym(lib, name);
}

#endif

} // namespace

#ifdef _WIN32

std::string env(const char *name) {
  wchar_t buf[2048];
  DWORD n = GetEnvironmentVariableW(widen(name).c_str(), buf, 2048);
  if (n == 0 || n >= 2048)
    return {};
  return narrow(buf, n);
}

Library::Library(const std::string &file, std::string &why) {
  HMODULE h = LoadLibraryW(widen(file).c_str());
  if (!h)
    why = "LoadLibraryW failed (error " + std::to_string(GetLastError()) + ")";
  handle_ = reinterpret_cast<void *>(h);
}

Library::~Library() {
  if (handle_ && !kept_)
    FreeLibrary(reinterpret_cast<HMODULE>(handle_));
}

// A full path records itself; a bare name records the module
// the OS actually loaded, asked of the loaded module (no second load), with
// a 1024-character buffer where 0 or 1024 (truncated) counts as failure.
std::string Library::opened_path(const std::string &file, const char *) const {
  if (file.find_first_of("\\/") != std::string::npos)
    return file;
  wchar_t buf[1024];
  DWORD n = GetModuleFileNameW(reinterpret_cast<HMODULE>(handle_), buf, 1024);
  if (n == 0 || n >= 1024)
    return file;
  return narrow(buf, n);
}

#else

std::string env(const char *name) {
  const char *value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

Library::Library(const std::string &file, std::string &why) {
  handle_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *text = dlerror();
    why = text ? text : "dlopen failed";
  }
}

Library::~Library() {
  if (handle_ && !kept_)
    dlclose(handle_);
}

// The file the dynamic linker actually mapped: ask it where one of the
// library's own functions lives (a bare soname tells nothing on its own).
std::string Library::opened_path(const std::string &file, const char *symbol) const {
  Dl_info info{};
  void *address = find_symbol(handle_, symbol);
  if (address && dladdr(address, &info) != 0 && info.dli_fname && info.dli_fname[0] != '\0')
    return info.dli_fname;
  return file;
}

#endif

const char *Library::resolve(std::span<const Symbol> symbols, void *table) const {
  // Function pointers are all the same size; each slot is written bytewise
  // so no data-pointer/function-pointer cast is needed.
  static_assert(sizeof(void *) == sizeof(void (*)()));
  for (const Symbol &sym : symbols)
    if (sym.required && !find_symbol(handle_, sym.name))
      return sym.name;
  for (const Symbol &sym : symbols) {
    void *address = find_symbol(handle_, sym.name);
    std::memcpy(static_cast<char *>(table) + sym.offset, &address, sizeof address);
  }
  return nullptr;
}

} // namespace tensormem::cuda_library

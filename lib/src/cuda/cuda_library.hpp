// SPDX-License-Identifier: Apache-2.0
// Private to the CUDA sources: opening a CUDA library file with dlopen or
// LoadLibraryW, resolving a table of entry points from it, and naming the
// file the system actually opened. Shared by the runtime and driver backends.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace tensormem::cuda_library {

/// One entry point: its exported name, the byte offset of its slot in a
/// table of function pointers, and whether a library without it is rejected.
struct Symbol {
  const char *name;
  std::size_t offset;
  bool required;
};

/// A library handle that is never closed once kept: code of a CUDA library
/// that ran may have left threads and exit handlers behind.
/// Until keep() it closes on destruction (a rejected candidate).
class Library {
public:
  /// Opens `file`; on failure valid() is false and `why` says what the
  /// system answered.
  Library(const std::string &file, std::string &why);
  Library(const Library &) = delete;
  Library &operator=(const Library &) = delete;
  ~Library();

  bool valid() const noexcept { return handle_ != nullptr; }
  /// Fills `table` from `symbols`; returns the first required name that is
  /// missing (nothing is stored then), or nullptr.
  const char *resolve(std::span<const Symbol> symbols, void *table) const;
  /// The file the system mapped for this library, asked of the address of
  /// its export `symbol` (dladdr) or of the module (GetModuleFileNameW);
  /// `file` when that cannot be told.
  std::string opened_path(const std::string &file, const char *symbol) const;
  /// From now on the library stays loaded for the life of the process.
  void keep() noexcept { kept_ = true; }

private:
  void *handle_ = nullptr;
  bool kept_ = false;
};

/// The value of environment variable `name` (UTF-8), empty when unset.
std::string env(const char *name);

} // namespace tensormem::cuda_library

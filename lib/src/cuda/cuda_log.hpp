// SPDX-License-Identifier: Apache-2.0
// Private to the CUDA sources: log lines under the "cuda: " prefix that never
// throw, and quietly() for building them inside noexcept code.
#pragma once

#include <tensormem/log.hpp>

#include <new>
#include <string>

namespace tensormem::cuda_log {

inline void debug(const std::string &text) noexcept {
  try {
    log(LogLevel::Debug, "cuda: " + text);
  } catch (const std::bad_alloc &) {
  }
}

inline void warn(const std::string &text) noexcept {
  try {
    log(LogLevel::Warning, "cuda: " + text);
  } catch (const std::bad_alloc &) {
  }
}

// Runs diagnostics from a noexcept function: a failed allocation while
// building a log line loses the line, nothing else (log() itself never
// throws, so an allocation is all that can).
template <typename F> void quietly(F &&f) noexcept {
  try {
    f();
  } catch (const std::bad_alloc &) {
  }
}

} // namespace tensormem::cuda_log

// SPDX-License-Identifier: Apache-2.0
// Private to the CUDA sources: log lines under the "cuda: " prefix that never
// throw, and quietly() for building them inside noexcept code.
#pragma once

#include <tensormem/log.hpp>

#include <string>

namespace tensormem::cuda_log {

inline void debug(const std::string &text) noexcept {
  try {
    log(LogLevel::Debug, "cuda: " + text);
  } catch (...) {
  }
}

inline void warn(const std::string &text) noexcept {
  try {
    log(LogLevel::Warning, "cuda: " + text);
  } catch (...) {
  }
}

// Runs diagnostics from a noexcept function: a failed allocation while
// building a log line loses the line, nothing else.
template <typename F> void quietly(F &&f) noexcept {
  try {
    f();
  } catch (...) {
  }
}

} // namespace tensormem::cuda_log

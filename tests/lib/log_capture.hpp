// SPDX-License-Identifier: Apache-2.0
// The warnings libtensormem logs while a Warnings object lives, for tests
// that check a failure nobody can return is at least reported.
#pragma once

#include <tensormem/log.hpp>

#include <mutex>
#include <string>
#include <string_view>

namespace logtest {

/// Installs itself as the log handler (process-wide: one at a time) and
/// keeps every warning, one a line; the handler is removed on destruction.
class Warnings {
public:
  Warnings() {
    tensormem::set_log_handler(
        [](tensormem::LogLevel level, std::string_view message, void *user) {
          auto *self = static_cast<Warnings *>(user);
          if (level != tensormem::LogLevel::Warning)
            return;
          std::lock_guard lock(self->mu_);
          self->text_ += std::string(message) + "\n";
        },
        this);
  }
  ~Warnings() { tensormem::set_log_handler(nullptr, nullptr); }
  Warnings(const Warnings &) = delete;
  Warnings &operator=(const Warnings &) = delete;

  std::string text() {
    std::lock_guard lock(mu_);
    return text_;
  }

private:
  std::mutex mu_;
  std::string text_;
};

} // namespace logtest

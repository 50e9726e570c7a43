// SPDX-License-Identifier: Apache-2.0
#include <tensormem/log.hpp>

#include <cstdio>
#include <mutex>

namespace tensormem {
namespace {

void default_handler(LogLevel level, std::string_view message, void *) {
  if (level > LogLevel::Warning)
    return;
  std::fprintf(stderr, "tensormem: %s: %.*s\n", level == LogLevel::Error ? "error" : "warning",
               static_cast<int>(message.size()), message.data());
}

std::mutex g_mu;
LogHandler g_handler = default_handler;
void *g_user = nullptr;

} // namespace

void set_log_handler(LogHandler handler, void *user_data) noexcept {
  std::lock_guard lock(g_mu);
  g_handler = handler ? handler : default_handler;
  g_user = handler ? user_data : nullptr;
}

void log(LogLevel level, std::string_view message) noexcept {
  LogHandler handler;
  void *user;
  {
    std::lock_guard lock(g_mu);
    handler = g_handler;
    user = g_user;
  }
  handler(level, message, user);
}

} // namespace tensormem

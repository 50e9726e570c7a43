// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <string_view>

namespace tensormem {

enum class LogLevel { Error, Warning, Info, Debug };

/// Where the library's diagnostics go. The default prints warnings and errors
/// to stderr; the GStreamer layer routes everything into its debug category.
using LogHandler = void (*)(LogLevel level, std::string_view message, void *user_data);

/// Installs `handler` (nullptr restores the default). Thread-safe.
TENSORMEM_API void set_log_handler(LogHandler handler, void *user_data) noexcept;
TENSORMEM_API void log(LogLevel level, std::string_view message) noexcept;

} // namespace tensormem

// SPDX-License-Identifier: Apache-2.0
// Private to the GL worker: a task that computes a Result on the worker
// thread and hands it back to the caller.
#pragma once

#include <tensormem/result.hpp>

#include <functional>
#include <optional>
#include <string>

namespace tensormem {

/// Runs `fn` (which returns Result<T>) through `run` — something that
/// executes a std::function<void()> on the GL worker, waits, and says
/// whether it ran — and returns fn's result. A task that ran without
/// producing one (it threw on the worker, which logs and carries on) is a
/// Device error naming `what`, never a read of an empty result.
template <typename T, typename Run, typename Fn>
Result<T> result_from_worker(Run &&run, Fn &&fn, const char *what) noexcept {
  try {
    std::optional<Result<T>> out;
    Result<void> ran = run(std::function<void()>([&] { out.emplace(fn()); }));
    if (!ran)
      return std::move(ran).error();
    if (!out)
      return Error::device(std::string(what) + ": the GL task ended without a result");
    return std::move(*out);
  } catch (...) {
    return Error::device(std::string(what) + ": unexpected failure");
  }
}

} // namespace tensormem

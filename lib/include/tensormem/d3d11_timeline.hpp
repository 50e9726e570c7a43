// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/d3d11_device.hpp>
#include <tensormem/timeline.hpp>

#include <memory>
#include <string>

namespace tensormem {

/// The process D3D11 fence as a Timeline: what a fence meta carries for a
/// texture the GPU wrote. Its values are the context's counter, whoever
/// signalled them (this timeline's issue() or D3d11Context::signal()
/// directly), so the unreachable-value rule holds for both: a value
/// above the context's last_signalled() is refused.
class TENSORMEM_API D3d11FenceTimeline final : public Timeline {
public:
  /// InvalidOperation for a context without a fence.
  static Result<std::shared_ptr<D3d11FenceTimeline>> create(std::shared_ptr<D3d11Context> context, std::string name);

  /// Queues the next value on the process fence (and flushes).
  Result<std::uint64_t> issue();
  const std::shared_ptr<D3d11Context> &context() const noexcept { return context_; }

private:
  struct Token {};

public:
  D3d11FenceTimeline(Token, std::shared_ptr<D3d11Context> context, std::string name)
      : Timeline(TimelineKind::D3d11Fence, std::move(name)), context_(std::move(context)) {}

private:
  Result<bool> poll(std::uint64_t value) override;
  Result<void> block_until(std::uint64_t value, std::chrono::steady_clock::time_point deadline) override;
  std::uint64_t issued_elsewhere() const noexcept override { return context_->last_signalled(); }

  std::shared_ptr<D3d11Context> context_;
};

} // namespace tensormem

// SPDX-License-Identifier: Apache-2.0
#include <tensormem/d3d11_timeline.hpp>

#include <algorithm>

namespace tensormem {

/// \brief A timeline over `context`'s process fence.
Result<std::shared_ptr<D3d11FenceTimeline>> D3d11FenceTimeline::create(std::shared_ptr<D3d11Context> context,
                                                                       std::string name) {
  if (!context || !context->fence())
    return Error::invalid_operation("D3D11 fence timeline '" + name + "': the device has no fence");
  return std::make_shared<D3d11FenceTimeline>(Token{}, std::move(context), std::move(name));
}

/// \brief The next value of the process fence, queued and flushed.
Result<std::uint64_t> D3d11FenceTimeline::issue() { return context_->signal(); }

Result<bool> D3d11FenceTimeline::poll(std::uint64_t value) { return context_->fence()->completed_value() >= value; }

/// \brief Waits on the fence until `deadline`; WouldBlock after it.
Result<void> D3d11FenceTimeline::block_until(std::uint64_t value, std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return context_->fence()->wait_cpu(value, std::max(left, std::chrono::milliseconds(0)));
}

} // namespace tensormem

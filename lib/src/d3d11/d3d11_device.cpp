// SPDX-License-Identifier: Apache-2.0
// The generic pieces of the D3D11 port: owned NT handles, the base-class
// destructors and the process context (device, process fence, its counter).
#include <tensormem/d3d11_device.hpp>
#include <tensormem/log.hpp>

#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>

namespace tensormem {

D3d11Texture::~D3d11Texture() = default;
D3d11Fence::~D3d11Fence() = default;
D3d11Device::~D3d11Device() = default;

// ---- D3d11NtHandle ----------------------------------------------------------

D3d11NtHandle::D3d11NtHandle(D3d11NtHandle &&other) noexcept
    : table_(std::exchange(other.table_, nullptr)), value_(std::exchange(other.value_, 0)) {}

D3d11NtHandle &D3d11NtHandle::operator=(D3d11NtHandle &&other) noexcept {
  if (this != &other) {
    D3d11NtHandle old(std::move(*this));
    table_ = std::exchange(other.table_, nullptr);
    value_ = std::exchange(other.value_, 0);
  }
  return *this;
}

/// \brief Closes the handle through its table (once).
D3d11NtHandle::~D3d11NtHandle() {
  if (table_ && value_)
    table_->close(value_);
}

/// \brief Gives the value up without closing it.
std::uintptr_t D3d11NtHandle::release() noexcept {
  table_ = nullptr;
  return std::exchange(value_, 0);
}

/// \brief A second handle of the same object, owned by the caller.
Result<D3d11NtHandle> D3d11NtHandle::duplicate() const {
  if (!table_ || !value_)
    return Error::invalid_operation("duplicate: an empty NT handle has nothing to duplicate");
  Result<std::uintptr_t> dup = table_->duplicate(value_);
  if (!dup)
    return dup.error();
  return D3d11NtHandle(table_, *dup);
}

// ---- D3d11Context ------------------------------------------------------------

struct D3d11Context::Counter {
  std::mutex mu;          // held across a signal so values reach the queue in order
  std::uint64_t last = 0; // the newest value signal() handed out
};

D3d11Context::D3d11Context(Token, std::shared_ptr<D3d11Device> device, std::shared_ptr<D3d11Fence> fence,
                           D3d11NtHandle fence_handle) noexcept
    : device_(std::move(device)), fence_(std::move(fence)), fence_handle_(std::move(fence_handle)),
      counter_(new (std::nothrow) Counter) {}

D3d11Context::~D3d11Context() = default;

/// \brief The process fence for `device`: shared where the device can share
/// one, private where it can only make one, none without fences. Each
/// degraded case is logged once here, not at every use.
Result<std::shared_ptr<D3d11Context>> D3d11Context::create(std::shared_ptr<D3d11Device> device) {
  if (!device)
    return Error::invalid_argument("D3d11Context::create: no device");
  const D3d11Capabilities caps = device->capabilities();
  std::shared_ptr<D3d11Fence> fence;
  D3d11NtHandle handle;
  if (!caps.device5 || !caps.context4) {
    log(LogLevel::Warning, std::string("D3D11 ") + device->name() +
                               " device has no fences (ID3D11Device5/ID3D11DeviceContext4): "
                               "completions are not recorded and maps are ordered by the immediate context only");
  } else {
    if (caps.shared_fence) {
      Result<std::shared_ptr<D3d11Fence>> shared = device->create_fence(0, true);
      if (shared) {
        Result<D3d11NtHandle> h = (*shared)->create_shared_handle();
        if (h) {
          fence = std::move(*shared);
          handle = std::move(*h);
        } else {
          log(LogLevel::Warning,
              "D3D11 process fence: no shared handle (" + h.error().message() + "); using a private fence");
        }
      } else {
        log(LogLevel::Warning,
            "D3D11 process fence: no shared fence (" + shared.error().message() + "); using a private fence");
      }
    }
    if (!fence) {
      Result<std::shared_ptr<D3d11Fence>> priv = device->create_fence(0, false);
      if (!priv)
        return priv.error();
      fence = std::move(*priv);
    }
  }
  auto ctx = std::make_shared<D3d11Context>(Token{}, std::move(device), std::move(fence), std::move(handle));
  if (!ctx->counter_)
    return Error::device("D3d11Context::create: out of memory");
  return ctx;
}

/// \brief Queues the next value on the process fence and flushes.
Result<std::uint64_t> D3d11Context::signal() {
  if (!fence_)
    return std::uint64_t{0};
  std::lock_guard lock(counter_->mu);
  const std::uint64_t next = counter_->last + 1;
  Result<void> queued = device_->signal(*fence_, next);
  if (!queued)
    return queued.error();
  counter_->last = next;
  device_->flush();
  return next;
}

/// \brief The next value, signalled by another device's context.
Result<std::uint64_t> D3d11Context::signal_on(D3d11Device &producer, D3d11Fence &fence) {
  if (!fence_shared())
    return Error::invalid_operation("D3D11 process fence: not shared, so no other device can signal it");
  std::lock_guard lock(counter_->mu);
  const std::uint64_t next = counter_->last + 1;
  Result<void> queued = producer.signal(fence, next);
  if (!queued)
    return queued.error();
  counter_->last = next;
  return next;
}

std::uint64_t D3d11Context::last_signalled() const noexcept {
  std::lock_guard lock(counter_->mu);
  return counter_->last;
}

/// \brief A new handle of the shared process fence.
Result<D3d11NtHandle> D3d11Context::duplicate_fence_handle() const {
  if (!fence_handle_)
    return Error::invalid_operation("the D3D11 process fence is not shared: there is no handle to duplicate");
  return fence_handle_.duplicate();
}

namespace {

/// \brief The device TENSORMEM_D3D11_DEVICE selects, or the platform default.
Result<std::shared_ptr<D3d11Device>> process_device() {
  const char *env = std::getenv("TENSORMEM_D3D11_DEVICE");
  const std::string choice = env ? env : "";
  if (choice == "software")
    return create_software_d3d11_device();
  if (choice == "hardware")
    return create_windows_d3d11_device(D3d11DriverType::Hardware);
  if (choice == "warp")
    return create_windows_d3d11_device(D3d11DriverType::Warp);
  if (!choice.empty())
    return Error::invalid_argument("TENSORMEM_D3D11_DEVICE=" + choice + ": expected software, hardware or warp");
#ifdef _WIN32
  return create_windows_d3d11_device(D3d11DriverType::Hardware);
#else
  return Error::not_implemented("no Direct3D 11 device on this platform; TENSORMEM_D3D11_DEVICE=software selects "
                                "the reference software device (for tests and development)");
#endif
}

} // namespace

/// \brief The process context, made on first use; a failure is retried by
/// the next caller (the environment may have changed in between). It is
/// never destroyed: a static holder would be registered for destruction
/// before the statics the device creates on first use (the software
/// device's handle table), so it would close its fence handle into a table
/// already gone at exit.
Result<std::shared_ptr<D3d11Context>> D3d11Context::process() {
  static std::mutex mu;
  static auto *const holder = new std::shared_ptr<D3d11Context>();
  std::shared_ptr<D3d11Context> &made = *holder;
  std::lock_guard lock(mu);
  if (made)
    return made;
  Result<std::shared_ptr<D3d11Device>> device = process_device();
  if (!device)
    return device.error();
  Result<std::shared_ptr<D3d11Context>> ctx = create(std::move(*device));
  if (!ctx)
    return ctx.error();
  made = *ctx;
  log(LogLevel::Info, std::string("D3D11 process device: ") + made->device().name() +
                          (made->fence_shared() ? ", shared fence"
                           : made->fence()      ? ", private fence"
                                                : ", no fence"));
  return made;
}

} // namespace tensormem

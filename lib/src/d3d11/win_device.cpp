// SPDX-License-Identifier: Apache-2.0
// The real Direct3D 11 device: COM through MinGW-w64's headers. Every
// immediate-context call runs inside ID3D11Multithread Enter/Leave; every
// failed HRESULT becomes an Error naming the call and the code in hex.
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <d3d11.h>
#include <d3d11_1.h>
#include <d3d11_3.h>
#include <d3d11_4.h>
#include <dxgi1_2.h>

#include <tensormem/d3d11_device.hpp>

#include <cerrno>
#include <cstdio>
#include <string>
#include <utility>

namespace tensormem {
namespace {

/// \brief An HRESULT as "0x887A000A".
std::string hex_code(HRESULT hr) {
  char code[16];
  std::snprintf(code, sizeof code, "0x%08lX", static_cast<unsigned long>(static_cast<std::uint32_t>(hr)));
  return code;
}

/// \brief "Call failed: HRESULT 0x…" for a failed COM call.
Error hresult_error(const std::string &call, HRESULT hr) {
  std::string what = call + " failed: HRESULT " + hex_code(hr);
  if (hr == E_INVALIDARG) {
    return Error::invalid_argument(std::move(what));
  }
  if (hr == E_OUTOFMEMORY) {
    return Error::io(ENOMEM, std::move(what));
  }
  if (hr == E_NOINTERFACE || hr == E_NOTIMPL) {
    return Error::not_implemented(std::move(what));
  }
  return Error::device(std::move(what));
}

/// An owning COM pointer: one reference, released on destruction.
template <class T> class Com {
public:
  Com() = default;
  explicit Com(T *p) noexcept : p_(p) {}
  Com(const Com &o) noexcept : p_(o.p_) {
    if (p_) {
      p_->AddRef();
    }
  }
  Com(Com &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Com &operator=(Com o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Com() {
    if (p_) {
      p_->Release();
    }
  }
  T *get() const noexcept { return p_; }
  T *operator->() const noexcept { return p_; }
  T **put() noexcept {
    *this = Com();
    return &p_;
  }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  /// \brief QueryInterface for U; empty where the object does not offer it.
  template <class U> Com<U> query() const noexcept {
    Com<U> out;
    if (p_) {
      p_->QueryInterface(__uuidof(U), reinterpret_cast<void **>(out.put()));
    }
    return out;
  }

private:
  T *p_ = nullptr;
};

/// Win32 CloseHandle / DuplicateHandle within this process.
class Win32HandleTable final : public D3d11HandleTable {
public:
  void close(std::uintptr_t value) noexcept override {
    if (value != 0) {
      CloseHandle(reinterpret_cast<HANDLE>(value));
    }
  }
  Result<std::uintptr_t> duplicate(std::uintptr_t value) override {
    HANDLE out = nullptr;
    HANDLE self = GetCurrentProcess();
    if (!DuplicateHandle(self, reinterpret_cast<HANDLE>(value), self, &out, 0, FALSE, DUPLICATE_SAME_ACCESS)) {
      return Error::io(static_cast<int>(GetLastError()), "DuplicateHandle failed");
    }
    return reinterpret_cast<std::uintptr_t>(out);
  }
};

/// \brief The process-wide table: handles outlive any one device.
Win32HandleTable &win32_handles() {
  static Win32HandleTable table;
  return table;
}

/// \brief The port's desc as D3D11_TEXTURE2D_DESC.
D3D11_TEXTURE2D_DESC to_native(const D3d11TextureDesc &d) {
  D3D11_TEXTURE2D_DESC n{};
  n.Width = d.width;
  n.Height = d.height;
  n.MipLevels = d.mip_levels;
  n.ArraySize = d.array_size;
  n.Format = static_cast<DXGI_FORMAT>(d.format);
  n.SampleDesc.Count = d.sample_count;
  n.SampleDesc.Quality = d.sample_quality;
  n.Usage = static_cast<D3D11_USAGE>(d.usage);
  n.BindFlags = d.bind_flags;
  n.CPUAccessFlags = d.cpu_access_flags;
  n.MiscFlags = d.misc_flags;
  return n;
}

/// \brief D3D11_TEXTURE2D_DESC as the port's desc.
D3d11TextureDesc from_native(const D3D11_TEXTURE2D_DESC &n) {
  D3d11TextureDesc d;
  d.width = n.Width;
  d.height = n.Height;
  d.mip_levels = n.MipLevels;
  d.array_size = n.ArraySize;
  d.format = static_cast<DxgiFormat>(n.Format);
  d.sample_count = n.SampleDesc.Count;
  d.sample_quality = n.SampleDesc.Quality;
  d.usage = static_cast<std::uint32_t>(n.Usage);
  d.bind_flags = n.BindFlags;
  d.cpu_access_flags = n.CPUAccessFlags;
  d.misc_flags = n.MiscFlags;
  return d;
}

class WinTexture final : public D3d11Texture {
public:
  WinTexture(Com<ID3D11Texture2D> tex, const void *device) noexcept : tex_(std::move(tex)), device_(device) {
    D3D11_TEXTURE2D_DESC n{};
    tex_->GetDesc(&n);
    desc_ = from_native(n);
  }
  D3d11TextureDesc desc() const noexcept override { return desc_; }
  std::uintptr_t address() const noexcept override { return reinterpret_cast<std::uintptr_t>(tex_.get()); }
  const void *device_identity() const noexcept override { return device_; }
  ID3D11Texture2D *native() const noexcept { return tex_.get(); }

private:
  Com<ID3D11Texture2D> tex_;
  const void *device_;
  D3d11TextureDesc desc_;
};

class WinFence final : public D3d11Fence {
public:
  WinFence(Com<ID3D11Fence> fence, bool shared) noexcept : fence_(std::move(fence)), shared_(shared) {}
  std::uint64_t completed_value() const noexcept override { return fence_->GetCompletedValue(); }
  bool shared() const noexcept override { return shared_; }
  std::uintptr_t address() const noexcept override { return reinterpret_cast<std::uintptr_t>(fence_.get()); }
  ID3D11Fence *native() const noexcept { return fence_.get(); }

  /// \brief SetEventOnCompletion + WaitForSingleObject, bounded by `timeout`.
  Result<void> wait_cpu(std::uint64_t value, std::chrono::milliseconds timeout) override {
    if (fence_->GetCompletedValue() >= value) {
      return {};
    }
    HANDLE event = CreateEventW(nullptr, FALSE, FALSE, nullptr);
    if (!event) {
      return Error::io(static_cast<int>(GetLastError()), "CreateEventW failed");
    }
    const HRESULT hr = fence_->SetEventOnCompletion(value, event);
    if (FAILED(hr)) {
      CloseHandle(event);
      return hresult_error("ID3D11Fence::SetEventOnCompletion", hr);
    }
    const auto ms = timeout.count() < 0 ? 0 : timeout.count();
    const DWORD wait = static_cast<DWORD>(ms >= INFINITE ? INFINITE - 1 : ms);
    const DWORD rc = WaitForSingleObject(event, wait);
    CloseHandle(event);
    if (rc == WAIT_OBJECT_0 || fence_->GetCompletedValue() >= value) {
      return {};
    }
    if (rc == WAIT_TIMEOUT) {
      return Error::would_block("D3D11 fence did not reach " + std::to_string(value) + " within " + std::to_string(ms) +
                                " ms");
    }
    return Error::io(static_cast<int>(GetLastError()), "WaitForSingleObject on a fence event failed");
  }

  /// \brief ID3D11Fence::CreateSharedHandle with GENERIC_ALL.
  Result<D3d11NtHandle> create_shared_handle() override {
    if (!shared_) {
      return Error::invalid_operation("the D3D11 fence was created without D3D11_FENCE_FLAG_SHARED");
    }
    HANDLE h = nullptr;
    const HRESULT hr = fence_->CreateSharedHandle(nullptr, GENERIC_ALL, nullptr, &h);
    if (FAILED(hr)) {
      return hresult_error("ID3D11Fence::CreateSharedHandle", hr);
    }
    return D3d11NtHandle(&win32_handles(), reinterpret_cast<std::uintptr_t>(h));
  }

private:
  Com<ID3D11Fence> fence_;
  bool shared_;
};

/// Enter/Leave of the device's multithread protection for one scope.
class Protected {
public:
  explicit Protected(ID3D11Multithread *mt) noexcept : mt_(mt) {
    if (mt_) {
      mt_->Enter();
    }
  }
  ~Protected() {
    if (mt_) {
      mt_->Leave();
    }
  }
  Protected(const Protected &) = delete;
  Protected &operator=(const Protected &) = delete;

private:
  ID3D11Multithread *mt_;
};

class WinD3d11Device final : public D3d11Device {
public:
  WinD3d11Device(const char *name, Com<ID3D11Device> device, Com<ID3D11DeviceContext> context) noexcept
      : name_(name), device_(std::move(device)), context_(std::move(context)) {
    device1_ = device_.query<ID3D11Device1>();
    device5_ = device_.query<ID3D11Device5>();
    context4_ = context_.query<ID3D11DeviceContext4>();
    multithread_ = context_.query<ID3D11Multithread>();
    if (!multithread_) {
      multithread_ = device_.query<ID3D11Multithread>();
    }
    if (multithread_) {
      multithread_->SetMultithreadProtected(TRUE);
    }
    caps_.device1 = static_cast<bool>(device1_);
    caps_.device5 = static_cast<bool>(device5_);
    caps_.context4 = static_cast<bool>(context4_);
    caps_.shared_fence = false;
    if (device5_) {
      // A shared fence is what the storage asks for; probe it once.
      Com<ID3D11Fence> probe;
      caps_.shared_fence = SUCCEEDED(device5_->CreateFence(0, D3D11_FENCE_FLAG_SHARED, __uuidof(ID3D11Fence),
                                                           reinterpret_cast<void **>(probe.put())));
    }
    caps_.shared_nt_handles = probe_shared_nt_handles();
    if (auto dxgi = device_.query<IDXGIDevice>()) {
      Com<IDXGIAdapter> adapter;
      DXGI_ADAPTER_DESC desc{};
      if (SUCCEEDED(dxgi->GetAdapter(adapter.put())) && SUCCEEDED(adapter->GetDesc(&desc))) {
        adapter_.low = desc.AdapterLuid.LowPart;
        adapter_.high = desc.AdapterLuid.HighPart;
      }
    }
  }

  /// \brief Whether a texture made as the storage makes one gives an NT
  /// handle: Wine 8 accepts MISC_SHARED_NTHANDLE but its textures offer no
  /// IDXGIResource1, so the storage must know before it allocates.
  bool probe_shared_nt_handles() noexcept {
    D3D11_TEXTURE2D_DESC d{};
    d.Width = d.Height = 1;
    d.MipLevels = d.ArraySize = 1;
    d.Format = DXGI_FORMAT_R8G8B8A8_UNORM;
    d.SampleDesc.Count = 1;
    d.Usage = D3D11_USAGE_DEFAULT;
    d.BindFlags = D3D11_BIND_RENDER_TARGET | D3D11_BIND_SHADER_RESOURCE;
    d.MiscFlags = D3D11_RESOURCE_MISC_SHARED | D3D11_RESOURCE_MISC_SHARED_NTHANDLE;
    Com<ID3D11Texture2D> tex;
    if (FAILED(device_->CreateTexture2D(&d, nullptr, tex.put())) || !tex)
      return false;
    Com<IDXGIResource1> res;
    if (FAILED(tex->QueryInterface(__uuidof(IDXGIResource1), reinterpret_cast<void **>(res.put()))))
      return false;
    HANDLE h = nullptr;
    if (FAILED(res->CreateSharedHandle(nullptr, DXGI_SHARED_RESOURCE_READ | DXGI_SHARED_RESOURCE_WRITE, nullptr, &h)))
      return false;
    CloseHandle(h);
    return true;
  }

  const char *name() const noexcept override { return name_; }
  D3d11Capabilities capabilities() const noexcept override { return caps_; }
  D3d11AdapterId adapter() const noexcept override { return adapter_; }
  const void *identity() const noexcept override { return device_.get(); }
  D3d11HandleTable &handles() noexcept override { return win32_handles(); }

  /// \brief ID3D11Device::CreateTexture2D without initial data.
  Result<std::shared_ptr<D3d11Texture>> create_texture(const D3d11TextureDesc &desc) override {
    const D3D11_TEXTURE2D_DESC n = to_native(desc);
    Com<ID3D11Texture2D> tex;
    const HRESULT hr = device_->CreateTexture2D(&n, nullptr, tex.put());
    if (FAILED(hr)) {
      return hresult_error("ID3D11Device::CreateTexture2D", hr);
    }
    if (!tex) {
      return Error::io(0, "ID3D11Device::CreateTexture2D succeeded without a texture");
    }
    return std::shared_ptr<D3d11Texture>(std::make_shared<WinTexture>(std::move(tex), device_.get()));
  }

  /// \brief ID3D11DeviceContext::Map of subresource 0.
  Result<D3d11Mapped> map(D3d11Texture &texture, D3d11MapType type, bool do_not_wait) override {
    auto *tex = own(texture);
    if (!tex) {
      return foreign("map");
    }
    D3D11_MAPPED_SUBRESOURCE m{};
    HRESULT hr;
    {
      Protected lock(multithread_.get());
      hr = context_->Map(tex->native(), 0, static_cast<D3D11_MAP>(type), do_not_wait ? D3D11_MAP_FLAG_DO_NOT_WAIT : 0,
                         &m);
    }
    if (hr == DXGI_ERROR_WAS_STILL_DRAWING) {
      return Error::would_block("ID3D11DeviceContext::Map: DXGI_ERROR_WAS_STILL_DRAWING (0x887A000A)");
    }
    if (FAILED(hr)) {
      return hresult_error("ID3D11DeviceContext::Map", hr);
    }
    return D3d11Mapped{static_cast<std::byte *>(m.pData), m.RowPitch, m.DepthPitch};
  }

  void unmap(D3d11Texture &texture) noexcept override {
    if (auto *tex = own(texture)) {
      Protected lock(multithread_.get());
      context_->Unmap(tex->native(), 0);
    }
  }

  Result<void> copy_resource(D3d11Texture &dst, D3d11Texture &src) override {
    auto *d = own(dst);
    auto *s = own(src);
    if (!d || !s) {
      return foreign("copy_resource");
    }
    Protected lock(multithread_.get());
    context_->CopyResource(d->native(), s->native());
    return {};
  }

  Result<void> update_subresource(D3d11Texture &dst, const std::byte *data, std::uint32_t row_pitch) override {
    auto *d = own(dst);
    if (!d) {
      return foreign("update_subresource");
    }
    if (!data) {
      return Error::invalid_argument("update_subresource without data");
    }
    Protected lock(multithread_.get());
    context_->UpdateSubresource(d->native(), 0, nullptr, data, row_pitch, 0);
    return {};
  }

  void flush() noexcept override {
    Protected lock(multithread_.get());
    context_->Flush();
  }

  /// \brief IDXGIResource1::CreateSharedHandle, read + write, unnamed.
  Result<D3d11NtHandle> create_shared_handle(D3d11Texture &texture) override {
    auto *tex = own(texture);
    if (!tex) {
      return foreign("create_shared_handle");
    }
    if ((tex->desc().misc_flags & D3D11_RESOURCE_MISC_SHARED_NTHANDLE) == 0) {
      return Error::invalid_argument("create_shared_handle: the texture lacks D3D11_RESOURCE_MISC_SHARED_NTHANDLE");
    }
    Com<IDXGIResource1> res;
    if (FAILED(tex->native()->QueryInterface(__uuidof(IDXGIResource1), reinterpret_cast<void **>(res.put())))) {
      return Error::not_implemented("the texture offers no IDXGIResource1");
    }
    HANDLE h = nullptr;
    const HRESULT hr =
        res->CreateSharedHandle(nullptr, DXGI_SHARED_RESOURCE_READ | DXGI_SHARED_RESOURCE_WRITE, nullptr, &h);
    if (FAILED(hr)) {
      return hresult_error("IDXGIResource1::CreateSharedHandle", hr);
    }
    return D3d11NtHandle(&win32_handles(), reinterpret_cast<std::uintptr_t>(h));
  }

  /// \brief ID3D11Device1::OpenSharedResource1.
  Result<std::shared_ptr<D3d11Texture>> open_shared_texture(std::uintptr_t handle) override {
    if (!device1_) {
      return Error::not_implemented("OpenSharedResource1 needs ID3D11Device1, which this device lacks");
    }
    Com<ID3D11Texture2D> tex;
    const HRESULT hr = device1_->OpenSharedResource1(reinterpret_cast<HANDLE>(handle), __uuidof(ID3D11Texture2D),
                                                     reinterpret_cast<void **>(tex.put()));
    if (FAILED(hr)) {
      return hresult_error("ID3D11Device1::OpenSharedResource1", hr);
    }
    Com<ID3D11Device> owner;
    tex->GetDevice(owner.put());
    return std::shared_ptr<D3d11Texture>(std::make_shared<WinTexture>(std::move(tex), owner.get()));
  }

  /// \brief ID3D11Device5::CreateFence.
  Result<std::shared_ptr<D3d11Fence>> create_fence(std::uint64_t initial, bool shared) override {
    if (!device5_) {
      return Error::not_implemented("fences need ID3D11Device5, which this device lacks");
    }
    if (shared && !caps_.shared_fence) {
      return Error::not_implemented("this device cannot create a fence with D3D11_FENCE_FLAG_SHARED");
    }
    Com<ID3D11Fence> fence;
    const HRESULT hr = device5_->CreateFence(initial, shared ? D3D11_FENCE_FLAG_SHARED : D3D11_FENCE_FLAG_NONE,
                                             __uuidof(ID3D11Fence), reinterpret_cast<void **>(fence.put()));
    if (FAILED(hr)) {
      return hresult_error("ID3D11Device5::CreateFence", hr);
    }
    return std::shared_ptr<D3d11Fence>(std::make_shared<WinFence>(std::move(fence), shared));
  }

  /// \brief ID3D11Device5::OpenSharedFence.
  Result<std::shared_ptr<D3d11Fence>> open_shared_fence(std::uintptr_t handle) override {
    if (!device5_) {
      return Error::not_implemented("OpenSharedFence needs ID3D11Device5, which this device lacks");
    }
    Com<ID3D11Fence> fence;
    const HRESULT hr = device5_->OpenSharedFence(reinterpret_cast<HANDLE>(handle), __uuidof(ID3D11Fence),
                                                 reinterpret_cast<void **>(fence.put()));
    if (FAILED(hr)) {
      return hresult_error("ID3D11Device5::OpenSharedFence", hr);
    }
    return std::shared_ptr<D3d11Fence>(std::make_shared<WinFence>(std::move(fence), true));
  }

  Result<void> signal(D3d11Fence &fence, std::uint64_t value) override { return queue_fence(fence, value, true); }
  Result<void> wait_gpu(D3d11Fence &fence, std::uint64_t value) override { return queue_fence(fence, value, false); }

private:
  /// \brief This device's texture, or null for another device's.
  static WinTexture *own(D3d11Texture &t) noexcept { return dynamic_cast<WinTexture *>(&t); }
  static Error foreign(const char *call) {
    return Error::invalid_argument(std::string(call) + ": the texture does not come from a Windows D3D11 device");
  }

  /// \brief ID3D11DeviceContext4::Signal or ::Wait.
  Result<void> queue_fence(D3d11Fence &fence, std::uint64_t value, bool signal) {
    if (!context4_) {
      return Error::not_implemented("queued fence Signal/Wait needs ID3D11DeviceContext4, which this device lacks");
    }
    auto *f = dynamic_cast<WinFence *>(&fence);
    if (!f) {
      return Error::invalid_argument("the fence does not come from a Windows D3D11 device");
    }
    HRESULT hr;
    {
      Protected lock(multithread_.get());
      hr = signal ? context4_->Signal(f->native(), value) : context4_->Wait(f->native(), value);
    }
    if (FAILED(hr)) {
      return hresult_error(signal ? "ID3D11DeviceContext4::Signal" : "ID3D11DeviceContext4::Wait", hr);
    }
    return {};
  }

  const char *name_;
  Com<ID3D11Device> device_;
  Com<ID3D11DeviceContext> context_;
  Com<ID3D11Device1> device1_;
  Com<ID3D11Device5> device5_;
  Com<ID3D11DeviceContext4> context4_;
  Com<ID3D11Multithread> multithread_;
  D3d11Capabilities caps_{};
  D3d11AdapterId adapter_{};
};

/// \brief D3D11CreateDevice of one driver type, BGRA support on.
HRESULT create_native(D3D_DRIVER_TYPE type, Com<ID3D11Device> &device, Com<ID3D11DeviceContext> &context) {
  return D3D11CreateDevice(nullptr, type, nullptr, D3D11_CREATE_DEVICE_BGRA_SUPPORT, nullptr, 0, D3D11_SDK_VERSION,
                           device.put(), nullptr, context.put());
}

} // namespace

/// \brief The real device: hardware falls back to WARP; WARP alone on request.
Result<std::shared_ptr<D3d11Device>> create_windows_d3d11_device(D3d11DriverType type) {
  Com<ID3D11Device> device;
  Com<ID3D11DeviceContext> context;
  const char *name = "warp";
  HRESULT hr = E_FAIL;
  if (type == D3d11DriverType::Hardware) {
    hr = create_native(D3D_DRIVER_TYPE_HARDWARE, device, context);
    name = "hardware";
  }
  if (type == D3d11DriverType::Warp || FAILED(hr)) {
    const HRESULT hw = hr;
    hr = create_native(D3D_DRIVER_TYPE_WARP, device, context);
    name = "warp";
    if (FAILED(hr)) {
      if (type == D3d11DriverType::Hardware) {
        return hresult_error("D3D11CreateDevice (hardware: HRESULT " + hex_code(hw) + "; then WARP)", hr);
      }
      return hresult_error("D3D11CreateDevice (WARP)", hr);
    }
  }
  if (!device || !context) {
    return Error::io(0, "D3D11CreateDevice succeeded without a device or context");
  }
  return std::shared_ptr<D3d11Device>(std::make_shared<WinD3d11Device>(name, std::move(device), std::move(context)));
}

} // namespace tensormem

// SPDX-License-Identifier: Apache-2.0
// The CUDA GL channel across the C ABI: the producer's reference-counted
// channel object and its C callbacks, and the importer that turns a client
// state plus three functions back into CudaGlOps.
#include <tensormem/cuda_handle.hpp>

#include <tensormem/log.hpp>

#include <atomic>
#include <new>

namespace tensormem {
namespace {

// What ctx points at on the producer side: the GL operations and a count.
// The parts hold one reference; every retain adds one; the last release
// deletes it (and with it the producer's reference on the GL operations).
struct Channel {
  std::shared_ptr<CudaGlOps> ops;
  std::atomic<std::size_t> refs{1};
};

const Channel *channel_of(const void *ctx) noexcept { return static_cast<const Channel *>(ctx); }

extern "C" void channel_retain(const void *ctx) {
  if (ctx)
    const_cast<Channel *>(channel_of(ctx))->refs.fetch_add(1, std::memory_order_relaxed);
}

extern "C" void channel_release(const void *ctx) {
  if (!ctx)
    return;
  Channel *channel = const_cast<Channel *>(channel_of(ctx));
  if (channel->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete channel;
}

// 0 with the out-values written when the GL map succeeds, 1
// when it yields nothing; no exception crosses.
extern "C" int channel_map(const void *ctx, void *resource, void **out_ptr, size_t *out_len) {
  try {
    if (!ctx || !out_ptr || !out_len)
      return TM_CUDA_FAILED;
    Result<CudaDeviceRange> range = channel_of(ctx)->ops->map(resource);
    if (!range) {
      log(LogLevel::Debug, "cuda: GL channel map failed: " + range.error().message());
      return TM_CUDA_FAILED;
    }
    *out_ptr = range->ptr;
    *out_len = range->length;
    return TM_CUDA_OK;
  } catch (...) {
    return TM_CUDA_FAILED;
  }
}

extern "C" void channel_unmap(const void *ctx, void *resource) {
  if (ctx)
    channel_of(ctx)->ops->unmap(resource);
}

extern "C" void channel_unregister(const void *ctx, void *resource) {
  if (ctx)
    channel_of(ctx)->ops->unregister(resource);
}

// The importer's side: the client's functions behind CudaGlOps.
class ImportedGlOps final : public CudaGlOps {
public:
  ImportedGlOps(const tm_client_state &state, tm_cuda_map_fn map, tm_cuda_unmap_fn unmap,
                tm_cuda_unregister_fn unregister) noexcept
      : state_(state), map_(map), unmap_(unmap), unregister_(unregister) {}
  ~ImportedGlOps() override { state_.release(state_.ctx); }

  Result<CudaDeviceRange> map(void *resource) override {
    CudaDeviceRange range;
    int rc = map_(state_.ctx, resource, &range.ptr, &range.length);
    if (rc != TM_CUDA_OK)
      return Error::device("CUDA GL channel map failed (code " + std::to_string(rc) + ")");
    return range;
  }
  void unmap(void *resource) noexcept override { unmap_(state_.ctx, resource); }
  void unregister(void *resource) noexcept override { unregister_(state_.ctx, resource); }

private:
  tm_client_state state_;
  tm_cuda_map_fn map_;
  tm_cuda_unmap_fn unmap_;
  tm_cuda_unregister_fn unregister_;
};

} // namespace

Result<std::shared_ptr<CudaGlOps>> cuda_gl_ops_from_client(const tm_client_state &state, tm_cuda_map_fn map,
                                                           tm_cuda_unmap_fn unmap, tm_cuda_unregister_fn unregister) {
  // Checked before anything is called: a silently non-owning attach is the
  // failure this channel exists to prevent.
  if (!state.ctx || !state.retain || !state.release)
    return Error::invalid_argument("CUDA client state must carry a non-NULL ctx, retain and release");
  if (!map || !unmap || !unregister)
    return Error::invalid_argument("CUDA GL channel must carry non-NULL map, unmap and unregister functions");
  // Allocate first so that a failed allocation cannot strand a retain.
  std::shared_ptr<CudaGlOps> ops;
  try {
    auto *raw = new ImportedGlOps(state, map, unmap, unregister);
    state.retain(state.ctx);
    ops.reset(raw);
  } catch (const std::bad_alloc &) {
    return Error::device("cuda_gl_ops_from_client: out of memory");
  }
  return ops;
}

CudaGlClientParts &CudaGlClientParts::operator=(CudaGlClientParts &&other) noexcept {
  if (this != &other) {
    CudaGlClientParts old(std::move(*this));
    parts_ = other.parts_;
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

CudaGlClientParts::~CudaGlClientParts() {
  if (owned_ && parts_.ops.state.release)
    parts_.ops.state.release(parts_.ops.state.ctx);
}

Result<CudaGlClientParts> CudaHandle::into_client_parts() {
  std::lock_guard lock(mu_);
  if (backing_.kind != CudaHandleKind::GlBuffer)
    return Error::invalid_argument(std::string("CudaHandle::into_client_parts: attaching across the C ABI is for "
                                               "GL-buffer registrations only, this handle is ") +
                                   cuda_handle_kind_name(backing_.kind));
  if (!backing_.ops)
    return Error::invalid_operation("CudaHandle::into_client_parts: GL buffer handle without GL operations");
  Channel *channel = new (std::nothrow) Channel{backing_.ops, {}};
  if (!channel)
    return Error::device("CudaHandle::into_client_parts: out of memory");
  channel->refs.store(1, std::memory_order_relaxed);
  tm_cuda_gl_client_parts parts{};
  parts.ops.state.ctx = channel;
  parts.ops.state.retain = channel_retain;
  parts.ops.state.release = channel_release;
  parts.ops.map = channel_map;
  parts.ops.unmap = channel_unmap;
  parts.ops.unregister = channel_unregister;
  parts.resource = backing_.resource;
  parts.size = size_;
  // The receiver owns the registration now.
  backing_ = Backing{};
  return CudaGlClientParts(parts);
}

} // namespace tensormem

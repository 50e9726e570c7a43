// SPDX-License-Identifier: Apache-2.0
// The cross-boundary PBO channel: the producer's table, importing a table
// back into PboOps, error codes and client parts. Nothing here is keyed by
// buffer id: a channel is its ctx, and no process-global registry exists.
#include "pbo_channel.hpp"

#include <tensormem/log.hpp>

#include <cerrno>
#include <new>
#include <string>

namespace tensormem {
namespace {

const PboStorage *storage_of(const void *ctx) noexcept { return static_cast<const PboStorage *>(ctx); }

} // namespace

// The table's functions have C language linkage, as the table's types say.
extern "C" {
static void tm_pbo_channel_retain(const void *ctx) { PboChannel::retain(ctx); }
static void tm_pbo_channel_release(const void *ctx) { PboChannel::release(ctx); }
static int tm_pbo_channel_map(const void *ctx, uint32_t buffer_id, size_t size, uint8_t **out_ptr, size_t *out_len) {
  return PboChannel::map(ctx, buffer_id, size, out_ptr, out_len);
}
static int tm_pbo_channel_unmap(const void *ctx, uint32_t buffer_id) { return PboChannel::unmap(ctx, buffer_id); }
}

tm_pbo_ops PboChannel::table_for(const PboStorage *storage) noexcept {
  tm_pbo_ops table{};
  table.state.ctx = storage;
  table.state.retain = tm_pbo_channel_retain;
  table.state.release = tm_pbo_channel_release;
  table.map = tm_pbo_channel_map;
  table.unmap = tm_pbo_channel_unmap;
  return table;
}

void PboChannel::retain(const void *ctx) noexcept {
  if (ctx)
    storage_of(ctx)->retain_channel();
}

void PboChannel::release(const void *ctx) noexcept {
  if (ctx)
    storage_of(ctx)->release_channel();
}

int PboChannel::code_of(const Error &error) noexcept {
  return error.kind() == ErrorKind::Disconnected ? TM_PBO_DISCONNECTED : TM_PBO_FAILED;
}

Error PboChannel::error_of(int code) {
  if (code == TM_PBO_DISCONNECTED)
    return Error::disconnected("cross-boundary PBO operation: the producer's GL context is gone");
  // Only the coarse code crosses; the producer's text stays on its side.
  return Error::not_implemented("cross-boundary PBO operation failed: errno " + std::to_string(code));
}

// Producer side of map. The ops call goes straight to GL, not
// through this storage's MapState: the importer has its own MapState, and the
// GL worker serialises the two handles per buffer.
int PboChannel::map(const void *ctx, std::uint32_t buffer_id, std::size_t size, std::uint8_t **out_ptr,
                    std::size_t *out_len) noexcept {
  try {
    if (!ctx || !out_ptr || !out_len)
      return TM_PBO_FAILED;
    const PboStorage *storage = storage_of(ctx);
    // A table answers for its own buffer only; another name in the same GL
    // context is not something this channel was handed.
    if (buffer_id != storage->buffer_id()) {
      log(LogLevel::Warning, "PBO channel: map of buffer " + std::to_string(buffer_id) +
                                 " through the table of buffer " + std::to_string(storage->buffer_id()) +
                                 " is refused");
      return TM_PBO_FAILED;
    }
    // Nor for more than its buffer: a caller that wrapped this table with a
    // larger size would otherwise have the producer map (a client channel:
    // hand out) bytes past the allocation. Found by tests/fuzz/fuzz_capi.cpp.
    if (size > storage->size_bytes()) {
      log(LogLevel::Warning, "PBO channel: map of " + std::to_string(size) + " bytes of buffer " +
                                 std::to_string(buffer_id) + ", which has " + std::to_string(storage->size_bytes()) +
                                 ", is refused");
      return TM_PBO_FAILED;
    }
    // The table has no access argument (its layout is frozen): map for both.
    Result<BackendMapping> mapping = storage->ops()->map_buffer(buffer_id, size, CpuAccess::ReadWrite);
    if (!mapping) {
      const int code = code_of(mapping.error());
      std::lock_guard lock(storage->channel_mu_);
      storage->channel_disconnected_ = code == TM_PBO_DISCONNECTED;
      return code;
    }
    *out_ptr = reinterpret_cast<std::uint8_t *>(mapping->data);
    *out_len = mapping->length;
    std::lock_guard lock(storage->channel_mu_);
    ++storage->channel_maps_;
    return TM_PBO_OK;
  } catch (...) {
    return TM_PBO_FAILED; // no exception crosses the C boundary
  }
}

int PboChannel::unmap(const void *ctx, std::uint32_t buffer_id) noexcept {
  try {
    if (!ctx)
      return TM_PBO_FAILED;
    const PboStorage *storage = storage_of(ctx);
    if (buffer_id != storage->buffer_id())
      return TM_PBO_FAILED;
    // Only what this table mapped: an unmap of the right id with no map
    // outstanding would reach the owner's unmap unbalanced (for an imported
    // buffer, the producer's). Found by tests/fuzz/fuzz_capi.cpp.
    {
      std::lock_guard lock(storage->channel_mu_);
      if (storage->channel_maps_ == 0) {
        if (storage->channel_disconnected_)
          return TM_PBO_DISCONNECTED; // nothing was mapped: the owner's context is gone
        log(LogLevel::Warning, "PBO channel: unmap of buffer " + std::to_string(buffer_id) +
                                   " without a map through this table is refused");
        return TM_PBO_FAILED;
      }
      --storage->channel_maps_;
    }
    Result<void> done = storage->ops()->unmap_buffer(buffer_id);
    return done ? TM_PBO_OK : code_of(done.error());
  } catch (...) {
    return TM_PBO_FAILED;
  }
}

namespace {

/// PboOps over a client channel. It holds one retain on the channel for its
/// whole life, which is what lets an imported tensor outlive its producer;
/// it never deletes the buffer.
class ImportedPboOps final : public PboOps {
public:
  // Built only from a checked state. The one retain happens here, after the
  // memory exists, so an allocation failure cannot strand a reference and
  // the destructor always balances exactly one retain.
  ImportedPboOps(const tm_client_state &state, tm_pbo_map_fn map, tm_pbo_unmap_fn unmap) noexcept
      : state_(state), map_(map), unmap_(unmap) {
    state_.retain(state_.ctx);
  }
  ImportedPboOps(const ImportedPboOps &) = delete;
  ImportedPboOps &operator=(const ImportedPboOps &) = delete;
  ~ImportedPboOps() override { state_.release(state_.ctx); }

  // The client's claim is returned as it is; MapState refuses
  // null and short mappings.
  Result<BackendMapping> map_buffer(std::uint32_t buffer_id, std::size_t size, CpuAccess) noexcept override {
    try {
      std::uint8_t *ptr = nullptr;
      std::size_t len = 0;
      int rc = map_(state_.ctx, buffer_id, size, &ptr, &len);
      if (rc != TM_PBO_OK)
        return PboChannel::error_of(rc);
      return BackendMapping{reinterpret_cast<std::byte *>(ptr), len};
    } catch (const std::bad_alloc &) {
      return Error::not_implemented("cross-boundary PBO map: out of memory reporting the failure");
    }
  }

  Result<void> unmap_buffer(std::uint32_t buffer_id) noexcept override {
    try {
      int rc = unmap_(state_.ctx, buffer_id);
      if (rc != TM_PBO_OK)
        return PboChannel::error_of(rc);
      return {};
    } catch (const std::bad_alloc &) {
      return Error::not_implemented("cross-boundary PBO unmap: out of memory reporting the failure");
    }
  }

  void delete_buffer(std::uint32_t) noexcept override {}

private:
  tm_client_state state_;
  tm_pbo_map_fn map_;
  tm_pbo_unmap_fn unmap_;
};

} // namespace

Result<tm_pbo_ops> read_pbo_table(const tm_pbo_ops *table) {
  if (!table)
    return Error::invalid_argument("PBO channel: the descriptor carries no operations table");
  return *table;
}

Result<std::shared_ptr<PboOps>> client_state_pbo_ops(const tm_client_state &state, tm_pbo_map_fn map,
                                                     tm_pbo_unmap_fn unmap) {
  // All five parts are checked before anything is called.
  if (!state.ctx)
    return Error::invalid_argument("PBO client state carries a NULL ctx");
  if (!state.retain)
    return Error::invalid_argument("PBO client state carries a NULL retain");
  if (!state.release)
    return Error::invalid_argument("PBO client state carries a NULL release");
  if (!map)
    return Error::invalid_argument("PBO operations table carries a NULL map");
  if (!unmap)
    return Error::invalid_argument("PBO operations table carries a NULL unmap");
  try {
    return std::shared_ptr<PboOps>(std::make_shared<ImportedPboOps>(state, map, unmap));
  } catch (const std::bad_alloc &) {
    return Error::io(ENOMEM, "PBO channel: allocating the imported operations");
  }
}

Result<Tensor> from_client_pbo(const tm_client_state &state, tm_pbo_map_fn map, tm_pbo_unmap_fn unmap,
                               std::uint32_t buffer_id, std::size_t size, Shape shape, DType dtype, std::string name) {
  Result<std::shared_ptr<PboOps>> ops = client_state_pbo_ops(state, map, unmap);
  if (!ops)
    return std::move(ops).error();
  return from_pbo(buffer_id, size, std::move(shape), dtype, std::move(name), std::move(*ops));
}

PboClientParts::PboClientParts(std::shared_ptr<PboStorage> owner, const Tensor &tensor)
    : ops_(*owner->client_table()), buffer_id_(owner->buffer_id()), size_(owner->size_bytes()), shape_(tensor.shape()),
      dtype_(tensor.dtype()), owner_(std::move(owner)) {}

Result<PboClientParts> into_client_parts(Tensor &&tensor) {
  std::shared_ptr<PboStorage> storage = pbo_storage_of(tensor);
  if (!storage)
    return Error::invalid_argument(std::string("into_client_parts: a ") + storage_kind_name(tensor.storage_kind()) +
                                   " tensor has no PBO channel");
  // The C entry point has no offset argument, so a
  // window off the buffer's origin would land at byte 0 on the far side.
  if (tensor.offset() != 0)
    return Error::invalid_operation(
        "into_client_parts: the tensor is a sub-view at byte " + std::to_string(tensor.offset()) + " of GL buffer " +
        std::to_string(storage->buffer_id()) + "; export the whole buffer and take the view on the far side");
  PboClientParts parts(std::move(storage), tensor);
  Tensor consumed = std::move(tensor);
  (void)consumed;
  return parts;
}

} // namespace tensormem

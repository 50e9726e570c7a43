// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/storage.hpp>
#include <tensormem/tensor.hpp>
#include <tensormem/tensormem.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace tensormem {

class GlWorker;

/// The port through which a PBO storage reaches GL. The
/// storage never calls GL itself. Every call blocks until done, is usable
/// from any thread and never throws.
class TENSORMEM_API PboOps {
public:
  virtual ~PboOps() = default;

  /// Maps the whole buffer (`size` bytes) for `access` and returns the
  /// address and the length the implementation vouches for. A shorter length
  /// than `size` is a failed map; the storage refuses it.
  virtual Result<BackendMapping> map_buffer(std::uint32_t buffer_id, std::size_t size, CpuAccess access) noexcept = 0;
  /// Ends the one live mapping of the buffer.
  virtual Result<void> unmap_buffer(std::uint32_t buffer_id) noexcept = 0;
  /// Deletes the buffer; fire-and-forget.
  virtual void delete_buffer(std::uint32_t buffer_id) noexcept = 0;
  /// The GL worker whose context holds this port's buffers, through which
  /// another API reaches them; null where there is none (the default: a
  /// client's port; a worker that is gone).
  virtual std::shared_ptr<GlWorker> gl_worker() const noexcept { return nullptr; }
};

/// One OpenGL pixel buffer object as a storage. Its identity is (Pbo, GL
/// name); its map state is the core MapState, so readers share one GL map
/// and writers are exclusive. The GL buffer is deleted exactly once, when
/// the last reference (tensor, view, map, client parts, imported channel)
/// goes.
class TENSORMEM_API PboStorage final : public Storage {
public:
  /// Wraps an existing GL buffer of `size` bytes. InvalidArgument for null
  /// ops or GL name 0 (never a buffer); InvalidSize(0) for a zero size.
  /// Takes no reference to `ops` beyond the one it is handed.
  static Result<std::shared_ptr<PboStorage>> create(std::uint32_t buffer_id, std::size_t size,
                                                    std::shared_ptr<PboOps> ops);
  ~PboStorage() override;

  StorageKind kind() const noexcept override { return StorageKind::Pbo; }
  BufferIdentity identity() const noexcept override { return BufferIdentity::derived(StorageKind::Pbo, buffer_id_); }
  /// Always refused with TM_PBO_PIN_HOST_REFUSAL.
  Result<HostPin> pin_host(CpuAccess access) override;
  /// GL names are unique per context only: the port (one per GL worker) scopes them.
  const void *identity_scope() const noexcept override { return ops_.get(); }
  /// The GL buffer and its port's worker (GlBufferHandle).
  Result<StorageHandle> export_handle() override;

  std::uint32_t buffer_id() const noexcept { return buffer_id_; }
  const std::shared_ptr<PboOps> &ops() const noexcept { return ops_; }

  /// This storage's C operations table: built on first
  /// request and stored in the storage, so every request returns the same
  /// address and it lives exactly as long as the storage. Its ctx is this
  /// storage; it holds no reference to it and adds none to the ops.
  const tm_pbo_ops *client_table() const noexcept;

  /// References taken through the table's retain and not yet released.
  std::size_t channel_references() const noexcept;

  /// "PboStorage { buffer_id: N, size: N, mapped: bool }".
  std::string describe() const;

private:
  struct Token {};

public:
  PboStorage(Token, std::uint32_t buffer_id, std::size_t size, std::shared_ptr<PboOps> ops) noexcept;

private:
  friend struct PboChannel;

  Result<BackendMapping> backend_map(std::size_t size, CpuAccess access) noexcept override;
  Result<void> backend_unmap() noexcept override;

  // Reference counting on behalf of the C channel: while a client holds a
  // retain, `self_` keeps this storage alive.
  void retain_channel() const noexcept;
  void release_channel() const noexcept;

  std::uint32_t buffer_id_;
  std::shared_ptr<PboOps> ops_;
  mutable std::once_flag table_once_;
  mutable tm_pbo_ops table_{};
  mutable std::mutex channel_mu_;
  mutable std::size_t channel_refs_ = 0;
  // Maps the channel's table handed out and not yet unmapped: an unmap
  // without one is refused, never passed on to the buffer's owner.
  mutable std::size_t channel_maps_ = 0;
  // A map through the channel found the owner's GL context gone: a later
  // unmap without a map says so too.
  mutable bool channel_disconnected_ = false;
  mutable std::shared_ptr<const Storage> self_;
};

/// The message PboStorage::pin_host refuses with.
inline constexpr const char *kPboPinHostRefusal = TM_PBO_PIN_HOST_REFUSAL;

/// Default tensor name of a wrapped PBO.
inline constexpr const char *kPboDefaultName = "pbo_tensor";

/// The checks from_pbo makes before anything exists, in order:
/// size 0 → InvalidSize(0), overflowing footprint → InvalidShape, `size`
/// smaller than the footprint → ShapeMismatch naming both numbers and the
/// type. Messages start with `prefix`; `buffer_id` names the GL buffer, or
/// is nullopt for one not created yet.
TENSORMEM_API Result<void> check_pbo_fit(std::string_view prefix, std::optional<std::uint32_t> buffer_id,
                                         std::size_t size, const Shape &shape, DType dtype);

/// Wraps GL buffer `buffer_id` of `size` bytes as a tensor of `shape`:
/// checks, in order, size 0 → InvalidSize(0), overflowing footprint →
/// InvalidShape, allocation smaller than the footprint → ShapeMismatch
/// naming both numbers and the type. A larger allocation is accepted. An
/// empty `name` becomes "pbo_tensor".
TENSORMEM_API Result<Tensor> from_pbo(std::uint32_t buffer_id, std::size_t size, Shape shape, DType dtype,
                                      std::string name, std::shared_ptr<PboOps> ops);

/// The PBO storage behind `tensor`, or null when it is not PBO-backed.
TENSORMEM_API std::shared_ptr<PboStorage> pbo_storage_of(const Tensor &tensor) noexcept;

/// Debug text of a PBO tensor: names the type PboTensor and
/// shows the quoted name, shape, dtype, window offset, buffer id and
/// allocation size.
TENSORMEM_API std::string describe_pbo(const Tensor &tensor);

/// Reads a table's three parts. Null → InvalidArgument. The
/// table only has to be alive for this call.
TENSORMEM_API Result<tm_pbo_ops> read_pbo_table(const tm_pbo_ops *table);

/// Turns a client state and its two functions into PboOps:
/// a null ctx, retain, release, map or unmap is InvalidArgument, refused
/// before anything is called. On success it retains the state once; the
/// returned ops release it once when their last reference goes. Their
/// delete_buffer does nothing: an importer does not own the buffer.
TENSORMEM_API Result<std::shared_ptr<PboOps>> client_state_pbo_ops(const tm_client_state &state, tm_pbo_map_fn map,
                                                                   tm_pbo_unmap_fn unmap);

/// client_state_pbo_ops, then from_pbo.
TENSORMEM_API Result<Tensor> from_client_pbo(const tm_client_state &state, tm_pbo_map_fn map, tm_pbo_unmap_fn unmap,
                                             std::uint32_t buffer_id, std::size_t size, Shape shape, DType dtype,
                                             std::string name = {});

class PboClientParts;

/// A whole PBO handed to a C entry point on this thread.
/// The client state borrows the parts' own reference to the storage, so the
/// buffer stays alive until the callee has retained it and the parts are
/// dropped. Move-only and meant for the calling thread.
class TENSORMEM_API PboClientParts {
public:
  PboClientParts(PboClientParts &&) noexcept = default;
  PboClientParts &operator=(PboClientParts &&) noexcept = default;
  PboClientParts(const PboClientParts &) = delete;
  PboClientParts &operator=(const PboClientParts &) = delete;
  ~PboClientParts() = default;

  const tm_pbo_ops &ops() const noexcept { return ops_; }
  const tm_client_state &state() const noexcept { return ops_.state; }
  std::uint32_t buffer_id() const noexcept { return buffer_id_; }
  /// The whole GL allocation, whatever the shape.
  std::size_t size() const noexcept { return size_; }
  const Shape &shape() const noexcept { return shape_; }
  DType dtype() const noexcept { return dtype_; }

private:
  friend Result<PboClientParts> into_client_parts(Tensor &&tensor);
  PboClientParts(std::shared_ptr<PboStorage> owner, const Tensor &tensor);

  tm_pbo_ops ops_{};
  std::uint32_t buffer_id_ = 0;
  std::size_t size_ = 0;
  Shape shape_;
  DType dtype_ = DType::U8;
  std::shared_ptr<PboStorage> owner_;
};

// Declared after the class (whose friend it is) so that the export attribute
// sits on a declaration MinGW accepts: a friend redeclaration cannot carry
// dllimport.
/// Exports a PBO tensor as client parts, consuming it. A window that does not
/// start at byte 0 is refused with InvalidOperation:
/// the C entry point cannot carry an offset. A shape smaller than the
/// allocation is fine. A tensor that is not PBO-backed → InvalidArgument.
TENSORMEM_API Result<PboClientParts> into_client_parts(Tensor &&tensor);

} // namespace tensormem

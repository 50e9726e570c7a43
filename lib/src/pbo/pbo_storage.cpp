// SPDX-License-Identifier: Apache-2.0
#include "pbo_channel.hpp"

#include <tensormem/log.hpp>
#include <tensormem/pbo_storage.hpp>

#include <sstream>

namespace tensormem {

/// \brief Wraps GL buffer \a buffer_id of \a size bytes reached through \a ops.
Result<std::shared_ptr<PboStorage>> PboStorage::create(std::uint32_t buffer_id, std::size_t size,
                                                       std::shared_ptr<PboOps> ops) {
  if (!ops)
    return Error::invalid_argument("PboStorage: the PBO operations object is null");
  if (buffer_id == 0)
    return Error::invalid_argument("PboStorage: GL buffer name 0 is never a buffer");
  if (size == 0)
    return Error::invalid_size(0, "PboStorage: the GL allocation of buffer " + std::to_string(buffer_id) +
                                      " is zero bytes");
  return std::make_shared<PboStorage>(Token{}, buffer_id, size, std::move(ops));
}

PboStorage::PboStorage(Token, std::uint32_t buffer_id, std::size_t size, std::shared_ptr<PboOps> ops) noexcept
    : Storage(size), buffer_id_(buffer_id), ops_(std::move(ops)) {}

// The storage is the one owner of the GL buffer; copies, views,
// maps, parts and imported channels all hold the storage, so this runs once.
PboStorage::~PboStorage() {
  // Another API's import of the buffer (a CUDA registration) is released
  // before the buffer goes.
  run_destroy_hooks();
  ops_->delete_buffer(buffer_id_);
}

Result<HostPin> PboStorage::pin_host(CpuAccess) { return Error::not_implemented(kPboPinHostRefusal); }

// MapState always asks for the whole allocation.
Result<BackendMapping> PboStorage::backend_map(std::size_t size, CpuAccess access) noexcept {
  return ops_->map_buffer(buffer_id_, size, access);
}

Result<void> PboStorage::backend_unmap() noexcept { return ops_->unmap_buffer(buffer_id_); }

const tm_pbo_ops *PboStorage::client_table() const noexcept {
  // The table borrows; a reference held here would be a cycle
  // through the storage that contains it and would leak every GL buffer.
  std::call_once(table_once_, [this] { table_ = PboChannel::table_for(this); });
  return &table_;
}

std::size_t PboStorage::channel_references() const noexcept {
  std::lock_guard lock(channel_mu_);
  return channel_refs_;
}

void PboStorage::retain_channel() const noexcept {
  std::lock_guard lock(channel_mu_);
  if (channel_refs_ == 0) {
    // The retaining client vouches that a reference exists right now, so
    // weak_from_this cannot be expired here.
    std::shared_ptr<const Storage> self = weak_from_this().lock();
    if (!self) {
      log(LogLevel::Error, "PBO channel: retain on a storage nobody owns; the reference is not taken");
      return;
    }
    self_ = std::move(self);
  }
  ++channel_refs_;
}

void PboStorage::release_channel() const noexcept {
  std::shared_ptr<const Storage> last;
  {
    std::lock_guard lock(channel_mu_);
    if (channel_refs_ == 0) {
      log(LogLevel::Error, "PBO channel: release without a matching retain is ignored");
      return;
    }
    if (--channel_refs_ == 0)
      last = std::move(self_);
  }
  // `last` may be the final reference: the storage (and this mutex) goes
  // when it is destroyed, after the lock above has been let go.
}

std::string PboStorage::describe() const {
  std::ostringstream os;
  os << "PboStorage { buffer_id: " << buffer_id_ << ", size: " << size_bytes()
     << ", mapped: " << (is_mapped() ? "true" : "false") << " }";
  return os.str();
}

Result<void> check_pbo_fit(std::string_view prefix, std::optional<std::uint32_t> buffer_id, std::size_t size,
                           const Shape &shape, DType dtype) {
  const std::string head(prefix);
  if (size == 0) {
    if (buffer_id)
      return Error::invalid_size(0, head + ": the GL allocation of buffer " + std::to_string(*buffer_id) +
                                        " is zero bytes");
    return Error::invalid_size(0, head + ": zero bytes");
  }
  Result<std::size_t> footprint = checked_footprint(shape, dtype);
  if (!footprint)
    return std::move(footprint).error();
  if (size < *footprint) {
    const std::string holder =
        buffer_id ? "GL buffer " + std::to_string(*buffer_id) + " holds" : std::string("the buffer would hold");
    return Error::shape_mismatch(head + ": shape " + shape_to_string(shape) + " of " + dtype_name(dtype) + " needs " +
                                 std::to_string(*footprint) + " bytes, " + holder + " " + std::to_string(size));
  }
  return {};
}

Result<Tensor> from_pbo(std::uint32_t buffer_id, std::size_t size, Shape shape, DType dtype, std::string name,
                        std::shared_ptr<PboOps> ops) {
  // The checks, in the seed's order, before a storage exists: a refused wrap
  // must not delete the caller's buffer when the storage is dropped.
  Result<void> fits = check_pbo_fit("from_pbo", buffer_id, size, shape, dtype);
  if (!fits)
    return std::move(fits).error();
  Result<std::shared_ptr<PboStorage>> storage = PboStorage::create(buffer_id, size, std::move(ops));
  if (!storage)
    return std::move(storage).error();
  // An empty name becomes "pbo_tensor" (kPboDefaultName) in Tensor::wrap.
  return Tensor::wrap(std::move(*storage), std::move(shape), dtype, std::move(name));
}

std::shared_ptr<PboStorage> pbo_storage_of(const Tensor &tensor) noexcept {
  if (tensor.storage_kind() != StorageKind::Pbo)
    return nullptr;
  return std::dynamic_pointer_cast<PboStorage>(tensor.storage());
}

std::string describe_pbo(const Tensor &tensor) {
  std::ostringstream os;
  os << "PboTensor { name: \"" << tensor.name() << "\", shape: " << shape_to_string(tensor.shape())
     << ", dtype: " << dtype_name(tensor.dtype()) << ", offset: " << tensor.offset();
  if (auto pbo = pbo_storage_of(tensor))
    os << ", buffer_id: " << pbo->buffer_id() << ", size: " << pbo->size_bytes();
  else
    os << ", storage: " << storage_kind_name(tensor.storage_kind());
  os << " }";
  return os.str();
}

Result<StorageHandle> PboStorage::export_handle() {
  return StorageHandle(GlBufferHandle{buffer_id_, size_bytes(), ops_->gl_worker()});
}

} // namespace tensormem

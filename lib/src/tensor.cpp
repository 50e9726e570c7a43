// SPDX-License-Identifier: Apache-2.0
#include <tensormem/tensor.hpp>

#include <cctype>
#include <sstream>

namespace tensormem {

Result<Tensor> Tensor::wrap(std::shared_ptr<Storage> storage, Shape shape, DType dtype, std::string name) {
  if (!storage)
    return Error::invalid_argument("Tensor::wrap: storage is null");
  Result<std::size_t> bytes = checked_footprint(shape, dtype);
  if (!bytes)
    return std::move(bytes).error();
  if (*bytes > storage->size_bytes())
    return Error::shape_mismatch("Tensor::wrap: shape " + shape_to_string(shape) + " of " + dtype_name(dtype) +
                                 " needs " + std::to_string(*bytes) + " bytes, the allocation holds " +
                                 std::to_string(storage->size_bytes()));
  if (name.empty()) {
    // "mem_tensor", "dmabuf_tensor", "pbo_tensor": the seed's default for PBOs, generalised.
    name = storage_kind_name(storage->kind());
    for (char &c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    name += "_tensor";
  }
  return Tensor(std::move(storage), std::move(shape), dtype, std::move(name), 0, *bytes);
}

Result<Tensor> Tensor::allocate(Shape shape, DType dtype, std::string name) {
  Result<std::size_t> bytes = checked_footprint(shape, dtype);
  if (!bytes)
    return std::move(bytes).error();
  auto storage = MemStorage::allocate(*bytes);
  if (!storage)
    return std::move(storage).error();
  return wrap(std::move(*storage), std::move(shape), dtype, std::move(name));
}

Result<Tensor> Tensor::view(std::size_t offset_bytes, Shape shape) const {
  Result<std::size_t> bytes = checked_footprint(shape, dtype_);
  if (!bytes)
    return std::move(bytes).error();
  if (offset_bytes % dtype_size(dtype_) != 0)
    return Error::invalid_operation("Tensor::view: offset " + std::to_string(offset_bytes) +
                                    " is not a multiple of the " + std::to_string(dtype_size(dtype_)) + "-byte " +
                                    dtype_name(dtype_) + " element");
  Result<std::size_t> start = checked_add(offset_, offset_bytes, offset_bytes, "Tensor::view offset");
  if (!start)
    return std::move(start).error();
  Result<std::size_t> end = checked_add(*start, *bytes, *bytes, "Tensor::view end");
  if (!end)
    return std::move(end).error();
  if (*end > storage_->size_bytes())
    return Error::insufficient_capacity(*end, storage_->size_bytes(),
                                        "Tensor::view " + shape_to_string(shape) + " at offset " +
                                            std::to_string(*start));
  Tensor out(storage_, std::move(shape), dtype_, name_, *start, *bytes);
  return out;
}

Result<void> Tensor::reshape(Shape shape) {
  Result<std::size_t> bytes = checked_footprint(shape, dtype_);
  if (!bytes)
    return std::move(bytes).error();
  if (*bytes != nbytes_)
    return Error::shape_mismatch("Tensor::reshape: " + shape_to_string(shape) + " of " + dtype_name(dtype_) + " is " +
                                 std::to_string(*bytes) + " bytes, the tensor " + shape_to_string(shape_) + " is " +
                                 std::to_string(nbytes_));
  shape_ = std::move(shape);
  return {};
}

Result<void> Tensor::set_logical_shape(Shape shape) {
  Result<std::size_t> bytes = checked_footprint(shape, dtype_);
  if (!bytes)
    return std::move(bytes).error();
  if (*bytes > capacity_bytes())
    return Error::insufficient_capacity(*bytes, capacity_bytes(),
                                        "Tensor::set_logical_shape " + shape_to_string(shape) + " at offset " +
                                            std::to_string(offset_));
  shape_ = std::move(shape);
  nbytes_ = *bytes;
  return {};
}

Result<void> Tensor::set_offset(std::size_t offset) {
  if (offset % dtype_size(dtype_) != 0)
    return Error::invalid_operation("Tensor::set_offset: " + std::to_string(offset) + " is not a multiple of the " +
                                    std::to_string(dtype_size(dtype_)) + "-byte element");
  Result<std::size_t> end = checked_add(offset, nbytes_, offset, "Tensor::set_offset end");
  if (!end)
    return std::move(end).error();
  if (*end > storage_->size_bytes())
    return Error::insufficient_capacity(*end, storage_->size_bytes(),
                                        "Tensor::set_offset " + std::to_string(offset) + " with " +
                                            shape_to_string(shape_));
  offset_ = offset;
  return {};
}

Result<HostView> Tensor::map_window(CpuAccess access, std::size_t byte_count, MapState::Wait wait) const {
  if (access == CpuAccess::None)
    return Error::invalid_argument("Tensor::map: access None grants no CPU access");
  // Re-checked on every map: the window must still lie inside the allocation.
  if (byte_count > capacity_bytes())
    return Error::insufficient_capacity(byte_count, capacity_bytes(),
                                        "Tensor::map of " + std::to_string(byte_count) + " bytes at offset " +
                                            std::to_string(offset_));
  Result<void> window = storage_->check_cpu_window(access, offset_, byte_count);
  if (!window)
    return std::move(window).error();
  Result<HostPin> pin = storage_->map(access, wait);
  if (!pin)
    return std::move(pin).error();
  return HostView(pin->slice(offset_, byte_count), shape_, dtype_, access);
}

Result<HostView> Tensor::map(CpuAccess access) const { return map_window(access, nbytes_, MapState::Wait::Block); }

Result<HostView> Tensor::try_map(CpuAccess access) const { return map_window(access, nbytes_, MapState::Wait::NoWait); }

Result<HostView> Tensor::map_bytes(CpuAccess access, std::size_t byte_count) const {
  if (byte_count == 0)
    return Error::invalid_size(0, "Tensor::map_bytes: zero bytes");
  return map_window(access, byte_count, MapState::Wait::Block);
}

Result<HostPin> Tensor::pin_host(CpuAccess access) const {
  Result<HostPin> pin = storage_->pin_host(access);
  if (!pin)
    return std::move(pin).error();
  return pin->slice(offset_, nbytes_);
}

std::string Tensor::describe() const {
  std::ostringstream os;
  os << "Tensor { name: \"" << name_ << "\", shape: " << shape_to_string(shape_) << ", dtype: " << dtype_name(dtype_)
     << ", offset: " << offset_ << ", storage: " << storage_kind_name(storage_->kind())
     << ", size: " << storage_->size_bytes() << ", key: " << identity().key << " }";
  return os.str();
}

} // namespace tensormem

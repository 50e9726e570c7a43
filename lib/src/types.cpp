// SPDX-License-Identifier: Apache-2.0
#include <tensormem/types.hpp>

#include <limits>

namespace tensormem {

std::size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
  case DType::U8:
  case DType::I8: return 1;
  case DType::U16:
  case DType::I16:
  case DType::F16: return 2;
  case DType::U32:
  case DType::I32:
  case DType::F32: return 4;
  case DType::F64: return 8;
  }
  return 1;
}

const char *dtype_name(DType dtype) noexcept {
  switch (dtype) {
  case DType::U8: return "u8";
  case DType::I8: return "i8";
  case DType::U16: return "u16";
  case DType::I16: return "i16";
  case DType::U32: return "u32";
  case DType::I32: return "i32";
  case DType::F16: return "f16";
  case DType::F32: return "f32";
  case DType::F64: return "f64";
  }
  return "?";
}

const char *access_name(CpuAccess access) noexcept {
  switch (access) {
  case CpuAccess::None: return "none";
  case CpuAccess::Read: return "read";
  case CpuAccess::Write: return "write";
  case CpuAccess::ReadWrite: return "read-write";
  }
  return "?";
}

const char *storage_kind_name(StorageKind kind) noexcept {
  switch (kind) {
  case StorageKind::Mem: return "Mem";
  case StorageKind::DmaBuf: return "DmaBuf";
  case StorageKind::Pbo: return "Pbo";
  case StorageKind::D3d11: return "d3d11";
  }
  return "?";
}

std::string shape_to_string(std::span<const std::size_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Result<std::size_t> checked_add(std::size_t a, std::size_t b, std::uint64_t reported, const char *what) {
  std::size_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    return Error::invalid_size(reported,
                               std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) + " overflows");
  return sum;
}

Result<std::size_t> checked_mul(std::size_t a, std::size_t b, const char *what) {
  std::size_t product;
  if (__builtin_mul_overflow(a, b, &product))
    return Error::invalid_shape(std::string(what) + ": " + std::to_string(a) + " * " + std::to_string(b) +
                                " overflows");
  return product;
}

Result<std::size_t> checked_footprint(std::span<const std::size_t> shape, DType dtype) {
  if (shape.empty())
    return Error::invalid_size(0, "shape footprint: the shape is empty");
  std::size_t bytes = dtype_size(dtype);
  for (std::size_t dim : shape) {
    if (__builtin_mul_overflow(bytes, dim, &bytes))
      return Error::invalid_shape("shape footprint: " + shape_to_string(shape) + " of " + dtype_name(dtype) +
                                  " overflows a " + std::to_string(std::numeric_limits<std::size_t>::digits) +
                                  "-bit size");
  }
  if (bytes == 0)
    return Error::invalid_size(0, "shape footprint: " + shape_to_string(shape) + " holds no elements");
  return bytes;
}

} // namespace tensormem

// SPDX-License-Identifier: Apache-2.0
// The tm_* C entry points. Every one catches everything and reports through
// its return value plus the caller's tm_error, never through a thread-local
// slot.
#include <tensormem/pbo_storage.hpp>
#include <tensormem/tensormem.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string_view>

struct tm_tensor {
  tensormem::Tensor tensor;
};

struct tm_map {
  tensormem::HostView view;
};

namespace tensormem {
namespace {

static_assert(static_cast<int>(ErrorKind::Device) + 1 == TM_ERROR_DEVICE, "tm_status mirrors ErrorKind + 1");
static_assert(static_cast<int>(DType::F64) == TM_DTYPE_F64, "tm_dtype mirrors DType");
static_assert(static_cast<int>(CpuAccess::ReadWrite) == TM_ACCESS_READ_WRITE, "tm_access mirrors CpuAccess");
static_assert(sizeof(tm_client_state) == 3 * sizeof(void *), "tm_client_state is three pointer-sized members (the C ABI)");

tm_status report(tm_error *err, tm_status status, std::string_view message) noexcept {
  if (err) {
    err->status = status;
    std::size_t n = std::min(message.size(), sizeof(err->message) - 1);
    std::memcpy(err->message, message.data(), n);
    err->message[n] = '\0';
  }
  return status;
}

tm_status report(tm_error *err, const Error &error) noexcept {
  // Cancelled came after TM_ERROR_INTERNAL took the next number.
  const tm_status status = error.kind() == ErrorKind::Cancelled
                               ? TM_ERROR_CANCELLED
                               : static_cast<tm_status>(static_cast<int>(error.kind()) + 1);
  return report(err, status, error.message());
}

tm_status report_internal(tm_error *err) noexcept {
  return report(err, TM_ERROR_INTERNAL, "tensormem: unexpected failure (out of memory?)");
}

Result<Shape> shape_from(const std::size_t *dims, std::size_t ndim) {
  if (ndim != 0 && !dims)
    return Error::invalid_argument("shape: NULL dimensions with ndim " + std::to_string(ndim));
  return Shape(dims, dims + ndim);
}

Result<DType> dtype_from(tm_dtype dtype) {
  if (static_cast<int>(dtype) < TM_DTYPE_U8 || static_cast<int>(dtype) > TM_DTYPE_F64)
    return Error::invalid_argument("dtype: " + std::to_string(static_cast<int>(dtype)) + " is not a tm_dtype");
  return static_cast<DType>(dtype);
}

tm_status hand_out(Result<Tensor> tensor, tm_tensor **out, tm_error *err) {
  if (!tensor)
    return report(err, tensor.error());
  *out = new tm_tensor{std::move(*tensor)};
  return TM_OK;
}

} // namespace
} // namespace tensormem

using namespace tensormem;

extern "C" {

tm_status tm_tensor_wrap_pbo(const tm_pbo_ops *ops, uint32_t buffer_id, size_t size, const size_t *shape, size_t ndim,
                             tm_dtype dtype, const char *name, tm_tensor **out, tm_error *err) {
  try {
    if (!out)
      return report(err, TM_ERROR_INVALID_ARGUMENT, "tm_tensor_wrap_pbo: out is NULL");
    *out = nullptr;
    Result<tm_pbo_ops> table = read_pbo_table(ops);
    if (!table)
      return report(err, table.error());
    Result<Shape> dims = shape_from(shape, ndim);
    if (!dims)
      return report(err, dims.error());
    Result<DType> type = dtype_from(dtype);
    if (!type)
      return report(err, type.error());
    // The dimensions arrive unchecked; from_pbo's checked
    // footprint is the boundary that holds.
    return hand_out(from_client_pbo(table->state, table->map, table->unmap, buffer_id, size, std::move(*dims), *type,
                                    name ? name : ""),
                    out, err);
  } catch (...) {
    return report_internal(err);
  }
}

tm_status tm_tensor_allocate(const size_t *shape, size_t ndim, tm_dtype dtype, const char *name, tm_tensor **out,
                             tm_error *err) {
  try {
    if (!out)
      return report(err, TM_ERROR_INVALID_ARGUMENT, "tm_tensor_allocate: out is NULL");
    *out = nullptr;
    Result<Shape> dims = shape_from(shape, ndim);
    if (!dims)
      return report(err, dims.error());
    Result<DType> type = dtype_from(dtype);
    if (!type)
      return report(err, type.error());
    return hand_out(Tensor::allocate(std::move(*dims), *type, name ? name : ""), out, err);
  } catch (...) {
    return report_internal(err);
  }
}

tm_status tm_tensor_clone(const tm_tensor *tensor, tm_tensor **out, tm_error *err) {
  try {
    if (!tensor || !out)
      return report(err, TM_ERROR_INVALID_ARGUMENT, "tm_tensor_clone: NULL tensor or out");
    *out = new tm_tensor{tensor->tensor};
    return TM_OK;
  } catch (...) {
    return report_internal(err);
  }
}

tm_status tm_tensor_view(const tm_tensor *tensor, size_t offset_bytes, const size_t *shape, size_t ndim,
                         tm_tensor **out, tm_error *err) {
  try {
    if (!tensor || !out)
      return report(err, TM_ERROR_INVALID_ARGUMENT, "tm_tensor_view: NULL tensor or out");
    *out = nullptr;
    Result<Shape> dims = shape_from(shape, ndim);
    if (!dims)
      return report(err, dims.error());
    return hand_out(tensor->tensor.view(offset_bytes, std::move(*dims)), out, err);
  } catch (...) {
    return report_internal(err);
  }
}

void tm_tensor_free(tm_tensor *tensor) { delete tensor; }

tm_status tm_tensor_pbo_table(const tm_tensor *tensor, const tm_pbo_ops **out, tm_error *err) {
  try {
    if (!tensor || !out)
      return report(err, TM_ERROR_INVALID_ARGUMENT, "tm_tensor_pbo_table: NULL tensor or out");
    *out = nullptr;
    std::shared_ptr<PboStorage> pbo = pbo_storage_of(tensor->tensor);
    if (!pbo)
      return report(err, TM_ERROR_INVALID_ARGUMENT,
                    std::string("tm_tensor_pbo_table: a ") + storage_kind_name(tensor->tensor.storage_kind()) +
                        " tensor has no PBO operations table");
    *out = pbo->client_table();
    return TM_OK;
  } catch (...) {
    return report_internal(err);
  }
}

uint32_t tm_tensor_buffer_id(const tm_tensor *tensor) {
  if (!tensor)
    return 0;
  std::shared_ptr<PboStorage> pbo = pbo_storage_of(tensor->tensor);
  return pbo ? pbo->buffer_id() : 0;
}

size_t tm_tensor_size_bytes(const tm_tensor *tensor) { return tensor ? tensor->tensor.size_bytes() : 0; }

size_t tm_tensor_shape(const tm_tensor *tensor, size_t *dims, size_t capacity) {
  if (!tensor)
    return 0;
  const Shape &shape = tensor->tensor.shape();
  if (dims)
    std::copy_n(shape.begin(), std::min(capacity, shape.size()), dims);
  return shape.size();
}

tm_status tm_tensor_map(const tm_tensor *tensor, tm_access access, tm_map **out_map, uint8_t **out_ptr, size_t *out_len,
                        tm_error *err) {
  try {
    if (!tensor || !out_map || !out_ptr || !out_len)
      return report(err, TM_ERROR_INVALID_ARGUMENT, "tm_tensor_map: NULL tensor or out-parameter");
    *out_map = nullptr;
    *out_ptr = nullptr;
    *out_len = 0;
    if (static_cast<int>(access) < TM_ACCESS_NONE || static_cast<int>(access) > TM_ACCESS_READ_WRITE)
      return report(err, TM_ERROR_INVALID_ARGUMENT, "tm_tensor_map: not a tm_access");
    Result<HostView> view = tensor->tensor.map(static_cast<CpuAccess>(access));
    if (!view)
      return report(err, view.error());
    auto *map = new tm_map{std::move(*view)};
    // The C caller gets one pointer for every access kind; it promised with
    // `access` whether it writes through it.
    *out_ptr = const_cast<uint8_t *>(reinterpret_cast<const uint8_t *>(map->view.data()));
    *out_len = map->view.size_bytes();
    *out_map = map;
    return TM_OK;
  } catch (...) {
    return report_internal(err);
  }
}

void tm_tensor_unmap(tm_map *map) { delete map; }

tm_status tm_tensor_into_client_parts(tm_tensor *tensor, tm_pbo_client_parts *out, tm_error *err) {
  try {
    if (!tensor || !out)
      return report(err, TM_ERROR_INVALID_ARGUMENT, "tm_tensor_into_client_parts: NULL tensor or out");
    std::memset(out, 0, sizeof(*out));
    // Checked on a copy so a refusal leaves the caller's tensor as it was.
    Result<PboClientParts> parts = into_client_parts(Tensor(tensor->tensor));
    if (!parts)
      return report(err, parts.error());
    auto *owner = new PboClientParts(std::move(*parts));
    out->ops = owner->ops();
    out->buffer_id = owner->buffer_id();
    out->size = owner->size();
    out->shape = owner->shape().data();
    out->ndim = owner->shape().size();
    out->dtype = static_cast<tm_dtype>(owner->dtype());
    out->owner = owner;
    delete tensor;
    return TM_OK;
  } catch (...) {
    return report_internal(err);
  }
}

void tm_pbo_client_parts_release(tm_pbo_client_parts *parts) {
  if (!parts)
    return;
  delete static_cast<PboClientParts *>(parts->owner);
  std::memset(parts, 0, sizeof(*parts));
}

} // extern "C"

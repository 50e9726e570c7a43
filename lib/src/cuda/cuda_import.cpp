// SPDX-License-Identifier: Apache-2.0
// The one place that knows how CUDA reaches each kind of storage: a switch on
// the storage's exported handle. Also the process's cache of imports, one
// handle per buffer, and the tensor maps made through it.
#include <tensormem/cuda_import.hpp>

#include <tensormem/internal/cuda_d3d11.hpp>
#include <tensormem/internal/side_cache.hpp>
#include <tensormem/log.hpp>
#include <tensormem/storage_handle.hpp>
#ifdef TENSORMEM_HAVE_GL
#include <tensormem/gl_cuda.hpp>
#endif

#include <new>
#include <string>
#include <utility>
#include <variant>

namespace tensormem {
namespace {

Result<std::shared_ptr<CudaHandle>> import_host(const Storage &storage, const HostMemoryHandle &) {
  return Error::not_implemented(std::string("import_cuda: ") + storage_kind_name(storage.kind()) +
                                " storage has no CUDA import (only DMA-BUF, PBO and D3D11 storages have one)");
}

Result<std::shared_ptr<CudaHandle>> import_dmabuf(const DmaBufHandle &dmabuf,
                                                  std::shared_ptr<const CudaRuntime> runtime) {
  // External memory is imported from the buffer's start; no storage exports
  // a window of a buffer today.
  if (dmabuf.offset != 0)
    return Error::not_implemented("import_cuda: a DMA-BUF window at offset " + std::to_string(dmabuf.offset) +
                                  " (CUDA imports whole buffers)");
  return CudaHandle::import_dma_fd(dmabuf.fd, dmabuf.size, std::move(runtime));
}

Result<std::shared_ptr<CudaHandle>> import_gl_buffer(const GlBufferHandle &gl,
                                                     std::shared_ptr<const CudaRuntime> runtime) {
  std::shared_ptr<CudaGlOps> ops;
#ifdef TENSORMEM_HAVE_GL
  try {
    ops = make_gl_worker_cuda_gl_ops(gl.worker, std::move(runtime));
  } catch (const std::bad_alloc &) {
    ops = nullptr;
  }
#else
  (void)runtime; // no GL worker exists in a build without GL
#endif
  if (!ops)
    return Error::not_implemented("import_cuda: the GL port of buffer " + std::to_string(gl.buffer_id) +
                                  " offers no CUDA interop (its GL worker is gone, or it is a client's port)");
  return CudaHandle::register_gl_buffer(std::move(ops), gl.buffer_id, gl.size);
}

/// The process's one cache of CUDA imports, one handle per buffer. No
/// handle is made or destroyed under its lock (a destructor calls into CUDA
/// and, for a GL buffer, waits for the GL worker). Lives for the whole
/// process (never deleted): a storage destroyed during exit still finds it.
SideCache<CudaHandle> &imports() {
  static auto *cache = new SideCache<CudaHandle>();
  return *cache;
}

std::optional<CudaMap> map_window(const Tensor &tensor, bool writable) {
  std::shared_ptr<CudaHandle> handle = imports().find(StorageKey::of(*tensor.storage()));
  if (!handle)
    return std::nullopt;
  Result<CudaMap> map = writable ? handle->map_mut() : handle->map();
  if (!map) {
    log(LogLevel::Debug, "cuda_map: " + map.error().message() + "; use the host map");
    return std::nullopt;
  }
  if (!map->narrow(tensor.offset(), tensor.size_bytes())) {
    log(LogLevel::Debug, "cuda_map: the CUDA mapping holds " + std::to_string(map->length()) +
                             " bytes, the window is " + std::to_string(tensor.size_bytes()) + " at offset " +
                             std::to_string(tensor.offset()) + "; use the host map");
    return std::nullopt;
  }
  return std::optional<CudaMap>(std::move(*map));
}

} // namespace

Result<std::shared_ptr<CudaHandle>> import_cuda(Storage &storage, std::shared_ptr<const CudaRuntime> runtime) {
  Result<StorageHandle> exported = storage.export_handle();
  if (!exported)
    return std::move(exported).error();
  StorageHandle &handle = *exported;
  if (auto *host = std::get_if<HostMemoryHandle>(&handle))
    return import_host(storage, *host);
  if (auto *dmabuf = std::get_if<DmaBufHandle>(&handle))
    return import_dmabuf(*dmabuf, std::move(runtime));
  if (auto *gl = std::get_if<GlBufferHandle>(&handle))
    return import_gl_buffer(*gl, std::move(runtime));
  return import_d3d11_texture(std::move(runtime), std::move(std::get<D3d11TextureHandle>(handle)));
}

std::shared_ptr<CudaHandle> cached_cuda_handle(const Storage &storage) {
  return imports().find(StorageKey::of(storage));
}

Result<std::shared_ptr<CudaHandle>> import_cuda_cached(Storage &storage, std::shared_ptr<const CudaRuntime> runtime,
                                                       bool *imported) {
  if (imported)
    *imported = false;
  if (std::shared_ptr<CudaHandle> cached = cached_cuda_handle(storage))
    return cached;
  Result<std::shared_ptr<CudaHandle>> fresh = import_cuda(storage, std::move(runtime));
  if (!fresh)
    return fresh;
  std::shared_ptr<CudaHandle> cached = imports().insert_for_storage(storage, *fresh);
  if (imported)
    *imported = cached == *fresh;
  return cached;
}

Result<void> attach_cuda(Storage &storage, std::shared_ptr<CudaHandle> handle) {
  if (!handle)
    return Error::invalid_argument("attach_cuda: null handle");
  if (handle->size() < storage.size_bytes())
    return Error::insufficient_capacity(storage.size_bytes(), handle->size(),
                                        "attach_cuda: the CUDA handle must cover the whole allocation");
  imports().insert_for_storage(storage, std::move(handle), true);
  return {};
}

void detach_cuda(const Storage &storage) noexcept { imports().forget(StorageKey::of(storage)); }

std::optional<CudaMap> cuda_map(const Tensor &tensor) { return map_window(tensor, false); }

std::optional<CudaMap> cuda_map_mut(const Tensor &tensor) { return map_window(tensor, true); }

} // namespace tensormem

// SPDX-License-Identifier: Apache-2.0
#pragma once

// CUDA's view of a storage, in one place: the storage exports a neutral
// handle (Storage::export_handle, storage_handle.hpp) and this unit turns it
// into a CudaHandle (DMA-BUF: external memory from a dup of its fd; GL
// buffer: a registration on its GL worker; D3D11 texture: the import of
// cuda_d3d11.hpp). It also keeps the process's one cache of imports, one
// handle per buffer, and maps tensors' windows through it. Storages and
// tensors know nothing of CUDA.

#include <tensormem/export.hpp>

#include <tensormem/cuda_handle.hpp>
#include <tensormem/result.hpp>
#include <tensormem/storage.hpp>
#include <tensormem/tensor.hpp>

#include <memory>
#include <optional>

namespace tensormem {

/// A fresh import of `storage` into CUDA (no cache). `runtime` null:
/// CudaRuntime::get(). Errors: NotImplemented for a storage whose bytes CUDA
/// cannot reach (heap memory, a GL buffer without a GL worker, a D3D11
/// device without shared NT handles), otherwise the import's own
/// (CudaHandle::import_dma_fd, CudaHandle::register_gl_buffer,
/// import_d3d11_texture).
TENSORMEM_API Result<std::shared_ptr<CudaHandle>> import_cuda(Storage &storage,
                                                              std::shared_ptr<const CudaRuntime> runtime = {});

/// The cached CUDA handle of `storage`'s buffer, or null. The cache is keyed
/// on the buffer (identity in its scope, Storage::identity_scope), so every
/// storage, tensor, view and GstMemory of one buffer shares one import; an
/// entry goes when the storage it was cached for is destroyed, before that
/// storage releases its resource.
TENSORMEM_API std::shared_ptr<CudaHandle> cached_cuda_handle(const Storage &storage);

/// The cached handle of `storage`'s buffer, imported with `runtime` (null:
/// CudaRuntime::get()) and cached when there is none yet. `*imported` (when
/// given) says whether this call's import is the one cached. Two callers
/// racing may both import, without a lock held across the CUDA calls: the
/// first handle cached wins and the other is released.
TENSORMEM_API Result<std::shared_ptr<CudaHandle>>
import_cuda_cached(Storage &storage, std::shared_ptr<const CudaRuntime> runtime = {}, bool *imported = nullptr);

/// Caches `handle` as CUDA's view of `storage`'s buffer, replacing any
/// cached one. It must cover the whole allocation (smaller →
/// InsufficientCapacity); null → InvalidArgument. CPU maps are not affected.
TENSORMEM_API Result<void> attach_cuda(Storage &storage, std::shared_ptr<CudaHandle> handle);
/// Drops the cached handle of `storage`'s buffer (maps taken keep it alive).
TENSORMEM_API void detach_cuda(const Storage &storage) noexcept;

/// A device pointer to `tensor`'s window through the cached handle of its
/// storage, or nullopt: at once when none is cached, otherwise when the
/// handle cannot map or its mapping cannot hold the window (logged at debug
/// level). On nullopt use the host map.
TENSORMEM_API std::optional<CudaMap> cuda_map(const Tensor &tensor);
/// Same as cuda_map(), writable (CudaHandle::map_mut).
TENSORMEM_API std::optional<CudaMap> cuda_map_mut(const Tensor &tensor);

} // namespace tensormem

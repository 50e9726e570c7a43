// SPDX-License-Identifier: Apache-2.0
#pragma once

// CUDA access to a Direct3D 11 texture: the
// texture's shared NT handle imported as CUDA external memory, its base
// image mapped as a CUDA array, and a CudaHandle of kind D3d11 that copies
// the array into a linear device buffer for each map (and back after a
// writable one). Device selection, the "padded" size flag and the D3D11
// fence's CUDA semaphore are process-wide. See docs/cuda.md, "Direct3D 11
// textures".

#include <tensormem/export.hpp>

#include <tensormem/cuda_handle.hpp>
#include <tensormem/d3d11_device.hpp>
#include <tensormem/d3d11_layout.hpp>
#include <tensormem/internal/cuda_ffi.hpp>
#include <tensormem/internal/cuda_runtime.hpp>
#include <tensormem/result.hpp>
#include <tensormem/storage_handle.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace tensormem {

/// Imports the texture a D3d11TextureStorage exports. `runtime` null:
/// CudaRuntime::get(). Every CUDA object
/// made on the way is released on every failure path, the array before the
/// memory it came from. Errors: NotImplemented (no usable runtime, a
/// library without the D3D11 entry points, no CUDA device for the adapter
/// — cached for the process, a DXGI format the import does not list),
/// InvalidArgument (no handle, an empty layout, a row pitch below the
/// texture's row), Device (CUDA refused every
/// rung of the size ladder, or a later step).
TENSORMEM_API Result<std::shared_ptr<CudaHandle>> import_d3d11_texture(std::shared_ptr<const CudaRuntime> runtime,
                                                                       D3d11TextureHandle request);

/// The channel description of a DXGI format, or nullopt for a
/// format the import declines.
TENSORMEM_API std::optional<cudaffi::ChannelFormatDesc> d3d11_cuda_channel_format(DxgiFormat format) noexcept;

/// The declared size of rung `multiple` (1, 2 or 4) for a
/// texture of `tight_bytes`: multiple × max(tight_bytes, 4096), saturating.
TENSORMEM_API std::size_t d3d11_cuda_ladder_rung(std::size_t tight_bytes, unsigned multiple) noexcept;

/// A device copy may run only when nothing is recorded or a
/// wait for the recorded value was queued on the copy's stream.
TENSORMEM_API bool d3d11_copy_allowed(std::uint64_t recorded_write, bool wait_queued) noexcept;

/// The process-wide state of the D3D11 path, for tests (each process of
/// the library has exactly one).
struct D3d11CudaProcessState {
  bool device_resolved = false; ///< the device lookup ran (and its outcome is cached)
  int device = -1;              ///< the ordinal, -1 when the lookup failed
  bool padded = false;          ///< the ladder's sticky flag
  bool semaphore_tried = false; ///< the first fence handle was seen
  bool semaphore = false;       ///< and its import succeeded
};
TENSORMEM_API D3d11CudaProcessState d3d11_cuda_process_state() noexcept;
/// Tests only: destroys the process semaphore (every map waiting on it
/// must have finished), closes the fence handle kept with it and forgets
/// every cached answer, as if the process had just started.
TENSORMEM_API void d3d11_cuda_reset_process_state_for_tests() noexcept;

} // namespace tensormem

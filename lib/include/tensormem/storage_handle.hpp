// SPDX-License-Identifier: Apache-2.0
#pragma once

// What a storage hands another API so that it can reach the storage's bytes
// without copying them (Storage::export_handle). One alternative per kind of
// allocation; nothing here names the API that imports it. Each importer has
// one unit that switches on these handles (docs/architecture.md).

#include <tensormem/d3d11_device.hpp>
#include <tensormem/d3d11_layout.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <variant>

namespace tensormem {

class GlWorker;

/// Heap memory: a host address, stable while the storage lives.
struct HostMemoryHandle {
  std::byte *data = nullptr;
  std::size_t size = 0;
};

/// A DMA-BUF: the storage's own fd (borrowed: valid while the storage lives;
/// an importer that keeps it duplicates it) and the bytes from `offset`.
struct DmaBufHandle {
  int fd = -1;
  std::size_t offset = 0;
  std::size_t size = 0;
};

/// A GL buffer object, reached on the GL worker where its context is
/// current. `worker` is null where no worker owns the buffer's context (a
/// client's port, or a worker that has gone): the buffer is then out of
/// reach of any other API.
struct GlBufferHandle {
  std::uint32_t buffer_id = 0;
  std::size_t size = 0;
  std::shared_ptr<GlWorker> worker;
};

/// A shared Direct3D 11 texture: its NT handle and what an importer needs to
/// lay its bytes out as the CPU map does and to wait for recorded writes.
struct D3d11TextureHandle {
  std::uintptr_t nt_handle = 0; ///< borrowed: the importer duplicates what it keeps
  D3d11ImageLayout layout;
  D3d11AdapterId adapter;
  D3d11NtHandle fence_handle; ///< owned; empty where the fence is not shared
  /// The newest recorded GPU write (a value of that fence; 0: none), shared
  /// with the storage.
  std::shared_ptr<const std::atomic<std::uint64_t>> recorded_write;
  /// The storage's backing row pitch (0: the texture's tight row).
  std::size_t row_pitch = 0;
};

/// One storage's bytes as another API can reach them. Move-only (the D3D11
/// alternative owns a fence handle).
using StorageHandle = std::variant<HostMemoryHandle, DmaBufHandle, GlBufferHandle, D3d11TextureHandle>;

} // namespace tensormem

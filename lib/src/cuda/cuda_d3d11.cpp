// SPDX-License-Identifier: Apache-2.0
// import_d3d11_texture: a shared D3D11 texture as CUDA external memory and
// a CUDA array, the declared-size ladder, and the process-wide device
// choice and fence semaphore.
#include "cuda_log.hpp"

#include <tensormem/internal/cuda_d3d11.hpp>

#include <tensormem/internal/cuda_semaphore.hpp>
#include <tensormem/types.hpp>

#include <limits>
#include <mutex>
#include <string>
#include <utility>

namespace tensormem {
namespace {

using cuda_log::debug;
using cuda_log::quietly;
namespace ffi = cudaffi;

constexpr std::size_t kPageFloor = 4096;
constexpr unsigned kRungs[] = {1, 2, 4};

// One per process (per linked copy of the library), never destroyed: the
// semaphore in it lives as long as the process.
struct ProcessState {
  std::mutex mu;
  bool device_resolved = false;
  int device = -1;
  std::string device_error;
  std::atomic<bool> padded{false};
  bool semaphore_tried = false;
  std::optional<CudaExternalSemaphore> semaphore;
  D3d11NtHandle semaphore_handle; // kept open with the semaphore
};

ProcessState &process() {
  static ProcessState *state = new ProcessState;
  return *state;
}

/// \brief The CUDA device of the adapter, looked up and
/// selected once per process; the outcome, failure included, is cached.
Result<int> process_device(const CudaRuntime &rt, D3d11AdapterId adapter) {
  ProcessState &p = process();
  std::lock_guard lock(p.mu);
  if (!p.device_resolved) {
    p.device_resolved = true;
    // A LUID is LowPart then HighPart, each little-endian: CUDA reports
    // the same 8 bytes.
    unsigned char luid[8];
    const auto high = static_cast<std::uint32_t>(adapter.high);
    for (int i = 0; i < 4; ++i) {
      luid[i] = static_cast<unsigned char>(adapter.low >> (8 * i));
      luid[4 + i] = static_cast<unsigned char>(high >> (8 * i));
    }
    Result<int> found = rt.device_with_luid(luid);
    Result<void> selected = found ? rt.set_device(*found) : Result<void>(found.error());
    if (found && selected) {
      p.device = *found;
    } else {
      p.device_error = selected.error().message();
      quietly([&] { debug("no CUDA device for the Direct3D 11 adapter (cached): " + p.device_error); });
    }
  }
  if (p.device < 0)
    return Error::not_implemented("import_d3d11_texture: no CUDA device for the Direct3D 11 adapter (" +
                                  p.device_error + "; cached for the process)");
  return p.device;
}

/// \brief The process semaphore of the D3D11 fence, imported
/// by the first caller with a fence handle and kept (with that handle) for
/// the process; later handles, and a handle whose import failed, close
/// when `fence` goes.
void *process_semaphore(const std::shared_ptr<const CudaRuntime> &rt, D3d11NtHandle fence) {
  if (!fence)
    return nullptr; // no handle, no semaphore
  ProcessState &p = process();
  std::lock_guard lock(p.mu);
  if (!p.semaphore_tried) {
    p.semaphore_tried = true;
    Result<CudaExternalSemaphore> imported = CudaExternalSemaphore::import_win32(
        CudaExternalSemaphore::Type::D3D11Fence, reinterpret_cast<void *>(fence.value()), rt);
    if (imported) {
      p.semaphore.emplace(std::move(*imported));
      p.semaphore_handle = std::move(fence);
    } else {
      quietly([&] { debug("the D3D11 fence semaphore (cached as none): " + imported.error().message()); });
    }
  }
  return p.semaphore ? p.semaphore->native() : nullptr;
}

struct Imported {
  void *ext_mem = nullptr;
  void *mipmap = nullptr;
};

/// \brief Imports at 1×, 2×, 4× of max(tight, 4096)
/// (from 2× once the process saw padding) until the array maps; each failed
/// rung releases what it made.
Result<Imported> climb_ladder(const CudaRuntime &rt, std::uintptr_t nt_handle, const ffi::ChannelFormatDesc &format,
                              std::size_t width, std::size_t height, std::size_t tight) {
  std::atomic<bool> &padded = process().padded;
  const bool skip_tight = padded.load(std::memory_order_acquire);
  std::string last;
  for (unsigned multiple : kRungs) {
    if (multiple == 1 && skip_tight)
      continue;
    const std::size_t size = d3d11_cuda_ladder_rung(tight, multiple);
    Result<void *> ext_mem =
        rt.import_external_memory_win32(ffi::ExternalMemoryHandleType::D3D11Resource,
                                        reinterpret_cast<void *>(nt_handle), size, ffi::kExternalMemoryDedicated);
    if (!ext_mem) {
      last = ext_mem.error().message();
      quietly([&] { debug("D3D11 import at " + std::to_string(size) + " bytes: " + last); });
      continue;
    }
    Result<void *> mipmap = rt.external_memory_mipmapped_array(*ext_mem, format, width, height);
    if (!mipmap) {
      last = mipmap.error().message();
      quietly([&] { debug("D3D11 array mapping at " + std::to_string(size) + " bytes: " + last); });
      if (Result<void> destroyed = rt.destroy_external_memory(*ext_mem); !destroyed)
        quietly([&] { cuda_log::warn("after a refused rung: " + destroyed.error().message()); });
      continue;
    }
    if (multiple > 1 && !padded.exchange(true))
      quietly([&] {
        log(LogLevel::Info, "cuda: this adapter pads textures past their tight size; D3D11 imports now declare " +
                                std::to_string(multiple) + "x or more");
      });
    return Imported{*ext_mem, *mipmap};
  }
  return Error::device("import_d3d11_texture: CUDA refused every declared size (last: " + last + ")");
}

} // namespace

std::optional<cudaffi::ChannelFormatDesc> d3d11_cuda_channel_format(DxgiFormat format) noexcept {
  auto desc = [](int bits, int count, ffi::ChannelFormatKind kind) {
    ffi::ChannelFormatDesc d;
    ffi::zero_fill(d);
    d.x = count > 0 ? bits : 0;
    d.y = count > 1 ? bits : 0;
    d.z = count > 2 ? bits : 0;
    d.w = count > 3 ? bits : 0;
    d.f = kind;
    return d;
  };
  switch (format) {
  case DxgiFormat::R8_Unorm: return desc(8, 1, ffi::ChannelFormatKind::Unsigned);
  case DxgiFormat::R8G8_Unorm: return desc(8, 2, ffi::ChannelFormatKind::Unsigned);
  case DxgiFormat::R8G8B8A8_Unorm:
  case DxgiFormat::B8G8R8A8_Unorm: return desc(8, 4, ffi::ChannelFormatKind::Unsigned);
  case DxgiFormat::R16G16B16A16_Float: return desc(16, 4, ffi::ChannelFormatKind::Float);
  case DxgiFormat::R32G32B32A32_Float: return desc(32, 4, ffi::ChannelFormatKind::Float);
  default: return std::nullopt;
  }
}

std::size_t d3d11_cuda_ladder_rung(std::size_t tight_bytes, unsigned multiple) noexcept {
  const std::size_t base = tight_bytes > kPageFloor ? tight_bytes : kPageFloor;
  if (multiple != 0 && base > std::numeric_limits<std::size_t>::max() / multiple)
    return std::numeric_limits<std::size_t>::max();
  return base * multiple;
}

D3d11CudaProcessState d3d11_cuda_process_state() noexcept {
  ProcessState &p = process();
  std::lock_guard lock(p.mu);
  return D3d11CudaProcessState{p.device_resolved, p.device, p.padded.load(), p.semaphore_tried,
                               p.semaphore.has_value()};
}

void d3d11_cuda_reset_process_state_for_tests() noexcept {
  ProcessState &p = process();
  std::lock_guard lock(p.mu);
  p.device_resolved = false;
  p.device = -1;
  p.device_error.clear();
  p.padded = false;
  p.semaphore_tried = false;
  p.semaphore.reset();
  p.semaphore_handle = D3d11NtHandle();
}

/// \brief The import, or why not, with nothing left behind.
Result<std::shared_ptr<CudaHandle>> import_d3d11_texture(std::shared_ptr<const CudaRuntime> runtime,
                                                         D3d11TextureHandle request) {
  if (!runtime)
    runtime = CudaRuntime::get();
  if (Result<void> usable = runtime->d3d11_usable("import_d3d11_texture"); !usable)
    return std::move(usable).error();
  const D3d11ImageLayout &layout = request.layout;
  if (request.nt_handle == 0)
    return Error::invalid_argument("import_d3d11_texture: no shared texture handle");
  std::optional<ffi::ChannelFormatDesc> format = d3d11_cuda_channel_format(layout.dxgi_format);
  if (!format) {
    std::string message = std::string("import_d3d11_texture: DXGI format ") + dxgi_format_name(layout.dxgi_format) +
                          " has no CUDA channel description";
    quietly([&] { debug(message); });
    return Error::not_implemented(std::move(message));
  }
  if (layout.texture_width == 0 || layout.texture_height == 0)
    return Error::invalid_argument("import_d3d11_texture: an empty texture");
  const std::size_t texel = static_cast<std::size_t>(format->x + format->y + format->z + format->w) / 8;
  Result<std::size_t> row_bytes = checked_mul(layout.texture_width, texel, "import_d3d11_texture: row bytes");
  if (!row_bytes)
    return std::move(row_bytes).error();
  Result<std::size_t> tight = checked_mul(*row_bytes, layout.texture_height, "import_d3d11_texture: texture bytes");
  if (!tight)
    return std::move(tight).error();
  const std::size_t pitch = request.row_pitch ? request.row_pitch : *row_bytes;
  if (pitch < *row_bytes)
    return Error::invalid_argument("import_d3d11_texture: row pitch " + std::to_string(pitch) +
                                   " is below the texture's row of " + std::to_string(*row_bytes) + " bytes");
  if (Result<std::size_t> linear = checked_mul(pitch, layout.texture_height, "import_d3d11_texture: linear bytes");
      !linear)
    return std::move(linear).error();

  Result<int> device = process_device(*runtime, request.adapter);
  if (!device)
    return std::move(device).error();
  // Cached, but selected again: a device is per-thread state.
  if (Result<void> selected = runtime->set_device(*device); !selected)
    return std::move(selected).error();

  Result<Imported> imported =
      climb_ladder(*runtime, request.nt_handle, *format, layout.texture_width, layout.texture_height, *tight);
  if (!imported)
    return std::move(imported).error();

  // Level 0 and the handle's own stream, or undo, the array
  // before the memory it came from.
  auto undo = [&](const std::string &which) {
    quietly([&] { debug("import_d3d11_texture: " + which + "; releasing the import"); });
    if (Result<void> freed = runtime->free_mipmapped_array(imported->mipmap); !freed) {
      // The memory under an array still mapped from it stays too.
      quietly([&] { cuda_log::warn(freed.error().message() + "; the external memory is left behind with it"); });
      return;
    }
    if (Result<void> destroyed = runtime->destroy_external_memory(imported->ext_mem); !destroyed)
      quietly([&] { cuda_log::warn(destroyed.error().message()); });
  };
  Result<void *> array = runtime->mipmapped_array_level(imported->mipmap, ffi::kBaseLevel);
  if (!array) {
    undo("level 0 of the array: " + array.error().message());
    return std::move(array).error();
  }
  Result<CudaStream> stream = runtime->stream_create();
  if (!stream) {
    undo("the handle's stream: " + stream.error().message());
    return std::move(stream).error();
  }

  CudaD3d11Objects objects;
  objects.runtime = runtime;
  objects.ext_mem = imported->ext_mem;
  objects.mipmap = imported->mipmap;
  objects.array = *array;
  objects.stream = *stream;
  objects.device = *device;
  objects.semaphore = process_semaphore(runtime, std::move(request.fence_handle));
  objects.recorded_write = std::move(request.recorded_write);
  objects.row_bytes = *row_bytes;
  objects.rows = layout.texture_height;
  objects.pitch = pitch;
  std::shared_ptr<CudaHandle> handle = CudaHandle::adopt_d3d11(std::move(objects));
  if (!handle) // unreachable: the size was checked above
    return Error::invalid_size(*tight, "import_d3d11_texture: texture bytes");
  return handle;
}

} // namespace tensormem

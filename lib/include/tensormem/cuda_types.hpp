// SPDX-License-Identifier: Apache-2.0
#pragma once

// The few plain CUDA types of the public API (cuda_handle.hpp). The loader
// that makes and uses them (CudaRuntime) is internal: not installed.

#include <cstddef>

namespace tensormem {

class CudaRuntime;

/// A device address range (a GL buffer's CUDA mapping, say).
struct CudaDeviceRange {
  void *ptr = nullptr;
  std::size_t length = 0;
};

/// A cudaStream_t owned by the caller (destroy it with stream_destroy).
using CudaStream = void *;

} // namespace tensormem

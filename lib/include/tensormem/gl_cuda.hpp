// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/cuda_handle.hpp>
#include <tensormem/cuda_types.hpp>
#include <tensormem/export.hpp>
#include <tensormem/gl_worker.hpp>

#include <memory>

namespace tensormem {

/// The GL worker's implementation of the CudaGlOps port: every CUDA GL call
/// (register, map, unmap, unregister) runs on the worker thread, where the
/// GL context is current. After the worker has shut down register and map
/// answer Disconnected; unmap and unregister become no-ops (the context took
/// the resources with it). nullptr when either argument is null.
TENSORMEM_API std::shared_ptr<CudaGlOps> make_gl_worker_cuda_gl_ops(std::shared_ptr<GlWorker> worker,
                                                                    std::shared_ptr<const CudaRuntime> runtime);

} // namespace tensormem

// SPDX-License-Identifier: Apache-2.0
#pragma once

/* The C++ companion of gsttensorpbo.h: PBO tensor memory: its tensor, storage and GL worker.
 * C++ only; not introspected (bindings use the C API). */

#include <gst/tensormem/gsttensorpbo.h>

#include <tensormem/pbo_storage.hpp>
#include <tensormem/tensor.hpp>

#include <memory>

namespace tensormem {
class GlWorker;
} // namespace tensormem

GST_TENSOR_MEM_API
const tensormem::Tensor *gst_tensor_mem_pbo_memory_get_tensor(GstMemory *mem);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::PboStorage> gst_tensor_mem_pbo_memory_get_storage(GstMemory *mem);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::GlWorker> gst_tensor_mem_pbo_memory_get_core_gl_worker(GstMemory *mem);

// SPDX-License-Identifier: Apache-2.0
#pragma once

/* The C++ companion of gsttensorglcontext.h: the GL worker object over a libtensormem GL worker.
 * C++ only; not introspected (bindings use the C API). */

#include <gst/tensormem/gsttensorglcontext.h>

#include <memory>

namespace tensormem {
class GlWorker;
} // namespace tensormem

GST_TENSOR_MEM_API
GstTensorMemGlWorker *gst_tensor_mem_gl_worker_new_wrapped(std::shared_ptr<tensormem::GlWorker> worker);

GST_TENSOR_MEM_API
std::shared_ptr<tensormem::GlWorker> gst_tensor_mem_gl_worker_get_core_gl_worker(GstTensorMemGlWorker *worker);

// SPDX-License-Identifier: Apache-2.0
#pragma once

/* The C++ companion of gsttensormemallocator.h: the tensor of any tensor memory.
 * C++ only; not introspected (bindings use the C API). */

#include <gst/tensormem/gsttensormemallocator.h>

#include <tensormem/tensor.hpp>

#include <memory>

GST_TENSOR_MEM_API
const tensormem::Tensor *gst_tensor_mem_memory_get_tensor(GstMemory *mem);

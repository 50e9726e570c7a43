// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: where libtensormem's storage kinds and the
 * GstTensorMemStorage values meet. C++ only; not installed. */
#pragma once

#include <gst/tensormem/gsttensorstorage.h>

#include <tensormem/types.hpp>

namespace gst_tensormem {

/* The storage value of a family's kind; GST_TENSOR_MEM_STORAGE_AUTO for a
 * kind no family of this library holds. */
GstTensorMemStorage storage_of_kind(tensormem::StorageKind kind);

} // namespace gst_tensormem

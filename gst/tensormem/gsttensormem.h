// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/gsttensorstorage.h>
#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

GST_TENSOR_MEM_API
void gst_tensor_mem_init(void);

G_END_DECLS

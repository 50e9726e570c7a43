// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/gsttensorstorage.h>
#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

GST_TENSORMEM_API
void gst_tensormem_init(void);

G_END_DECLS

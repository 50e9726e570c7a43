// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_SYNC (gst_tensor_sync_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemSync, gst_tensor_sync, GST, TENSOR_SYNC, GstBaseTransform)

G_END_DECLS

// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_INSPECT (gst_tensor_inspect_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemInspect, gst_tensor_inspect, GST, TENSOR_INSPECT, GstBaseTransform)

G_END_DECLS

// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_INFER (gst_tensor_infer_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemInfer, gst_tensor_infer, GST, TENSOR_INFER, GstBaseTransform)

G_END_DECLS

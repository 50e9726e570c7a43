// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gsttensortransform.h"

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_CONVERT (gst_tensor_convert_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemConvert, gst_tensor_convert, GST, TENSOR_CONVERT, GstTensorMemTransform)

G_END_DECLS

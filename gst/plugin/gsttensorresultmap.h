// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_RESULT_MAP (gst_tensor_result_map_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemResultMap, gst_tensor_result_map, GST, TENSOR_RESULT_MAP, GstBaseTransform)

G_END_DECLS

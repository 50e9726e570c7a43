// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_UNBATCH (gst_tensor_unbatch_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemUnbatch, gst_tensor_unbatch, GST, TENSOR_UNBATCH, GstElement)

G_END_DECLS

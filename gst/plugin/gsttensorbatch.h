// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/base/gstaggregator.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_BATCH (gst_tensor_batch_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemBatch, gst_tensor_batch, GST, TENSOR_BATCH, GstAggregator)

#define GST_TYPE_TENSOR_BATCH_PAD (gst_tensor_batch_pad_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemBatchPad, gst_tensor_batch_pad, GST, TENSOR_BATCH_PAD, GstAggregatorPad)

G_END_DECLS

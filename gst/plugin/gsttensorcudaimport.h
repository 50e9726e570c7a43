// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_CUDA_IMPORT (gst_tensor_cuda_import_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemCudaImport, gst_tensor_cuda_import, GST, TENSOR_CUDA_IMPORT, GstBaseTransform)

G_END_DECLS

// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gsttensortransform.h"

#include <gst/tensormem/gsttensormem.h>

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_UPLOAD (gst_tensor_upload_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemUpload, gst_tensor_upload, GST, TENSOR_UPLOAD, GstTensorMemTransform)
/* Unchecked, for the per-buffer paths (like GStreamer's own *_CAST macros). */
#define GST_TENSOR_UPLOAD_CAST(obj) ((GstTensorMemUpload *)(obj))

G_END_DECLS

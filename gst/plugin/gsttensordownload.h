// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gsttensortransform.h"

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_DOWNLOAD (gst_tensor_download_get_type())
G_DECLARE_FINAL_TYPE(GstTensorMemDownload, gst_tensor_download, GST, TENSOR_DOWNLOAD, GstTensorMemTransform)
/* Unchecked, for the per-buffer paths (like GStreamer's own *_CAST macros). */
#define GST_TENSOR_DOWNLOAD_CAST(obj) ((GstTensorMemDownload *)(obj))

G_END_DECLS

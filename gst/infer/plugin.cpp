// SPDX-License-Identifier: Apache-2.0
/* tensorinfer in a plugin of its own: only this library links ONNX Runtime,
 * so the tensormem plugin loads the same with or without it. */
#include "gsttensorinfer.h"

#include <gst/tensormem/gsttensormem.h>

static gboolean plugin_init(GstPlugin *plugin) {
  gst_tensor_mem_init();
  return gst_element_register(plugin, "tensorinfer", GST_RANK_NONE, GST_TYPE_TENSOR_INFER);
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, tensorinfer,
                  "Inference on ONNX Runtime over tensor memory, read in place", plugin_init, VERSION, "Apache 2.0",
                  GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)

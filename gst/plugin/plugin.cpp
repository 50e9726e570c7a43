// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorelements.h>

/* The elements are libgsttensormem's classes; the plugin names them. */
static gboolean plugin_init(GstPlugin *plugin) { return gst_tensor_mem_register_elements(plugin); }

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, tensormem,
                  "Zero-copy tensor memory: upload to and download from tensor storages", plugin_init, VERSION,
                  "Apache 2.0", GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)

// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

/**
 * gst_tensor_mem_register_elements:
 * @plugin: the plugin the elements belong to
 *
 * Registers this project's elements (`tensorupload`, `tensordownload`,
 * `tensorcudaimport`, `tensorinspect`, `tensorconvert`, `tensorsync`,
 * `tensorbatch`, `tensorunbatch`, and `tensorresultmap` where GStreamer has
 * the analytics library) in @plugin. They are classes of this library, as
 * `appsrc` is of libgstapp: the `tensormem` plugin only calls this, and an
 * application that links GStreamer statically, or wants the elements
 * without a plugin path, calls it from the init function it gives
 * gst_plugin_register_static(). It calls gst_tensor_mem_init().
 *
 * Returns: whether every element was registered
 *
 * Since: 0.4
 */
GST_TENSOR_MEM_API
gboolean gst_tensor_mem_register_elements(GstPlugin *plugin);

G_END_DECLS

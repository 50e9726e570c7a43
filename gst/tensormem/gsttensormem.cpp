// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensormem.h>
#include <gst/tensormem/gsttensormemory.h>

#include <tensormem/log.hpp>

GST_DEBUG_CATEGORY_STATIC(gst_tensormem_debug);
#define GST_CAT_DEFAULT gst_tensormem_debug

namespace {

GstDebugLevel to_gst_level(tensormem::LogLevel level) noexcept {
  switch (level) {
  case tensormem::LogLevel::Error:
    return GST_LEVEL_ERROR;
  case tensormem::LogLevel::Warning:
    return GST_LEVEL_WARNING;
  case tensormem::LogLevel::Info:
    return GST_LEVEL_INFO;
  case tensormem::LogLevel::Debug:
    break;
  }
  return GST_LEVEL_DEBUG;
}

void route_core_log(tensormem::LogLevel level, std::string_view message, void *) {
  GST_CAT_LEVEL_LOG(gst_tensormem_debug, to_gst_level(level), nullptr, "%.*s", static_cast<int>(message.size()),
                    message.data());
}

} // namespace

/**
 * gst_tensor_storage_get_type:
 *
 * Returns: the #GType of #GstTensorStorage.
 *
 * Since: 0.1
 */
GType gst_tensor_storage_get_type(void) {
  static gsize type = 0;
  static const GEnumValue values[] = {
      {GST_TENSOR_STORAGE_AUTO, "Pick the best storage available", "auto"},
      {GST_TENSOR_STORAGE_SYSTEM, "64-byte aligned system memory", "system"},
      {0, nullptr, nullptr},
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstTensorStorage", values));
  return type;
}

/**
 * gst_tensormem_init:
 *
 * Initialises the library: registers its debug categories and routes the
 * diagnostics of the core tensormem library into the `tensormem` GStreamer
 * debug category. Call it after gst_init(); calling it again does nothing.
 *
 * Since: 0.1
 */
void gst_tensormem_init(void) {
  static gsize done = 0;
  if (!g_once_init_enter(&done))
    return;
  GST_DEBUG_CATEGORY_INIT(gst_tensormem_debug, "tensormem", 0, "tensormem core library");
  tensormem::set_log_handler(route_core_log, nullptr);
  gst_tensor_memory_init_once();
  g_type_ensure(GST_TYPE_TENSOR_STORAGE);
  g_once_init_leave(&done, 1);
}

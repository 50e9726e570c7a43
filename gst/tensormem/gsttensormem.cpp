// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensormem.h>

#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorbasememory.h>
#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensorcudameta.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorglcontext.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensormemresizemeta.h>

#include <tensormem/log.hpp>

#include <string>

GST_DEBUG_CATEGORY_STATIC(gst_tensormem_debug);
#define GST_CAT_DEFAULT gst_tensormem_debug

namespace {

GstDebugLevel to_gst_level(tensormem::LogLevel level) noexcept {
  switch (level) {
  case tensormem::LogLevel::Error: return GST_LEVEL_ERROR;
  case tensormem::LogLevel::Warning: return GST_LEVEL_WARNING;
  case tensormem::LogLevel::Info: return GST_LEVEL_INFO;
  case tensormem::LogLevel::Debug: break;
  }
  return GST_LEVEL_DEBUG;
}

void route_core_log(tensormem::LogLevel level, std::string_view message, void *) {
  GST_CAT_LEVEL_LOG(gst_tensormem_debug, to_gst_level(level), nullptr, "%.*s", static_cast<int>(message.size()),
                    message.data());
}

} // namespace

/**
 * gst_tensor_mem_init:
 *
 * Initialises the library: registers every type it defines (allocators,
 * buffer pool, GL worker, storage enum, CUDA, fence and resize metas) and its
 * debug categories, and routes the diagnostics of the core tensormem library
 * into the `tensormem` GStreamer debug category. Call it after gst_init(); calling it
 * again does nothing.
 *
 * Since: 0.1
 */
void gst_tensor_mem_init(void) {
  static gsize done = 0;
  if (!g_once_init_enter(&done))
    return;
  GST_DEBUG_CATEGORY_INIT(gst_tensormem_debug, "tensormem", 0, "tensormem core library");
  tensormem::set_log_handler(route_core_log, nullptr);
  g_type_ensure(GST_TYPE_TENSOR_MEM_ALLOCATOR);
  g_type_ensure(GST_TYPE_TENSOR_MEM_BASE_ALLOCATOR);
  g_type_ensure(GST_TYPE_TENSOR_MEM_STORAGE);
  // Every family's allocator type; a family without a device has one
  // process-wide allocator, registered by name (gst_allocator_find()).
  for (std::size_t i = 0; i < gst_tensormem::kBackendCount; ++i) {
    const gst_tensormem::Backend &family = gst_tensormem::backend_at(i);
    g_type_ensure(family.allocator_type());
    if (!family.ensure_device)
      gst_object_unref(family.new_allocator(nullptr));
  }
  g_type_ensure(GST_TYPE_TENSOR_MEM_GL_WORKER);
  g_type_ensure(GST_TYPE_TENSOR_MEM_BUFFER_POOL);
  gst_tensor_mem_cuda_meta_get_info();
  gst_tensor_mem_fence_meta_get_info();
  gst_tensor_mem_resize_meta_get_info();
  g_once_init_leave(&done, 1);
}

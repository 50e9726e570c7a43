// SPDX-License-Identifier: Apache-2.0
// Counting the need-context and have-context messages of one context type
// on a pipeline's bus, for the tests of objects shared through GstContext
// (the GL worker, the D3D11 device).
#pragma once

#include "test_util.hpp"

#include <gst/gst.h>
#include <gtest/gtest.h>

namespace tmtest {

/* Counts need-context and have-context messages of `type`, and answers
 * need-context with `answer` when set. */
struct ContextWatch {
  const char *type = nullptr;
  GstContext *answer = nullptr;
  int need = 0;
  int have = 0;
};

inline GstBusSyncReply watch_context(GstBus *, GstMessage *msg, gpointer user_data) {
  auto *watch = static_cast<ContextWatch *>(user_data);
  const gchar *type = nullptr;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_NEED_CONTEXT && gst_message_parse_context_type(msg, &type) &&
      g_strcmp0(type, watch->type) == 0) {
    watch->need++;
    if (watch->answer)
      gst_element_set_context(GST_ELEMENT(GST_MESSAGE_SRC(msg)), watch->answer);
  } else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_HAVE_CONTEXT) {
    GstContext *context = nullptr;
    gst_message_parse_have_context(msg, &context);
    if (context && g_strcmp0(gst_context_get_context_type(context), watch->type) == 0)
      watch->have++;
    if (context)
      gst_context_unref(context);
  }
  return GST_BUS_PASS;
}

/* Parses `description` and watches its bus with `watch`. */
inline GstElement *launch_watched(const char *description, ContextWatch *watch) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description, &error);
  EXPECT_EQ(error, nullptr) << description << ": " << (error ? error->message : "");
  g_clear_error(&error);
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_bus_set_sync_handler(bus, watch_context, watch, nullptr);
  gst_object_unref(bus);
  return pipeline;
}

/* Back to NULL (checked), the watch removed, the pipeline released. */
inline void stop_watched(GstElement *pipeline) {
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_bus_set_sync_handler(bus, nullptr, nullptr, nullptr);
  gst_object_unref(bus);
  release_pipeline(pipeline);
}

} // namespace tmtest

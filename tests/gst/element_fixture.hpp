// SPDX-License-Identifier: Apache-2.0
// A GstHarness around one of our elements, with a bus for its errors, plain
// system-memory input buffers and buffers from one of our pools. The element
// test files derive from it and add what is particular to them.
#pragma once

#include "test_util.hpp"

#include <gst/check/gstharness.h>
#include <gst/tensormem/tensormem.h>

namespace tmtest {

class ElementFixture : public ::testing::Test {
protected:
  void start(const char *factory, const char *caps) {
    h_ = gst_harness_new(factory);
    ASSERT_NE(h_, nullptr) << factory;
    bus_ = gst_bus_new();
    gst_element_set_bus(h_->element, bus_);
    info_ = info_from_string(caps);
  }

  void TearDown() override {
    if (h_) {
      gst_element_set_bus(h_->element, nullptr);
      gst_harness_teardown(h_);
    }
    if (pool_) {
      gst_buffer_pool_set_active(pool_, FALSE);
      gst_object_unref(pool_);
    }
    if (bus_)
      gst_object_unref(bus_);
  }

  /* The pool pool_buffer() draws from; system tensor memory unless overridden. */
  virtual GstBufferPool *new_pool() { return gst_tensor_mem_buffer_pool_new(); }

  GstBuffer *plain_buffer(guint seed) {
    GstBuffer *buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info_), nullptr);
    fill_frame(buffer, &info_, seed);
    return buffer;
  }

  /* A buffer from an active pool of ours for `caps_str`, filled with a pattern. */
  GstBuffer *pool_buffer(const char *caps_str, guint seed) {
    if (!pool_) {
      pool_ = new_pool();
      GstStructure *config = gst_buffer_pool_get_config(pool_);
      GstCaps *caps = gst_caps_from_string(caps_str);
      gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info_), 0, 0);
      gst_caps_unref(caps);
      EXPECT_TRUE(gst_buffer_pool_set_config(pool_, config));
      EXPECT_TRUE(gst_buffer_pool_set_active(pool_, TRUE));
    }
    GstBuffer *buffer = nullptr;
    EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool_, &buffer, nullptr), GST_FLOW_OK);
    if (buffer)
      fill_frame(buffer, &info_, seed);
    return buffer;
  }

  /* "message | debug" of the next error on the element's bus, or "". With a
   * domain, the error is also expected to be (domain, code). */
  std::string posted_error(GQuark domain = 0, gint code = 0) {
    GstMessage *msg = gst_bus_pop_filtered(bus_, GST_MESSAGE_ERROR);
    if (!msg)
      return {};
    GError *err = nullptr;
    gchar *debug = nullptr;
    gst_message_parse_error(msg, &err, &debug);
    if (domain != 0) {
      EXPECT_TRUE(g_error_matches(err, domain, code)) << err->message;
    }
    std::string text = std::string(err->message) + " | " + (debug ? debug : "");
    g_error_free(err);
    g_free(debug);
    gst_message_unref(msg);
    return text;
  }

  /* Pushes `in` and checks that the element handed on that very buffer (a
   * zero-copy pass-through). */
  void expect_passed_through(GstBuffer *in) {
    ASSERT_NE(in, nullptr);
    gst_buffer_ref(in);
    const GstFlowReturn pushed = gst_harness_push(h_, in);
    if (pushed != GST_FLOW_OK) {
      gst_buffer_unref(in);
      FAIL() << "push returned " << gst_flow_get_name(pushed) << ": " << posted_error();
    }
    GstBuffer *out = gst_harness_pull(h_);
    EXPECT_EQ(out, in);
    if (out)
      gst_buffer_unref(out);
    gst_buffer_unref(in);
  }

  /* Pushes `frames` plain system-memory buffers into tensorupload and checks
   * each comes out as one new memory that `is_ours` accepts, in a 64-byte
   * stride layout with the same timestamp and picture, and that every byte
   * was counted as copied. */
  void expect_plain_frames_copied(gboolean (*is_ours)(GstMemory *), int frames) {
    for (int i = 0; i < frames; ++i) {
      GstBuffer *in = plain_buffer(i);
      gst_buffer_ref(in);
      ASSERT_EQ(gst_harness_push(h_, in), GST_FLOW_OK);
      GstBuffer *out = gst_harness_pull(h_);
      ASSERT_NE(out, nullptr);
      EXPECT_NE(out, in);
      ASSERT_EQ(gst_buffer_n_memory(out), 1u);
      EXPECT_TRUE(is_ours(gst_buffer_peek_memory(out, 0)));
      GstVideoMeta *meta = gst_buffer_get_video_meta(out);
      ASSERT_NE(meta, nullptr);
      EXPECT_EQ(meta->stride[0] % 64, 0);
      EXPECT_EQ(GST_BUFFER_PTS(out), GST_BUFFER_PTS(in));
      EXPECT_TRUE(frames_equal(in, out, &info_));
      gst_buffer_unref(out);
      gst_buffer_unref(in);
    }
    EXPECT_EQ(copied_bytes(h_->element), frames * GST_VIDEO_INFO_SIZE(&info_));
  }

  GstHarness *h_ = nullptr;
  GstBus *bus_ = nullptr;
  GstBufferPool *pool_ = nullptr;
  GstVideoInfo info_;
};

} // namespace tmtest

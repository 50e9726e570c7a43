// SPDX-License-Identifier: Apache-2.0
// The D3D11 device in GStreamer: the storage choice, and one device shared
// by every element of a pipeline through a GstContext.
// The program asks for the software reference device before anything uses
// D3D11, as an application off Windows must.
#include "context_watch.hpp"
#include "pipeline_util.hpp"

#include <gst/tensormem/gsttensord3d11device.h>
#include <gst/tensormem/gsttensorstorage.h>

#include <tensormem/d3d11_device.hpp>

#include <memory>

namespace {

// Runs before main, so before gst_init and any D3D11 use.
const bool g_software_device = g_setenv("TENSORMEM_D3D11_DEVICE", "software", TRUE);

using tmtest::ContextWatch;

/* The device the element named `name` reports in its context (a new
 * reference), or NULL. */
GstTensorMemD3D11Device *element_device(GstElement *pipeline, const char *name) {
  GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
  EXPECT_NE(element, nullptr) << name;
  if (!element)
    return nullptr;
  GstTensorMemD3D11Device *device = nullptr;
  if (GstContext *context = gst_element_get_context(element, GST_TENSOR_D3D11_DEVICE_CONTEXT_TYPE)) {
    EXPECT_TRUE(gst_context_get_tensor_d3d11_device(context, &device));
    gst_context_unref(context);
  }
  gst_object_unref(element);
  return device;
}

/* Takes `pipeline` to READY and returns the device its elements "a" and
 * "b" both use (a new reference), or NULL after a failure. */
GstTensorMemD3D11Device *ready_with_one_device(GstElement *pipeline) {
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
  GstTensorMemD3D11Device *a = element_device(pipeline, "a");
  GstTensorMemD3D11Device *b = element_device(pipeline, "b");
  EXPECT_NE(a, nullptr);
  EXPECT_EQ(a, b) << "the two elements use different devices";
  const bool same = a == b;
  gst_clear_object(&b);
  if (!same)
    gst_clear_object(&a);
  return a;
}

class D3d11ContextTest : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_TRUE(g_software_device); }

  static GstElement *launch(const char *description, ContextWatch *watch) {
    watch->type = GST_TENSOR_D3D11_DEVICE_CONTEXT_TYPE;
    return tmtest::launch_watched(description, watch);
  }

  static void stop(GstElement *pipeline) { tmtest::stop_watched(pipeline); }
};

} // namespace

TEST(D3d11Storage, the_storage_is_named_d3d11_and_auto_never_picks_it) {
  auto *klass = static_cast<GEnumClass *>(g_type_class_ref(GST_TYPE_TENSOR_STORAGE));
  GEnumValue *value = g_enum_get_value_by_nick(klass, "d3d11");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value->value, GST_TENSOR_STORAGE_D3D11);
  g_type_class_unref(klass);
  EXPECT_NE(gst_tensor_storage_resolve(GST_TENSOR_STORAGE_AUTO), GST_TENSOR_STORAGE_D3D11);
  EXPECT_EQ(gst_tensor_storage_resolve(GST_TENSOR_STORAGE_D3D11), GST_TENSOR_STORAGE_D3D11);
}

TEST(D3d11Device, every_new_device_wraps_the_one_process_context) {
  GError *error = nullptr;
  GstTensorMemD3D11Device *a = gst_tensor_d3d11_device_new(&error);
  ASSERT_NE(a, nullptr) << (error ? error->message : "");
  GstTensorMemD3D11Device *b = gst_tensor_d3d11_device_new(nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(gst_tensor_d3d11_device_get_d3d11_context(a), gst_tensor_d3d11_device_get_d3d11_context(b));
  auto process = tensormem::D3d11Context::process();
  ASSERT_TRUE(process);
  EXPECT_EQ(gst_tensor_d3d11_device_get_d3d11_context(a), *process);
  EXPECT_STREQ(gst_tensor_d3d11_device_get_name(a), (*process)->device().name());
  gst_object_unref(a);
  gst_object_unref(b);
}

TEST_F(D3d11ContextTest, two_linked_uploads_share_one_device_and_answer_context_queries) {
  ContextWatch watch;
  GstElement *pipeline = launch("videotestsrc ! tensorupload name=a storage=d3d11 ! tensordownload ! tensorupload name=b "
                                "storage=d3d11 ! fakesink",
                                &watch);
  GstTensorMemD3D11Device *a = ready_with_one_device(pipeline);
  ASSERT_NE(a, nullptr);
  // b (downstream, first to READY) asked the application and made the
  // device; the bin handed it to a.
  EXPECT_EQ(watch.need, 1);
  EXPECT_EQ(watch.have, 1);
  // A neighbour's context query is answered with the same device.
  GstElement *eb = gst_bin_get_by_name(GST_BIN(pipeline), "b");
  GstPad *sink = gst_element_get_static_pad(eb, "sink");
  GstQuery *query = gst_query_new_context(GST_TENSOR_D3D11_DEVICE_CONTEXT_TYPE);
  EXPECT_TRUE(gst_pad_query(sink, query));
  GstContext *answer = nullptr;
  gst_query_parse_context(query, &answer);
  GstTensorMemD3D11Device *answered = nullptr;
  EXPECT_TRUE(answer && gst_context_get_tensor_d3d11_device(answer, &answered));
  EXPECT_EQ(answered, a);
  gst_clear_object(&answered);
  gst_query_unref(query);
  gst_object_unref(sink);
  gst_object_unref(eb);
  gst_clear_object(&a);
  stop(pipeline);
}

TEST_F(D3d11ContextTest, unlinked_uploads_share_one_device_through_the_bin) {
  ContextWatch watch;
  GstElement *pipeline = launch("videotestsrc ! tensorupload name=a storage=d3d11 ! fakesink  videotestsrc ! "
                                "tensorupload name=b storage=d3d11 ! fakesink",
                                &watch);
  GstTensorMemD3D11Device *a = ready_with_one_device(pipeline);
  ASSERT_NE(a, nullptr);
  // The second element's need-context was answered by the bin.
  EXPECT_EQ(watch.need, 1);
  EXPECT_EQ(watch.have, 1);
  gst_clear_object(&a);
  stop(pipeline);
}

TEST_F(D3d11ContextTest, an_application_device_is_used_by_set_context_and_need_context) {
  // A device of the application's own, distinct from the process one.
  auto soft = tensormem::create_software_d3d11_device();
  ASSERT_TRUE(soft) << soft.error().message();
  auto context = tensormem::D3d11Context::create(std::move(*soft));
  ASSERT_TRUE(context) << context.error().message();
  GstTensorMemD3D11Device *app = gst_tensor_d3d11_device_new_wrapped(*context);
  ASSERT_NE(app, nullptr);

  ContextWatch on_pipeline;
  GstElement *pipeline = launch("videotestsrc ! tensorupload name=a storage=d3d11 ! fakesink", &on_pipeline);
  GstContext *shared = gst_context_new_tensor_d3d11_device(app, TRUE);
  gst_element_set_context(pipeline, shared);
  ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
  GstTensorMemD3D11Device *a = element_device(pipeline, "a");
  EXPECT_EQ(a, app);
  gst_clear_object(&a);
  EXPECT_EQ(on_pipeline.need, 0);
  EXPECT_EQ(on_pipeline.have, 0);
  stop(pipeline);

  ContextWatch answering;
  answering.answer = shared;
  pipeline = launch("videotestsrc ! tensorupload name=a storage=d3d11 ! fakesink", &answering);
  ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
  a = element_device(pipeline, "a");
  EXPECT_EQ(a, app);
  gst_clear_object(&a);
  EXPECT_EQ(answering.need, 1);
  EXPECT_EQ(answering.have, 0);
  stop(pipeline);

  gst_context_unref(shared);
  gst_object_unref(app);
}

TEST(D3d11Device, contexts_of_other_types_or_without_a_device_are_ignored) {
  GstContext *other = gst_context_new("some.other.type", FALSE);
  EXPECT_FALSE(gst_context_get_tensor_d3d11_device(other, nullptr));
  gst_context_unref(other);
  GstContext *empty = gst_context_new(GST_TENSOR_D3D11_DEVICE_CONTEXT_TYPE, FALSE);
  GstTensorMemD3D11Device *device = reinterpret_cast<GstTensorMemD3D11Device *>(0x1);
  EXPECT_FALSE(gst_context_get_tensor_d3d11_device(empty, &device));
  EXPECT_EQ(device, nullptr);
  GstElement *upload = gst_element_factory_make("tensorupload", nullptr);
  ASSERT_NE(upload, nullptr);
  GstTensorMemD3D11Device *slot = nullptr;
  EXPECT_FALSE(gst_tensor_d3d11_device_handle_set_context(upload, empty, &slot));
  EXPECT_EQ(slot, nullptr);
  GstQuery *query = gst_query_new_context(GST_TENSOR_D3D11_DEVICE_CONTEXT_TYPE);
  EXPECT_FALSE(gst_tensor_d3d11_device_handle_context_query(upload, query, &slot)) << "no device, no answer";
  gst_query_unref(query);
  gst_object_unref(upload);
  gst_context_unref(empty);
}

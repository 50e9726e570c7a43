// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <gst/gst.h>
#include <gst/tensormem/gsttensormem.h>

namespace {

/* gst_init once per test program, and gst_deinit at the end so leak checkers
 * see every GStreamer object released. */
class GstEnvironment : public ::testing::Environment {
public:
  void SetUp() override {
    gst_init(nullptr, nullptr);
    gst_tensor_mem_init();
  }
  void TearDown() override { gst_deinit(); }
};

const auto *const g_env = ::testing::AddGlobalTestEnvironment(new GstEnvironment);

} // namespace

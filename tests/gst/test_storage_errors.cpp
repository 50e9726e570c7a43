// SPDX-License-Identifier: Apache-2.0
// A storage the machine cannot give is reported when the pipeline starts,
// as one element error whose message (what a user sees at the default debug
// level) names what is missing and the fix, instead of a bare
// "not-negotiated" from upstream. Each case runs before anything else in
// this program touched DMA heaps or EGL, so the environment it sets decides.
#include "pipeline_util.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace {

struct BusErrors {
  std::vector<std::string> messages;
  std::vector<std::string> sources;
  bool eos = false;
};

/* Runs `description` until EOS or the first error, sets it back to NULL and
 * collects every error message it posted. */
BusErrors run_for_errors(const std::string &description) {
  BusErrors out;
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  if (error) {
    ADD_FAILURE() << description << ": " << error->message;
    g_error_free(error);
    return out;
  }
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  auto take = [&](GstMessage *msg) {
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS) {
      out.eos = true;
    } else {
      GError *err = nullptr;
      gst_message_parse_error(msg, &err, nullptr);
      out.messages.emplace_back(err->message);
      out.sources.emplace_back(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)));
      g_error_free(err);
    }
    gst_message_unref(msg);
  };
  if (GstMessage *msg = gst_bus_timed_pop_filtered(bus, tmtest::kTimeout,
                                                   static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR)))
    take(msg);
  else
    ADD_FAILURE() << "neither EOS nor an error within the timeout: " << description;
  EXPECT_NE(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_FAILURE);
  while (GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR))
    take(msg);
  gst_object_unref(bus);
  tmtest::release_pipeline(pipeline);
  return out;
}

/* Sets an environment variable for one test and puts the old value back. */
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = g_getenv(name))
      old_ = old, had_ = true;
    g_setenv(name, value, TRUE);
  }
  ~ScopedEnv() {
    if (had_)
      g_setenv(name_, old_.c_str(), TRUE);
    else
      g_unsetenv(name_);
  }

private:
  const char *name_;
  std::string old_;
  bool had_ = false;
};

bool any_dma_heap_opens() {
  for (const char *heap : {"system", "linux,cma", "reserved"}) {
    const int fd = ::open((std::string("/dev/dma_heap/") + heap).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      return true;
    }
  }
  return false;
}

void expect_one_upload_error(const BusErrors &errors, std::initializer_list<const char *> parts) {
  EXPECT_FALSE(errors.eos);
  ASSERT_EQ(errors.messages.size(), 1u) << "expected exactly one error";
  EXPECT_EQ(errors.sources[0], "up") << errors.messages[0];
  for (const char *part : parts)
    EXPECT_NE(errors.messages[0].find(part), std::string::npos)
        << "missing \"" << part << "\" in: " << errors.messages[0];
}

TEST(StorageErrors, DmaBufWithoutAHeapNamesTheHeapsTriedAndTheMemfdSwitch) {
  if (any_dma_heap_opens())
    GTEST_SKIP() << "this machine has a usable DMA heap under /dev/dma_heap";
  ScopedEnv source("TENSORMEM_DMABUF_SOURCE", "heap");
  const BusErrors errors =
      run_for_errors("videotestsrc num-buffers=2 ! tensorupload name=up storage=dmabuf ! fakesink");
  expect_one_upload_error(errors,
                          {"storage=dmabuf", "no DMA heap", "/dev/dma_heap/system", "TENSORMEM_DMABUF_SOURCE=memfd"});
}

TEST(StorageErrors, DmaBufWithABadSourceVariableNamesTheVariableAndItsValues) {
  ScopedEnv source("TENSORMEM_DMABUF_SOURCE", "tmpfs");
  const BusErrors errors =
      run_for_errors("videotestsrc num-buffers=2 ! tensorupload name=up storage=dmabuf ! fakesink");
  expect_one_upload_error(errors, {"storage=dmabuf", "TENSORMEM_DMABUF_SOURCE=tmpfs", "\"heap\"", "\"memfd\""});
}

TEST(StorageErrors, PboWithoutEglNamesThePlatformsTriedAndTheOtherStorages) {
  // libglvnd finds no EGL vendor: every platform fails.
  ScopedEnv egl("__EGL_VENDOR_LIBRARY_FILENAMES", "/nonexistent/egl_vendor.json");
  const BusErrors errors = run_for_errors("videotestsrc num-buffers=2 ! tensorupload name=up storage=pbo ! fakesink");
  expect_one_upload_error(errors, {"storage=pbo", "EGL_MESA_platform_surfaceless", "storage=system"});
}

TEST(StorageErrors, D3d11WithoutADeviceNamesTheSoftwareSwitchAndReachesNull) {
#if defined(_WIN32)
  GTEST_SKIP() << "Windows has the real D3D11 device";
#endif
  // Without TENSORMEM_D3D11_DEVICE=software there is no D3D11 device off
  // Windows; the process context is only cached once it exists, so this
  // program's other cases are not affected.
  g_unsetenv("TENSORMEM_D3D11_DEVICE");
  const BusErrors errors = run_for_errors("videotestsrc num-buffers=2 ! tensorupload name=up storage=d3d11 ! fakesink");
  expect_one_upload_error(errors, {"storage=d3d11", "TENSORMEM_D3D11_DEVICE=software", "storage=system"});
}

TEST(StorageErrors, RequireZeroCopyRefusalNamesTheCopyAndTheFix) {
  // identity drops the allocation query: videotestsrc never sees our pool,
  // so every buffer would need a copy.
  const BusErrors errors = run_for_errors("videotestsrc num-buffers=2 ! video/x-raw,format=RGBA ! identity "
                                          "drop-allocation=true ! tensorupload name=up storage=system "
                                          "require-zero-copy=true ! fakesink");
  expect_one_upload_error(errors, {"require-zero-copy", "copy"});
}

} // namespace

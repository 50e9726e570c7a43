// SPDX-License-Identifier: Apache-2.0
// tensorcudaimport without CUDA: run once with FAKE_CUDART_DEVICE_COUNT=0
// (the fake answers cudaErrorNoDevice) and once with TENSORMEM_CUDART
// pointing at a file that does not exist. Buffers pass through with ONE
// warning, cuda-available is FALSE, and require-cuda=true is an error.
#include "cuda_pipeline_util.hpp"

#include <tensormem/internal/cuda_runtime.hpp>

namespace {

const char *kHead = "videotestsrc num-buffers=4 ! video/x-raw,format=RGBA,width=16,height=8 ! tensorupload "
                    "storage=dmabuf ! ";

TEST(CudaUnavailable, buffers_pass_through_with_one_warning) {
  ASSERT_FALSE(tensormem::cuda_available());
  cudatest::Run ref;
  cudatest::run(std::string(kHead) + "tensorinspect name=ins ! fakesink sync=false", &ref);
  cudatest::Run run;
  cudatest::run(std::string(kHead) + "tensorcudaimport name=imp ! tensorinspect name=ins ! fakesink sync=false", &run);
  ASSERT_TRUE(run.eos) << run.error;
  EXPECT_EQ(run.on_path("host"), 4u);
  EXPECT_EQ(run.checksums(), ref.checksums());
  ASSERT_EQ(run.warnings.size(), 1u);
  EXPECT_NE(run.warnings[0].find("CUDA is unavailable"), std::string::npos) << run.warnings[0];
  EXPECT_FALSE(run.cuda_available);
  EXPECT_EQ(run.cuda_backend, "none");
  EXPECT_EQ(run.imports, 0u);
}

/* The library's own report, what the elements log and tell. */
TEST(CudaUnavailable, the_status_says_why) {
  const gchar *api = nullptr, *library = nullptr, *reason = nullptr;
  gint devices = -1;
  EXPECT_FALSE(gst_tensor_mem_cuda_get_status(&api, &library, &devices, &reason));
  EXPECT_STREQ(api, "none");
  EXPECT_EQ(devices, 0);
  ASSERT_NE(reason, nullptr);
  EXPECT_STRNE(reason, "");
  EXPECT_FALSE(gst_tensor_mem_cuda_get_status(nullptr, nullptr, nullptr, nullptr));
}

TEST(CudaUnavailable, require_cuda_is_an_error) {
  cudatest::Run run;
  cudatest::run(std::string(kHead) +
                    "tensorcudaimport name=imp require-cuda=true ! tensorinspect name=ins ! fakesink sync=false",
                &run);
  EXPECT_FALSE(run.eos);
  EXPECT_NE(run.error.find("require-cuda"), std::string::npos) << run.error;
}

} // namespace

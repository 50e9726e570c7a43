// SPDX-License-Identifier: Apache-2.0
// tensorcudaimport against the fake CUDA runtime as it comes, which is a
// desktop driver (no FAKE_CUDART_ACCEPT_DMABUF): it refuses DMA-BUF (memfd
// here) as CUDA external memory. Every frame passes on without a CUDA meta
// after one warning that names the refusal, tensorinspect reads it on the
// host path with the checksums of the same pipeline without
// tensorcudaimport, no CUDA object is left behind, and require-cuda=true
// turns the refusal into an element error.
#include "cuda_pipeline_util.hpp"

#include "fake_cudart.h"

#include <tensormem/internal/cuda_runtime.hpp>

#include <cstdlib>
#include <string>

namespace {

constexpr size_t kFrames = 5;
const std::string kHead = "videotestsrc num-buffers=5 pattern=ball ! video/x-raw,format=NV12,width=30,height=14 ! "
                          "tensorupload storage=dmabuf ! ";

class CudaDesktopDriver : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(std::getenv("FAKE_CUDART_ACCEPT_DMABUF"), nullptr) << "this program checks the fake's default";
    ASSERT_TRUE(tensormem::cuda_available()) << tensormem::CudaRuntime::get()->reason();
    ASSERT_EQ(fake_cudart_accepts_dmabuf(), 0);
  }
  void TearDown() override {
    EXPECT_EQ(fake_cudart_live(nullptr), 0u) << "CUDA objects outlived the pipeline";
    EXPECT_EQ(fake_cudart_violations(), 0u);
  }
};

TEST_F(CudaDesktopDriver, dmabuf_frames_pass_on_without_cuda_with_the_host_checksums) {
  cudatest::Run ref;
  cudatest::run(kHead + "tensorinspect name=ins ! fakesink sync=false", &ref);
  ASSERT_TRUE(ref.eos) << ref.error;
  ASSERT_EQ(ref.frames.size(), kFrames);

  fake_cudart_reset_counters();
  cudatest::Run run;
  cudatest::run(kHead + "tensorcudaimport name=imp ! tensorinspect name=ins ! fakesink sync=false", &run);
  ASSERT_TRUE(run.eos) << run.error;
  ASSERT_EQ(run.frames.size(), kFrames);
  EXPECT_EQ(run.on_path("host"), kFrames);
  EXPECT_EQ(run.checksums(), ref.checksums());
  EXPECT_EQ(run.summary_cuda, 0u);
  EXPECT_TRUE(run.cuda_available) << "CUDA itself works; only the DMA-BUF import is refused";
  EXPECT_EQ(run.imports, 0u);
  ASSERT_EQ(run.warnings.size(), 1u) << "one warning per cause";
  EXPECT_NE(
      run.warnings[0].find(cudatest::call_name("cudaImportExternalMemory", "cuImportExternalMemory") + "(OpaqueFd"),
      std::string::npos)
      << run.warnings[0];
  EXPECT_NE(run.warnings[0].find(cudatest::status_text(1)), std::string::npos) << run.warnings[0];
  EXPECT_EQ(run.cuda_backend, cudatest::tested_api());
  EXPECT_GE(fake_cudart_calls("cudaImportExternalMemory"), 1u);
  EXPECT_EQ(fake_cudart_calls("cudaExternalMemoryGetMappedBuffer"), 0u);
  EXPECT_EQ(fake_cudart_calls("cudaMemcpy"), 0u) << "no frame was read through CUDA";
}

TEST_F(CudaDesktopDriver, require_cuda_turns_the_refusal_into_an_error) {
  cudatest::Run run;
  cudatest::run(kHead + "tensorcudaimport name=imp require-cuda=true ! tensorinspect name=ins ! fakesink sync=false",
                &run);
  EXPECT_FALSE(run.eos);
  EXPECT_NE(run.error.find("require-cuda"), std::string::npos) << run.error;
  EXPECT_NE(run.error.find(cudatest::status_text(1)), std::string::npos) << run.error;
}

} // namespace

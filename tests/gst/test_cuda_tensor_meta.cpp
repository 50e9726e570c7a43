// SPDX-License-Identifier: Apache-2.0
/* tensorcudaimport on the tensors of an incoming GstTensorMeta (GStreamer
 * 1.26), against the fake CUDA runtime emulating a driver that imports
 * DMA-BUF (FAKE_CUDART_ACCEPT_DMABUF=1): a tensor beside a video frame
 * (tensorconvert storage=dmabuf output=meta) gets a CUDA meta on its own
 * data buffer, tensorinspect reads it through CUDA with the checksum of its
 * bytes read here, and the frame in system memory beside it draws no
 * warning. Built where both exist (the Debian 13 leg). */
#include "meta_read_util.hpp"

#include <gst/tensormem/tensormem.h>

#include <string>

using tmtest::MetaRun;

TEST(CudaTensorMeta, TheTensorBesideAFrameReachesCuda) {
  MetaRun run;
  tmtest::run_meta_pipeline("videotestsrc num-buffers=6 pattern=ball ! video/x-raw,format=RGBA,width=64,height=48 ! "
                            "tensorconvert storage=dmabuf width=16 height=8 output=meta ! "
                            "tensorcudaimport name=cuda require-cuda=true ! tensorinspect ! appsink name=sink",
                            &run);
  ASSERT_TRUE(run.eos) << run.error;
  EXPECT_TRUE(run.warnings.empty()) << run.warnings[0];
  ASSERT_EQ(run.samples.size(), 6u);
  ASSERT_EQ(run.tensors.size(), 6u);
  for (std::size_t i = 0; i < run.samples.size(); ++i) {
    SCOPED_TRACE(i);
    GstBuffer *frame = gst_sample_get_buffer(run.samples[i]);
    EXPECT_EQ(gst_buffer_get_tensor_cuda_meta(frame), nullptr) << "the system-memory frame was not to be imported";
    GstTensorMeta *meta = gst_buffer_get_tensor_meta(frame);
    ASSERT_NE(meta, nullptr);
    GstBuffer *data = meta->tensors[0]->data;
    GstTensorMemCudaMeta *cuda = gst_buffer_get_tensor_cuda_meta(data);
    ASSERT_NE(cuda, nullptr) << "the tensor's data buffer has no CUDA meta";
    EXPECT_GE(cuda->size, gst_buffer_get_size(data));
    EXPECT_EQ(run.tensors[i].path, "cuda");
    EXPECT_EQ(run.tensors[i].checksum, tmtest::xxh3_hex(tmtest::bytes_of(data)));
  }
}

/* A tensor in memory CUDA cannot import (a foreign producer's system
 * memory): require-cuda makes it an element error naming the tensor; without
 * it, one warning and the buffers go on. */
TEST(CudaTensorMeta, ATensorCudaCannotImportIsReportedByName) {
  const std::string source = "videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=64,height=48 ! "
                             "tensorconvert width=16 height=8 output=meta ! ";
  MetaRun strict, lenient;
  tmtest::run_meta_pipeline(source + "tensorcudaimport require-cuda=true ! appsink name=sink", &strict);
  EXPECT_FALSE(strict.eos);
  EXPECT_NE(strict.error.find("tensor 0 ('input')"), std::string::npos) << strict.error;
  tmtest::run_meta_pipeline(source + "tensorcudaimport ! appsink name=sink", &lenient);
  ASSERT_TRUE(lenient.eos) << lenient.error;
  EXPECT_EQ(lenient.samples.size(), 3u);
  ASSERT_EQ(lenient.warnings.size(), 1u);
  EXPECT_NE(lenient.warnings[0].find("tensor 0 ('input')"), std::string::npos) << lenient.warnings[0];
}

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
    EXPECT_EQ(gst_buffer_get_tensor_mem_cuda_meta(frame), nullptr) << "the system-memory frame was not to be imported";
    GstTensorMeta *meta = gst_buffer_get_tensor_meta(frame);
    ASSERT_NE(meta, nullptr);
    GstBuffer *data = meta->tensors[0]->data;
    GstTensorMemCudaMeta *cuda = gst_buffer_get_tensor_mem_cuda_meta(data);
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

/* The issue's `tee` before the CUDA import: the import's copy of the shared
 * frame keeps the GstTensorMeta, so every tensor reaches CUDA (GStreamer's
 * copy alone would leave a frame without tensors, imported itself: an error
 * under require-cuda), and the other branch's tensors stay unimported. */
TEST(CudaTensorMeta, TheTensorsOfAFrameBehindATeeReachCuda) {
  MetaRun run;
  tmtest::run_meta_pipeline(
      tmtest::tee_before("videotestsrc num-buffers=6 pattern=ball ! video/x-raw,format=RGBA,width=64,height=48 ! "
                 "tensorconvert storage=dmabuf width=16 height=8 output=meta ! ",
                 "tensorcudaimport require-cuda=true ! tensorinspect"),
      &run);
  ASSERT_TRUE(run.eos) << run.error;
  ASSERT_EQ(run.samples.size(), 6u);
  ASSERT_EQ(run.others.size(), 6u);
  ASSERT_EQ(run.tensors.size(), 6u);
  for (std::size_t i = 0; i < run.samples.size(); ++i) {
    SCOPED_TRACE(i);
    GstTensorMeta *meta = gst_buffer_get_tensor_meta(gst_sample_get_buffer(run.samples[i]));
    GstTensorMeta *other = gst_buffer_get_tensor_meta(gst_sample_get_buffer(run.others[i]));
    ASSERT_NE(meta, nullptr) << "the copy lost the GstTensorMeta";
    ASSERT_NE(other, nullptr);
    ASSERT_EQ(meta->num_tensors, 1u);
    ASSERT_EQ(other->num_tensors, 1u);
    EXPECT_NE(gst_buffer_get_tensor_mem_cuda_meta(meta->tensors[0]->data), nullptr);
    EXPECT_EQ(gst_buffer_get_tensor_mem_cuda_meta(other->tensors[0]->data), nullptr) << "the other branch was changed";
    EXPECT_EQ(run.tensors[i].path, "cuda");
    EXPECT_EQ(tmtest::bytes_of(meta->tensors[0]->data), tmtest::bytes_of(other->tensors[0]->data));
  }
}

/* A frame in CUDA-imported tensor memory, behind a tee, through
 * tensorconvert output=meta: its copy shares the frame's memory, so it keeps
 * the CUDA meta (unmapped) beside the new GstTensorMeta; the other branch's
 * frame keeps its CUDA meta and gets no tensors. */
TEST(CudaTensorMeta, AFrameBehindATeeKeepsItsCudaMetaThroughTensorConvert) {
  MetaRun run;
  tmtest::run_meta_pipeline(
      tmtest::tee_before("videotestsrc num-buffers=4 pattern=ball ! video/x-raw,format=RGBA,width=64,height=48 ! "
                 "tensorupload storage=dmabuf ! tensorcudaimport require-cuda=true ! ",
                 "tensorconvert width=16 height=8 output=meta"),
      &run);
  ASSERT_TRUE(run.eos) << run.error;
  ASSERT_EQ(run.samples.size(), 4u);
  ASSERT_EQ(run.others.size(), 4u);
  for (std::size_t i = 0; i < run.samples.size(); ++i) {
    SCOPED_TRACE(i);
    GstBuffer *frame = gst_sample_get_buffer(run.samples[i]);
    GstBuffer *other = gst_sample_get_buffer(run.others[i]);
    ASSERT_NE(frame, other) << "the frame was meant to be shared, so copied";
    ASSERT_EQ(gst_buffer_peek_memory(frame, 0), gst_buffer_peek_memory(other, 0));
    EXPECT_NE(gst_buffer_get_tensor_meta(frame), nullptr);
    GstTensorMemCudaMeta *cuda = gst_buffer_get_tensor_mem_cuda_meta(frame);
    GstTensorMemCudaMeta *other_cuda = gst_buffer_get_tensor_mem_cuda_meta(other);
    ASSERT_NE(cuda, nullptr) << "the copy lost the CUDA meta";
    ASSERT_NE(other_cuda, nullptr);
    EXPECT_EQ(cuda->size, other_cuda->size);
    EXPECT_FALSE(gst_tensor_mem_cuda_meta_is_mapped(cuda));
    gpointer ptr = nullptr, other_ptr = nullptr;
    ASSERT_TRUE(gst_tensor_mem_cuda_meta_map(cuda, &ptr, nullptr, nullptr));
    ASSERT_TRUE(gst_tensor_mem_cuda_meta_map(other_cuda, &other_ptr, nullptr, nullptr));
    EXPECT_EQ(ptr, other_ptr) << "the copy's CUDA meta gives other bytes";
    gst_tensor_mem_cuda_meta_unmap(cuda);
    gst_tensor_mem_cuda_meta_unmap(other_cuda);
    EXPECT_EQ(gst_buffer_get_tensor_meta(other), nullptr) << "the other branch was changed";
  }
}

/* gst_tensor_mem_buffer_make_writable() on a shared frame that carries both
 * metas it promises to keep (a DMA-BUF frame imported into CUDA, with the
 * tensor tensorconvert put beside it): the writable copy has the frame's
 * memory, a CUDA meta giving the same device bytes, and a GstTensorMeta
 * whose tensor shares the original's data; a writable buffer comes back as
 * it is. */
TEST(CudaTensorMeta, MakeWritableKeepsTheTensorMetaAndTheCudaMeta) {
  MetaRun run;
  tmtest::run_meta_pipeline("videotestsrc num-buffers=2 pattern=ball ! video/x-raw,format=RGBA,width=64,height=48 ! "
                            "tensorupload storage=dmabuf ! tensorcudaimport require-cuda=true ! "
                            "tensorconvert width=16 height=8 output=meta ! appsink name=sink",
                            &run);
  ASSERT_TRUE(run.eos) << run.error;
  ASSERT_EQ(run.samples.size(), 2u);
  for (GstSample *sample : run.samples) {
    GstBuffer *frame = gst_sample_get_buffer(sample);
    ASSERT_NE(gst_buffer_get_tensor_meta(frame), nullptr);
    ASSERT_NE(gst_buffer_get_tensor_mem_cuda_meta(frame), nullptr);
    GstBuffer *shared = gst_buffer_ref(frame); // the sample holds the other reference
    ASSERT_FALSE(gst_buffer_is_writable(shared));
    GstBuffer *copy = gst_tensor_mem_buffer_make_writable(shared);
    ASSERT_NE(copy, frame);
    EXPECT_TRUE(gst_buffer_is_writable(copy));
    EXPECT_EQ(gst_buffer_peek_memory(copy, 0), gst_buffer_peek_memory(frame, 0));
    GstTensorMeta *meta = gst_buffer_get_tensor_meta(frame);
    GstTensorMeta *copied = gst_buffer_get_tensor_meta(copy);
    ASSERT_NE(copied, nullptr) << "the copy lost the GstTensorMeta";
    ASSERT_EQ(copied->num_tensors, meta->num_tensors);
    EXPECT_EQ(copied->tensors[0]->id, meta->tensors[0]->id);
    EXPECT_EQ(gst_buffer_peek_memory(copied->tensors[0]->data, 0), gst_buffer_peek_memory(meta->tensors[0]->data, 0));
    GstTensorMemCudaMeta *cuda = gst_buffer_get_tensor_mem_cuda_meta(frame);
    GstTensorMemCudaMeta *copied_cuda = gst_buffer_get_tensor_mem_cuda_meta(copy);
    ASSERT_NE(copied_cuda, nullptr) << "the copy lost the CUDA meta";
    gpointer ptr = nullptr, copied_ptr = nullptr;
    ASSERT_TRUE(gst_tensor_mem_cuda_meta_map(cuda, &ptr, nullptr, nullptr));
    ASSERT_TRUE(gst_tensor_mem_cuda_meta_map(copied_cuda, &copied_ptr, nullptr, nullptr));
    EXPECT_EQ(copied_ptr, ptr);
    gst_tensor_mem_cuda_meta_unmap(copied_cuda);
    gst_tensor_mem_cuda_meta_unmap(cuda);
    EXPECT_EQ(gst_tensor_mem_buffer_make_writable(copy), copy) << "a writable buffer is returned as it is";
    gst_buffer_unref(copy);
  }
}

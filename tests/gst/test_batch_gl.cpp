// SPDX-License-Identifier: Apache-2.0
/* tensorbatch over PBO memory (issue 26's GL path): four streams, each
 * converted by tensorconvert's GL pass straight into its slot of one PBO
 * per batch, against the same streams converted alone by the same pass
 * (byte-exact, no copy, the GL worker shared by the application or found
 * by the elements themselves); slots that end inside a 32-bit word, which
 * the pass cannot write in place (copied into the PBO by the CPU, counted,
 * fenced); a stream that ends early (its slots zeroed in the PBO); a PBO
 * kept from reuse while a reader reads it after its buffer is gone; the pass
 * writing at an offset into a larger buffer, nothing outside its window. */
#include "batch_test_util.hpp"
#include "gl_test_util.hpp"

#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>
#include <tensormem/gl_convert.hpp>

#include <string>
#include <vector>

namespace {

using batchtest::BatchRun;
using batchtest::dims_of;
using batchtest::run;
using batchtest::tensors_of;

#define REQUIRE_GL()                                                                                                   \
  std::string no_gl;                                                                                                   \
  if (!tmtest::shared_worker(&no_gl))                                                                                  \
  GTEST_SKIP() << "no headless GL context: " << no_gl

constexpr int kFrames = 4;
const char *const kPatterns[] = {"smpte", "ball", "circular", "pinwheel"};

/* A tensor of `w`x`h` in `dtype` by the GL pass, from PBO input (no copy on
 * the way in). */
std::string gl_chain(const char *pattern, int frames, int w, int h, const char *dtype) {
  return std::string("videotestsrc pattern=") + pattern + " num-buffers=" + std::to_string(frames) +
         " ! video/x-raw,format=RGBA,width=64,height=48,framerate=30/1 ! tensorupload storage=pbo ! "
         "tensorconvert storage=pbo resize=letterbox mean=<0.5,0.4,0.3> std=<0.2,0.25,0.3> dtype=" +
         dtype + " width=" + std::to_string(w) + " height=" + std::to_string(h) + " ";
}

std::vector<std::uint8_t> slot_of(GstSample *sample, guint slot, gsize bytes) {
  std::vector<std::uint8_t> out(bytes);
  EXPECT_EQ(gst_buffer_extract(gst_sample_get_buffer(sample), slot * bytes, out.data(), bytes), bytes);
  return out;
}

struct Layout {
  int w, h;
  const char *dtype;
  gsize bytes;
};

/* Four GL streams into one batch; each slot against its stream alone. */
void four_gl_streams(const Layout &l, const std::string &batch_props, const std::string &convert_props, bool shared,
                     bool in_place, BatchRun *r) {
  std::string d = "tensorbatch name=batch " + batch_props + " ! appsink name=sink sync=false ";
  for (int i = 0; i < 4; ++i)
    d += gl_chain(kPatterns[i], kFrames, l.w, l.h, l.dtype) + convert_props + " ! batch.sink_" + std::to_string(i) +
         " ";
  run(d, r, {}, shared ? tmtest::share_gl_worker : std::function<void(GstElement *)>());
  ASSERT_TRUE(r->eos) << r->error;
  ASSERT_EQ(r->samples.size(), static_cast<std::size_t>(kFrames));
  for (guint i = 0; i < 4; ++i) {
    const auto ref = tensors_of(gl_chain(kPatterns[i], kFrames, l.w, l.h, l.dtype) + " ! appsink name=sink");
    ASSERT_EQ(ref.size(), static_cast<std::size_t>(kFrames));
    for (int f = 0; f < kFrames; ++f)
      EXPECT_EQ(slot_of(r->samples[f], i, l.bytes), ref[f]) << "stream " << i << " frame " << f;
  }
  for (GstSample *sample : r->samples) {
    GstBuffer *batch = gst_sample_get_buffer(sample);
    ASSERT_EQ(gst_buffer_n_memory(batch), 1u);
    EXPECT_TRUE(gst_is_tensor_mem_pbo_memory(gst_buffer_peek_memory(batch, 0))) << "one PBO per batch";
    EXPECT_EQ(gst_buffer_get_size(batch), 4 * l.bytes);
    // The GL writes travel with the batch as fences; so do the CPU's copies
    // where the PBO is mapped per call.
    if (in_place || gst_buffer_tensor_mem_pbo_cpu_writes_need_fence(batch)) {
      EXPECT_TRUE(gst_buffer_has_tensor_mem_fence(batch));
    }
    GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(batch);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->n_filled, 4u);
  }
}

TEST(TensorBatchGl, FourGlStreamsWriteTheirPboSlotsInPlace) {
  REQUIRE_GL();
  BatchRun r;
  const Layout l{32, 24, "float32", 32 * 24 * 3 * 4};
  four_gl_streams(l, "require-zero-copy=true", "require-zero-copy=true", true, true, &r);
  EXPECT_EQ(r.copied, 0u);
  for (GstSample *sample : r.samples) {
    EXPECT_EQ(dims_of(sample), "32:24:3:4");
    GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(sample));
    for (guint i = 0; i < 4; ++i)
      EXPECT_FALSE(gst_tensor_mem_batch_meta_get_slot(meta, i)->copied);
  }
}

/* No application context: the converters and tensorbatch find one GL
 * worker through GstContext, so the slots are still written in place. */
TEST(TensorBatchGl, TheElementsShareOneGlWorkerWithoutTheApplication) {
  REQUIRE_GL();
  BatchRun r;
  const Layout l{16, 12, "uint8", 16 * 12 * 3};
  four_gl_streams(l, "require-zero-copy=true", "require-zero-copy=true", false, true, &r);
  EXPECT_EQ(r.copied, 0u);
}

/* 7x5x3 bytes end inside a word: the pass would overwrite the next slot's
 * first byte, so each stream keeps its own PBOs and tensorbatch copies the
 * tensors into the batch's PBO on the CPU (counted, fenced). */
TEST(TensorBatchGl, SlotsEndingInsideAWordAreCopiedIntoThePbo) {
  REQUIRE_GL();
  BatchRun r;
  const Layout l{7, 5, "uint8", 7 * 5 * 3};
  four_gl_streams(l, "", "", true, false, &r);
  EXPECT_EQ(r.copied, static_cast<guint64>(kFrames) * 4 * l.bytes);
  for (GstSample *sample : r.samples) {
    GstTensorMemBatchMeta *meta = gst_buffer_get_tensor_mem_batch_meta(gst_sample_get_buffer(sample));
    for (guint i = 0; i < 4; ++i)
      EXPECT_TRUE(gst_tensor_mem_batch_meta_get_slot(meta, i)->copied);
  }
}

TEST(TensorBatchGl, SlotsEndingInsideAWordAreRefusedUnderRequireZeroCopy) {
  REQUIRE_GL();
  BatchRun r;
  std::string d = "tensorbatch name=batch require-zero-copy=true ! appsink name=sink sync=false ";
  for (int i = 0; i < 2; ++i)
    d += gl_chain(kPatterns[i], kFrames, 7, 5, "uint8") + " ! batch.sink_" + std::to_string(i) + " ";
  run(d, &r, {}, tmtest::share_gl_worker);
  EXPECT_FALSE(r.eos);
  EXPECT_NE(r.error.find("would be copied into its batch slot"), std::string::npos) << r.error;
  EXPECT_EQ(r.copied, 0u);
}

/* The batches after a stream's end have its slot zeroed in the PBO. */
TEST(TensorBatchGl, AStreamThatEndsEarlyHasItsPboSlotZeroed) {
  REQUIRE_GL();
  BatchRun r;
  const gsize bytes = 16 * 12 * 3 * 4;
  // The first batches fill the PBOs with both streams' frames; the later
  // ones reuse those PBOs, so a slot not zeroed would show an old frame.
  constexpr int kLong = 8, kShort = 3;
  const std::string d = "tensorbatch name=batch ! appsink name=sink sync=false " +
                        gl_chain(kPatterns[0], kLong, 16, 12, "float32") + " ! batch.sink_0 " +
                        gl_chain(kPatterns[1], kShort, 16, 12, "float32") + " ! batch.sink_1 ";
  run(d, &r, {}, tmtest::share_gl_worker);
  ASSERT_TRUE(r.eos) << r.error;
  ASSERT_EQ(r.samples.size(), static_cast<std::size_t>(kLong));
  EXPECT_EQ(r.copied, 0u);
  EXPECT_EQ(r.partial, static_cast<guint64>(kLong - kShort));
  const auto ref0 = tensors_of(gl_chain(kPatterns[0], kLong, 16, 12, "float32") + " ! appsink name=sink");
  const auto ref1 = tensors_of(gl_chain(kPatterns[1], kShort, 16, 12, "float32") + " ! appsink name=sink");
  for (int f = 0; f < kLong; ++f) {
    EXPECT_EQ(slot_of(r.samples[f], 0, bytes), ref0[f]) << "frame " << f;
    if (f < kShort)
      EXPECT_EQ(slot_of(r.samples[f], 1, bytes), ref1[f]) << "frame " << f;
    else
      EXPECT_EQ(slot_of(r.samples[f], 1, bytes), std::vector<std::uint8_t>(bytes, 0)) << "frame " << f;
  }
}

/* A reader that outlives the batch buffer (gst_buffer_begin_tensor_mem_read:
 * an inference step queued on a GPU, say) keeps its PBO from being reused
 * until it is done; the other PBOs go round as usual. */
TEST(TensorBatchGl, APboBeingReadIsNotReusedUntilTheReaderIsDone) {
  REQUIRE_GL();
  constexpr int kMany = 12;
  std::string d = "tensorbatch name=batch ! appsink name=sink sync=false max-buffers=1 ";
  for (int i = 0; i < 2; ++i)
    d += gl_chain(kPatterns[i], kMany, 16, 12, "float32") + " ! batch.sink_" + std::to_string(i) + " ";
  const std::vector<guint64> names = batchtest::allocations_while_first_is_read(
      d, [](GstMemory *mem) -> guint64 { return gst_tensor_mem_pbo_memory_get_buffer_id(mem); }, tmtest::share_gl_worker);
  batchtest::expect_first_kept_others_reused(names, kMany);
}

/* The pass at an offset: the same bytes as at offset 0, nothing written
 * outside its window, offsets that are no whole word refused. */
TEST(GlFrameConverterWindow, WritesOnlyItsWindowAtAnOffset) {
  REQUIRE_GL();
  std::shared_ptr<tensormem::GlWorker> worker = gst_tensor_mem_gl_worker_get_core_gl_worker(tmtest::shared_worker(&no_gl));
  tensormem::ConvertSpec spec;
  spec.input = tensormem::PixelFormat::RGBA;
  spec.in_width = 8;
  spec.in_height = 4;
  spec.out_width = 4;
  spec.out_height = 3;
  spec.dtype = tensormem::DType::U8; // 36 bytes: 9 words
  tensormem::Result<tensormem::FrameConverter> cpu = tensormem::FrameConverter::create(spec);
  ASSERT_TRUE(cpu) << cpu.error().message();
  tensormem::Result<std::shared_ptr<tensormem::GlFrameConverter>> pass = tensormem::GlFrameConverter::create(worker, *cpu);
  ASSERT_TRUE(pass) << pass.error().message();
  ASSERT_EQ((*pass)->padded_output_bytes(), 36u);
  constexpr std::size_t kBig = 300, kAt = 132; // 132: a word, not a multiple of any SSBO offset alignment above 4
  tensormem::Result<tensormem::Tensor> in = worker->create_pbo(128, {128}, tensormem::DType::U8);
  tensormem::Result<tensormem::Tensor> alone = worker->create_pbo(36, {36}, tensormem::DType::U8);
  tensormem::Result<tensormem::Tensor> big = worker->create_pbo(kBig, {kBig}, tensormem::DType::U8);
  ASSERT_TRUE(in && alone && big);
  {
    tensormem::Result<tensormem::HostView> v = in->map(tensormem::CpuAccess::Write);
    ASSERT_TRUE(v) << v.error().message();
    for (std::size_t i = 0; i < 128; ++i)
      v->mutable_bytes()[i] = static_cast<std::byte>(i * 7 + 3);
  }
  {
    tensormem::Result<tensormem::HostView> v = big->map(tensormem::CpuAccess::Write);
    ASSERT_TRUE(v) << v.error().message();
    for (std::byte &b : v->mutable_bytes())
      b = std::byte{0xab};
  }
  tensormem::GlFrameSource src;
  src.buffer = tensormem::pbo_storage_of(*in)->buffer_id();
  src.size = 128;
  src.stride = {32, 0, 0};
  src.offset = {0, 0, 0};
  const std::uint32_t big_id = tensormem::pbo_storage_of(*big)->buffer_id();
  ASSERT_TRUE((*pass)->convert(src, tensormem::pbo_storage_of(*alone)->buffer_id(), 36));
  ASSERT_TRUE(worker->fence_write(*tensormem::pbo_storage_of(*alone)));
  ASSERT_TRUE((*pass)->convert(src, big_id, kBig, kAt));
  ASSERT_TRUE(worker->fence_write(*tensormem::pbo_storage_of(*big)));
  EXPECT_FALSE((*pass)->convert(src, big_id, kBig, kAt + 2)) << "not a whole word";
  EXPECT_FALSE((*pass)->convert(src, big_id, kBig, kBig - 32)) << "36 bytes do not fit";
  tensormem::Result<tensormem::HostView> a = alone->map(tensormem::CpuAccess::Read);
  tensormem::Result<tensormem::HostView> b = big->map(tensormem::CpuAccess::Read);
  ASSERT_TRUE(a && b);
  const std::vector<std::byte> want(a->bytes().begin(), a->bytes().end());
  const std::vector<std::byte> got(b->bytes().begin() + kAt, b->bytes().begin() + kAt + 36);
  EXPECT_EQ(got, want);
  for (std::size_t i = 0; i < kBig; ++i)
    if (i < kAt || i >= kAt + 36) {
      ASSERT_EQ(b->bytes()[i], std::byte{0xab}) << "byte " << i << " outside the window";
    }
}

} // namespace

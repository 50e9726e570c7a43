// SPDX-License-Identifier: Apache-2.0
// Real decoders writing into our pools keep zero copies (issue 13): a stream
// encoded here at run time is decoded by each decoder installed (avdec_h264,
// openh264dec, jpegdec) into `tensorupload require-zero-copy=true !
// tensordownload` for each storage, over a long stream. Checked: the frames
// are byte for byte those of the same decode into `identity`; nobody copied
// tensor memory (gst_tensor_mem_get_copy_stats, the elements'
// foreign-copies); and the storages that reached tensorupload's output are no
// more than a pool has in flight, not one per frame.
//
// gst-libav's direct rendering keeps every frame mapped for writing while
// libav holds it as a reference picture, so GStreamer's
// gst_buffer_make_writable in gst_video_decoder_finish_frame asks our
// allocator for a copy of each frame; before the fix each one was a new
// allocation plus a full-frame copy. A missing decoder, encoder or GL skips
// its cases, saying why. WriteMappedPoolBuffer does to a pool buffer what
// gst-libav and GstVideoDecoder do, without a decoder, and checks the share
// that answers the copy: same storage, read-only, holding the pool buffer,
// a real (counted) copy into the pool's memory for a writer.
#include "pipeline_util.hpp"
#if TENSORMEM_TEST_HAVE_GL
#include "gl_test_util.hpp"
#endif

#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>

#include <glib/gstdio.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace {

using tmtest::element_available;

/* Long enough that a per-frame allocation cannot hide under the pool size. */
constexpr int kFrames = 120;
constexpr const char *kRawCaps = "video/x-raw,format=I420,width=320,height=240,framerate=30/1";

/* What a pool may have in flight under a decoder: H.264 keeps at most 16
 * reference pictures, plus libav's frame threads (max-threads=2 below), the
 * frame being decoded and the ones downstream holds (the queue's 8 and the
 * one in each element after it). Per-frame allocations make one storage per
 * frame, kFrames of them. */
constexpr size_t kInFlightBound = 32;

struct Decoder {
  const char *name;    // the decoder element
  const char *encoder; // what makes its input
  const char *plugin;  // where a missing element comes from, for the skip message
};

struct Case {
  Decoder decoder;
  const char *storage;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.decoder.name << " into storage=" << c.storage; }

std::string case_name(const ::testing::TestParamInfo<Case> &info) {
  std::string name = std::string(info.param.decoder.name) + "_" + info.param.storage;
  for (char &c : name)
    if (!g_ascii_isalnum(c))
      c = '_';
  return name;
}

/* One H.264 stream for every H.264 case, encoded once (openh264enc); empty
 * with `why` set when it cannot be made. */
const std::string &h264_file(std::string *why) {
  static std::string path;
  static std::string reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    for (const char *element : {"videotestsrc", "openh264enc", "h264parse", "filesink"}) {
      if (!element_available(element)) {
        reason = std::string(element) + " is not installed";
        return path;
      }
    }
    gchar *name = nullptr;
    GError *error = nullptr;
    const int fd = g_file_open_tmp("tensormem-decoders-XXXXXX.h264", &name, &error);
    if (fd < 0) {
      reason = error->message;
      g_error_free(error);
      return path;
    }
    close(fd);
    const std::string description = "videotestsrc num-buffers=" + std::to_string(kFrames) + " pattern=ball ! " +
                                    kRawCaps + " ! openh264enc ! h264parse ! filesink location=" + name;
    tmtest::PipelineRun run;
    tmtest::run_pipeline(description, &run);
    if (run.eos)
      path = name;
    else
      reason = "encoding failed: " + run.error_debug;
    g_free(name);
  }
  *why = reason;
  return path;
}

class H264FileRemoval : public ::testing::Environment {
public:
  void TearDown() override {
    std::string why;
    const std::string &path = h264_file(&why);
    if (!path.empty())
      g_unlink(path.c_str());
  }
};
const auto *const g_h264_removal = ::testing::AddGlobalTestEnvironment(new H264FileRemoval);

/* The storages behind the buffers leaving tensorupload, each kept alive by
 * the set so a freed storage's address cannot be counted twice or hidden. */
struct StorageCount {
  std::set<std::shared_ptr<tensormem::Storage>> storages;
  int foreign_memories = 0; // memories that were not tensor memory
};

GstPadProbeReturn count_storages(GstPad *, GstPadProbeInfo *info, gpointer user_data) {
  auto *count = static_cast<StorageCount *>(user_data);
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
  for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i) {
    const tensormem::Tensor *tensor = gst_tensor_mem_memory_get_tensor(gst_buffer_peek_memory(buffer, i));
    if (tensor)
      count->storages.insert(tensor->storage());
    else
      count->foreign_memories++;
  }
  return GST_PAD_PROBE_OK;
}

/* Checksums of every frame pulled from appsink "sink" of `description`. */
struct DecodeRun {
  std::vector<std::string> checksums;
  bool eos = false;
  std::string error;
  guint64 up_copied = 0, down_copied = 0, foreign_copies = 0;
};

/* SHA-1 of the picture bytes of `sample`'s frame, row by row (padding, which
 * nobody writes, left out). */
std::string picture_checksum(GstSample *sample) {
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, gst_sample_get_caps(sample)))
    return "no video caps";
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &info, gst_sample_get_buffer(sample), GST_MAP_READ))
    return "unmappable";
  GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA1);
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p) {
    const auto *plane = static_cast<const guchar *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
    for (guint row = 0; row < tmtest::plane_rows(&frame, p); ++row)
      g_checksum_update(sum, plane + row * GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p), tmtest::row_bytes(&frame, p));
  }
  gst_video_frame_unmap(&frame);
  std::string hex = g_checksum_get_string(sum);
  g_checksum_free(sum);
  return hex;
}

void decode(const std::string &description, DecodeRun *out, StorageCount *storages, GstContext *context) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  ASSERT_EQ(error, nullptr) << description << ": " << error->message;
  if (context)
    gst_element_set_context(pipeline, context);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstElement *up = gst_bin_get_by_name(GST_BIN(pipeline), "up");
  GstElement *down = gst_bin_get_by_name(GST_BIN(pipeline), "down");
  if (up) {
    GstPad *src = gst_element_get_static_pad(up, "src");
    gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, count_storages, storages, nullptr);
    gst_object_unref(src);
  }
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE) << description;
  for (;;) {
    GstSample *sample = nullptr;
    g_signal_emit_by_name(sink, "pull-sample", &sample);
    if (!sample)
      break;
    out->checksums.push_back(picture_checksum(sample));
    gst_sample_unref(sample);
  }
  const tmtest::PipelineEnd end = tmtest::wait_for_end(pipeline);
  out->eos = end.eos;
  out->error = end.error;
  if (up) {
    out->up_copied = tmtest::copied_bytes(up);
    gst_object_unref(up);
  }
  if (down) {
    out->down_copied = tmtest::copied_bytes(down);
    g_object_get(down, "foreign-copies", &out->foreign_copies, nullptr);
    gst_object_unref(down);
  }
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS) << description;
  gst_object_unref(sink);
  tmtest::release_pipeline(pipeline);
}

class DecoderPipelines : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override {
    const Case &c = GetParam();
    for (const char *element : {"videotestsrc", "appsink", c.decoder.encoder, c.decoder.name}) {
      if (!element_available(element))
        GTEST_SKIP() << element << " is not installed (" << c.decoder.plugin << "): " << c.decoder.name
                     << " is not tested here";
    }
    if (std::string(c.storage) == "pbo") {
#if TENSORMEM_TEST_HAVE_GL
      std::string why;
      GstTensorMemGlWorker *worker = tmtest::shared_worker(&why);
      if (!worker)
        GTEST_SKIP() << "no headless GL here: " << why;
      context = gst_context_new_tensor_mem_gl_worker(worker, TRUE);
#else
      GTEST_SKIP() << "gst-tensormem was built without OpenGL";
#endif
    }
    if (std::string(c.decoder.encoder) == "openh264enc") {
      std::string why;
      const std::string &file = h264_file(&why);
      if (file.empty())
        GTEST_SKIP() << "no H.264 stream to decode: " << why;
      source = "filesrc location=" + file + " ! h264parse ! ";
    } else {
      source = "videotestsrc num-buffers=" + std::to_string(kFrames) + " pattern=ball ! " + kRawCaps + " ! " +
               c.decoder.encoder + " ! ";
    }
    decoder = c.decoder.name;
    if (decoder == "avdec_h264")
      decoder += " max-threads=2";
  }
  void TearDown() override {
    if (context)
      gst_context_unref(context);
  }

  std::string source;
  std::string decoder;
  GstContext *context = nullptr;
};

TEST_P(DecoderPipelines, frames_match_the_plain_decode_with_no_copy_and_no_allocation_per_frame) {
  const Case &c = GetParam();
  const std::string sink = " ! appsink name=sink sync=false max-buffers=2";
  DecodeRun reference;
  StorageCount unused;
  decode(source + decoder + " ! identity ! queue" + sink, &reference, &unused, nullptr);
  ASSERT_TRUE(reference.eos) << reference.error;
  ASSERT_EQ(reference.checksums.size(), static_cast<size_t>(kFrames));

  guint64 copies_before = 0, bytes_before = 0;
  gst_tensor_mem_get_copy_stats(GST_TENSOR_MEM_STORAGE_AUTO, &copies_before, &bytes_before);
  DecodeRun run;
  StorageCount storages;
  /* The queue holds tensor memory long after libav let go of it: a storage
   * the pool handed out again too early would show as a frame overwritten
   * by a later one. */
  const std::string middle = std::string(" ! tensorupload name=up storage=") + c.storage +
                             " require-zero-copy=true ! queue max-size-buffers=8 max-size-bytes=0 max-size-time=0"
                             " ! tensordownload name=down";
  decode(source + decoder + middle + sink, &run, &storages, context);
  guint64 copies_after = 0, bytes_after = 0;
  gst_tensor_mem_get_copy_stats(GST_TENSOR_MEM_STORAGE_AUTO, &copies_after, &bytes_after);

  ASSERT_TRUE(run.eos) << run.error;
  EXPECT_EQ(run.up_copied, 0u) << "tensorupload copied although the decoder wrote into its pool";
  EXPECT_EQ(copies_after - copies_before, 0u) << (bytes_after - bytes_before) << " bytes of tensor memory copied";
  EXPECT_EQ(run.foreign_copies, 0u) << "tensordownload's foreign-copies";
  EXPECT_EQ(storages.foreign_memories, 0) << "buffers left tensorupload in memory that is not tensor memory";
  EXPECT_GT(storages.storages.size(), 0u);
  EXPECT_LE(storages.storages.size(), kInFlightBound)
      << "distinct storages behind " << kFrames << " frames: an allocation per frame";
  std::printf("%s storage=%s: %zu storages for %d frames, %" G_GUINT64_FORMAT " copies\n", c.decoder.name, c.storage,
              storages.storages.size(), kFrames, copies_after - copies_before);
  ASSERT_EQ(run.checksums.size(), reference.checksums.size());
  for (size_t i = 0; i < run.checksums.size(); ++i)
    EXPECT_EQ(run.checksums[i], reference.checksums[i]) << "frame " << i << " differs from the plain decode";
}

/* The mechanism itself, without a decoder: what gst-libav does to a pool
 * buffer (a GstVideoFrame mapped READWRITE, holding a reference, while the
 * buffer goes downstream) and what GstVideoDecoder does next
 * (gst_buffer_make_writable). */
class WriteMappedPoolBuffer : public ::testing::TestWithParam<GstTensorMemStorage> {};

TEST_P(WriteMappedPoolBuffer, the_copy_the_core_asks_for_is_a_share_that_holds_the_pool_buffer) {
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, 64, 48));
  GstBufferPool *pool = gst_tensor_mem_buffer_pool_new_for_storage(GetParam());
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstCaps *caps = gst_video_info_to_caps(&info);
  gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), 1, 2);
  gst_caps_unref(caps);
  ASSERT_TRUE(gst_buffer_pool_set_config(pool, config));
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));

  GstBuffer *buffer = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  GstMemory *original = gst_buffer_peek_memory(buffer, 0);
  GstVideoFrame frame;
  ASSERT_TRUE(gst_video_frame_map(&frame, &info, buffer, GST_MAP_READWRITE));
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p)
    std::memset(GST_VIDEO_FRAME_PLANE_DATA(&frame, p), 0x40 + p, GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p));

  guint64 copies_before = 0, copies_after = 0;
  gst_tensor_mem_get_copy_stats(GST_TENSOR_MEM_STORAGE_AUTO, &copies_before, nullptr);
  GstBuffer *out = gst_buffer_make_writable(gst_buffer_ref(buffer));
  gst_tensor_mem_get_copy_stats(GST_TENSOR_MEM_STORAGE_AUTO, &copies_after, nullptr);
  ASSERT_NE(out, buffer) << "the frame's reference makes the buffer shared";
  EXPECT_EQ(copies_after - copies_before, 0u);
  GstMemory *shared = gst_buffer_peek_memory(out, 0);
  ASSERT_NE(shared, original);
  const tensormem::Tensor *a = gst_tensor_mem_memory_get_tensor(original);
  const tensormem::Tensor *b = gst_tensor_mem_memory_get_tensor(shared);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->storage(), b->storage()) << "a copy, not a share";
  EXPECT_TRUE(GST_MEMORY_IS_READONLY(shared)) << "a share is read-only";

  // The share reads the frame while the writer still holds its map.
  GstMapInfo map;
  ASSERT_TRUE(gst_memory_map(shared, &map, GST_MAP_READ));
  EXPECT_EQ(map.data, GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
  EXPECT_EQ(map.data[0], 0x40);
  gst_memory_unmap(shared, &map);

  // The "decoder" lets go; the pool buffer stays out while the share lives.
  gst_video_frame_unmap(&frame);
  gst_buffer_unref(buffer);
  GstBufferPoolAcquireParams dontwait = {};
  dontwait.flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;
  GstBuffer *other = nullptr, *none = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &other, &dontwait), GST_FLOW_OK);
  EXPECT_NE(gst_buffer_peek_memory(other, 0), original) << "the pool handed out a storage a share still reads";
  EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool, &none, &dontwait), GST_FLOW_EOS);
  gst_buffer_unref(other);

  /* A writer of the share gets GStreamer's copy-on-write: a real copy,
   * counted, into the pool's free buffer; the share goes with it. */
  ASSERT_TRUE(gst_buffer_map(out, &map, GST_MAP_WRITE));
  EXPECT_EQ(map.data[0], 0x40);
  gst_buffer_unmap(out, &map);
  gst_tensor_mem_get_copy_stats(GST_TENSOR_MEM_STORAGE_AUTO, &copies_after, nullptr);
  EXPECT_EQ(copies_after - copies_before, 1u);
  const auto copy_storage = gst_tensor_mem_memory_get_tensor(gst_buffer_peek_memory(out, 0))->storage();
  GstBuffer *again = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &again, &dontwait), GST_FLOW_OK)
      << "the pool buffer came back when the share went";
  EXPECT_EQ(gst_buffer_peek_memory(again, 0), original) << "the same storage, reused";
  EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool, &none, &dontwait), GST_FLOW_EOS)
      << "the copy holds the pool's other buffer";
  gst_buffer_unref(out);
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &other, &dontwait), GST_FLOW_OK);
  EXPECT_EQ(gst_tensor_mem_memory_get_tensor(gst_buffer_peek_memory(other, 0))->storage(), copy_storage)
      << "the copy went into pool memory, not a fresh allocation";
  gst_buffer_unref(other);
  gst_buffer_unref(again);
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
  gst_object_unref(pool);
}

INSTANTIATE_TEST_SUITE_P(Storages, WriteMappedPoolBuffer,
                         ::testing::Values(GST_TENSOR_MEM_STORAGE_SYSTEM, GST_TENSOR_MEM_STORAGE_DMABUF),
                         [](const ::testing::TestParamInfo<GstTensorMemStorage> &info) {
                           return std::string(info.param == GST_TENSOR_MEM_STORAGE_SYSTEM ? "system" : "dmabuf");
                         });

const Decoder kDecoders[] = {
    {"avdec_h264", "openh264enc", "gstreamer1.0-libav"},
    {"openh264dec", "openh264enc", "gstreamer1.0-plugins-bad"},
    {"jpegdec", "jpegenc", "gstreamer1.0-plugins-good"},
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const Decoder &d : kDecoders)
    for (const char *storage : {"system", "dmabuf", "pbo"})
      cases.push_back({d, storage});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Decoders, DecoderPipelines, ::testing::ValuesIn(all_cases()), case_name);

} // namespace

// SPDX-License-Identifier: Apache-2.0
/* Our elements reading an incoming GstTensorMeta (GStreamer 1.26's analytics
 * library), from tensorconvert output=meta and from a foreign producer (an
 * appsrc attaching a meta built with GStreamer's analytics API alone):
 * tensorinspect's per-tensor reports against references computed here,
 * tensordownload's checks, fence waits and copies, bad metas as element
 * errors, and each element behind a tee keeping the meta. Built where the
 * library exists (GST_TENSOR_MEM_HAVE_TENSOR_META: the Debian 13 leg of
 * scripts/test.sh). The CUDA side is test_cuda_tensor_meta.cpp. */
#include "meta_read_util.hpp"

#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>
#include <tensormem/timeline.hpp>

#include <cstring>
#include <string>
#include <vector>

using tmtest::MetaRun;

namespace {

const std::string kGray = "appsrc name=src format=time caps=video/x-raw,format=GRAY8,width=8,height=4,framerate=1/1 ! ";

/* An 8x4 GRAY8 frame (system memory) with `meta_tensors` in its GstTensorMeta. */
GstBuffer *gray_frame(guint64 index, std::vector<GstTensor *> meta_tensors) {
  GstBuffer *frame = gst_buffer_new_allocate(nullptr, 32, nullptr);
  gst_buffer_memset(frame, 0, static_cast<guint8>(index * 7), 32);
  GST_BUFFER_PTS(frame) = index * GST_SECOND;
  GST_BUFFER_DURATION(frame) = GST_SECOND;
  auto **tensors = g_new(GstTensor *, meta_tensors.size());
  std::copy(meta_tensors.begin(), meta_tensors.end(), tensors);
  gst_tensor_meta_set(gst_buffer_add_tensor_meta(frame), static_cast<guint>(meta_tensors.size()), tensors);
  return frame;
}

/* A tensor over `bytes`, split into one memory per `split` entry (the
 * lengths of the memories in turn; the rest in a last one). */
GstTensor *tensor_over(const char *id, GstTensorDataType type, std::vector<gsize> dims,
                       const std::vector<guint8> &bytes, std::vector<gsize> split = {}) {
  GstBuffer *data = gst_buffer_new();
  gsize at = 0;
  split.push_back(bytes.size());
  for (gsize length : split) {
    length = std::min(length, bytes.size() - at);
    if (length == 0)
      continue;
    gpointer copy = g_memdup2(bytes.data() + at, length);
    gst_buffer_append_memory(data,
                             gst_memory_new_wrapped(GST_MEMORY_FLAG_READONLY, copy, length, 0, length, copy, g_free));
    at += length;
  }
  GstTensor *tensor = gst_tensor_alloc(dims.size());
  tensor->id = g_quark_from_string(id);
  tensor->layout = GST_TENSOR_LAYOUT_CONTIGUOUS;
  tensor->data_type = type;
  tensor->data = data;
  tensor->dims_order = GST_TENSOR_DIM_ORDER_ROW_MAJOR;
  tensor->num_dims = dims.size();
  std::copy(dims.begin(), dims.end(), tensor->dims);
  return tensor;
}

std::vector<guint8> pattern(gsize n, guint seed) {
  std::vector<guint8> bytes(n);
  for (gsize i = 0; i < n; ++i)
    bytes[i] = static_cast<guint8>((i * 37 + seed * 11 + (i >> 3)) & 0xff);
  return bytes;
}

} // namespace

/* tensorconvert output=meta: the frame's report as before, and one
 * tensorinspect-tensor report per frame describing the tensor beside it,
 * its checksum that of the meta's data buffer read here. */
TEST(TensorMetaRead, InspectReportsTheTensorBesideAFrame) {
  MetaRun run;
  tmtest::run_meta_pipeline("videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=RGBA,width=64,height=48 ! "
                            "tensorconvert width=16 height=8 output=meta ! tensorinspect name=inspect ! "
                            "appsink name=sink",
                            &run);
  ASSERT_TRUE(run.eos) << run.error;
  ASSERT_EQ(run.samples.size(), 3u);
  ASSERT_EQ(run.tensors.size(), 3u);
  EXPECT_EQ(run.frames, 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const tmtest::TensorReport &r = run.tensors[i];
    EXPECT_EQ(r.frame, i);
    EXPECT_EQ(r.index, 0u);
    EXPECT_EQ(r.id, "input");
    EXPECT_EQ(r.type, "float32");
    EXPECT_EQ(r.dims, "1x3x8x16");
    EXPECT_EQ(r.dims_order, "row-major");
    EXPECT_EQ(r.bytes, 16u * 8 * 3 * 4);
    EXPECT_EQ(r.path, "host");
    GstTensorMeta *meta = gst_buffer_get_tensor_meta(gst_sample_get_buffer(run.samples[i]));
    ASSERT_NE(meta, nullptr);
    const std::vector<guint8> bytes = tmtest::bytes_of(meta->tensors[0]->data);
    ASSERT_EQ(bytes.size(), r.bytes);
    EXPECT_EQ(r.checksum, tmtest::xxh3_hex(bytes));
    tmtest::expect_byte_stats(r, bytes);
  }
  EXPECT_EQ(run.summary_tensors, 3u);
}

/* A producer that knows only GStreamer's analytics API: three tensors of
 * other types and shapes, one spread over three memories, one of 4-bit
 * elements (an odd count: the last byte half used), one with a dynamic (0)
 * dimension covering its whole data buffer. Each report equals what is
 * computed here from the bytes handed over. */
TEST(TensorMetaRead, InspectReadsAForeignProducersTensors) {
  struct Want {
    const char *id;
    GstTensorDataType type;
    std::vector<gsize> dims;
    gsize bytes;
    std::vector<gsize> split;
    const char *type_name;
    const char *dims_text;
  };
  const Want wants[] = {
      {"scores", GST_TENSOR_DATA_TYPE_INT16, {2, 3, 5}, 60, {7, 20}, "int16", "2x3x5"},
      {"mask", GST_TENSOR_DATA_TYPE_UINT4, {7}, 4, {}, "uint4", "7"},
      {"boxes", GST_TENSOR_DATA_TYPE_FLOAT64, {0, 2}, 48, {}, "float64", "0x2"},
  };
  std::vector<std::vector<std::vector<guint8>>> sent; // frame, tensor
  MetaRun run;
  tmtest::run_meta_pipeline(kGray + "tensorinspect ! appsink name=sink", &run, [&](GstElement *src) {
    for (guint64 f = 0; f < 2; ++f) {
      std::vector<GstTensor *> tensors;
      sent.emplace_back();
      for (std::size_t t = 0; t < std::size(wants); ++t) {
        sent.back().push_back(pattern(wants[t].bytes, static_cast<guint>(f * 3 + t)));
        tensors.push_back(tensor_over(wants[t].id, wants[t].type, wants[t].dims, sent.back().back(), wants[t].split));
      }
      tmtest::push(src, gray_frame(f, tensors));
    }
  });
  ASSERT_TRUE(run.eos) << run.error;
  ASSERT_EQ(run.tensors.size(), 2 * std::size(wants));
  for (std::size_t i = 0; i < run.tensors.size(); ++i) {
    const tmtest::TensorReport &r = run.tensors[i];
    const Want &want = wants[i % std::size(wants)];
    SCOPED_TRACE(want.id);
    EXPECT_EQ(r.frame, i / std::size(wants));
    EXPECT_EQ(r.index, i % std::size(wants));
    EXPECT_EQ(r.id, want.id);
    EXPECT_EQ(r.type, want.type_name);
    EXPECT_EQ(r.dims, want.dims_text);
    EXPECT_EQ(r.bytes, want.bytes);
    const std::vector<guint8> &bytes = sent[r.frame][r.index];
    EXPECT_EQ(r.checksum, tmtest::xxh3_hex(bytes));
    tmtest::expect_byte_stats(r, bytes);
  }
}

/* A data buffer longer than the tensor: the report covers the tensor's
 * bytes only, from the start. */
TEST(TensorMetaRead, InspectCoversTheTensorNotTheWholeBuffer) {
  const std::vector<guint8> bytes = pattern(40, 5);
  MetaRun run;
  tmtest::run_meta_pipeline(kGray + "tensorinspect ! appsink name=sink", &run, [&](GstElement *src) {
    tmtest::push(src, gray_frame(0, {tensor_over("head", GST_TENSOR_DATA_TYPE_UINT8, {2, 8}, bytes)}));
  });
  ASSERT_TRUE(run.eos) << run.error;
  ASSERT_EQ(run.tensors.size(), 1u);
  EXPECT_EQ(run.tensors[0].bytes, 16u);
  EXPECT_EQ(run.tensors[0].checksum, tmtest::xxh3_hex(std::vector<guint8>(bytes.begin(), bytes.begin() + 16)));
}

/* A meta that promises more than it holds: each element refuses it with one
 * element error naming the tensor and what is wrong, and nothing past the
 * data is read (the ASan and valgrind runs would see it). */
TEST(TensorMetaRead, BadMetasAreElementErrors) {
  struct Bad {
    const char *what;
    std::function<GstTensor *()> make;
    const char *expect;
  };
  const Bad bads[] = {
      {"short data",
       [] { return tensor_over("bad", GST_TENSOR_DATA_TYPE_FLOAT32, {2, 3}, pattern(20, 1)); },
       "needs 24 bytes and its data buffer holds 20"},
      {"no data",
       [] {
         GstTensor *t = tensor_over("bad", GST_TENSOR_DATA_TYPE_UINT8, {4}, pattern(4, 1));
         gst_clear_buffer(&t->data);
         return t;
       },
       "no data buffer"},
      // Stored as the integer a foreign producer leaves there: even converting
      // 99 to the enum is undefined behaviour, which a UBSan run reports.
      {"unknown type",
       [] {
         GstTensor *t = tensor_over("bad", GST_TENSOR_DATA_TYPE_UINT8, {4}, pattern(4, 1));
         const gint type = 99;
         std::memcpy(&t->data_type, &type, sizeof type);
         return t;
       },
       "data type 99"},
      {"unknown dims order",
       [] {
         GstTensor *t = tensor_over("bad", GST_TENSOR_DATA_TYPE_UINT8, {4}, pattern(4, 1));
         const gint order = 7;
         std::memcpy(&t->dims_order, &order, sizeof order);
         return t;
       },
       "dims order 7"},
      {"overflowing dims",
       [] { return tensor_over("bad", GST_TENSOR_DATA_TYPE_INT64, {G_MAXSIZE / 2, 4}, pattern(8, 1)); },
       "overflow"},
  };
  const char *elements[] = {"tensorinspect", "tensordownload", "tensorcudaimport"};
  for (const char *element : elements) {
    for (const Bad &bad : bads) {
      SCOPED_TRACE(std::string(element) + ": " + bad.what);
      MetaRun run;
      tmtest::run_meta_pipeline(kGray + element + " ! appsink name=sink", &run, [&](GstElement *src) {
        GstTensor *good = tensor_over("good", GST_TENSOR_DATA_TYPE_UINT8, {4}, pattern(4, 2));
        tmtest::push(src, gray_frame(0, {good, bad.make()}));
      });
      EXPECT_FALSE(run.eos);
      EXPECT_EQ(run.samples.size(), 0u);
      EXPECT_NE(run.error.find("Tensor 1 ('bad')"), std::string::npos) << run.error;
      EXPECT_NE(run.error.find(bad.expect), std::string::npos) << run.error;
    }
  }
}

/* The fences of a meta tensor's data buffer are waited for like the
 * frame's: one that never signals ends the bounded wait in an element error
 * naming it, from tensordownload and tensorinspect alike. */
TEST(TensorMetaRead, TheTensorsFencesAreWaitedFor) {
  for (const char *element : {"tensordownload", "tensorinspect"}) {
    SCOPED_TRACE(element);
    auto timeline = tensormem::SoftwareTimeline::create("meta-writer");
    MetaRun run;
    tmtest::run_meta_pipeline(kGray + element + " ! appsink name=sink", &run, [&](GstElement *src) {
      GstTensor *tensor = tensor_over("late", GST_TENSOR_DATA_TYPE_UINT8, {4}, pattern(4, 3));
      GError *error = nullptr;
      ASSERT_NE(gst_buffer_add_tensor_mem_fence_meta(tensor->data, timeline, timeline->issue(), -1, &error), nullptr);
      tmtest::push(src, gray_frame(0, {tensor}));
    });
    EXPECT_FALSE(run.eos);
    EXPECT_EQ(run.samples.size(), 0u);
    EXPECT_NE(run.error.find("software:1"), std::string::npos) << run.error;
  }
}

/* tensordownload passes the tensors on where they are (every memory of ours
 * maps for the CPU): the same data buffer, nothing copied. */
TEST(TensorMetaRead, DownloadLeavesMappableTensorsInPlace) {
  MetaRun run;
  GstBuffer *sent_data = nullptr;
  tmtest::run_meta_pipeline(kGray + "tensordownload name=down require-zero-copy=true ! appsink name=sink", &run,
                            [&](GstElement *src) {
                              GstTensor *t = tensor_over("t", GST_TENSOR_DATA_TYPE_UINT8, {4}, pattern(4, 4));
                              sent_data = t->data;
                              tmtest::push(src, gray_frame(0, {t}));
                            });
  ASSERT_TRUE(run.eos) << run.error;
  ASSERT_EQ(run.samples.size(), 1u);
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(gst_sample_get_buffer(run.samples[0]));
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->tensors[0]->data, sent_data);
  EXPECT_EQ(run.download_copied, 0u);
}

/* Data in memory the CPU cannot map cannot reach a system-memory consumer:
 * tensordownload says so, naming the tensor. */
TEST(TensorMetaRead, DownloadRefusesUnmappableTensors) {
  MetaRun run;
  tmtest::run_meta_pipeline(kGray + "tensordownload ! appsink name=sink", &run, [&](GstElement *src) {
    GstTensor *t = tensor_over("device", GST_TENSOR_DATA_TYPE_UINT8, {4}, pattern(4, 4));
    GST_MINI_OBJECT_FLAG_SET(gst_buffer_peek_memory(t->data, 0), GST_MEMORY_FLAG_NOT_MAPPABLE);
    tmtest::push(src, gray_frame(0, {t}));
  });
  EXPECT_FALSE(run.eos);
  EXPECT_NE(run.error.find("Tensor 0 ('device')"), std::string::npos) << run.error;
  EXPECT_NE(run.error.find("cannot map"), std::string::npos) << run.error;
}

/* A padded frame that tensordownload copies into the default layout keeps
 * its GstTensorMeta (GStreamer's own copy would drop it): the copy describes
 * the same tensor, over the same data buffer. */
TEST(TensorMetaRead, DownloadCopyKeepsTheTensorMeta) {
  const std::string source = "videotestsrc num-buffers=2 pattern=ball ! video/x-raw,format=RGBA,width=30,height=20 ! "
                             "tensorupload storage=system ! tensorconvert width=8 height=4 output=meta ! ";
  MetaRun plain, downloaded;
  tmtest::run_meta_pipeline(source + "appsink name=sink", &plain);
  tmtest::run_meta_pipeline(source + "tensordownload name=down ! appsink name=sink", &downloaded);
  ASSERT_TRUE(plain.eos) << plain.error;
  ASSERT_TRUE(downloaded.eos) << downloaded.error;
  ASSERT_EQ(downloaded.samples.size(), 2u);
  ASSERT_EQ(plain.samples.size(), 2u);
  EXPECT_GT(downloaded.download_copied, 0u) << "the frame was meant to take the copy path";
  for (std::size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    GstTensorMeta *meta = gst_buffer_get_tensor_meta(gst_sample_get_buffer(downloaded.samples[i]));
    GstTensorMeta *want = gst_buffer_get_tensor_meta(gst_sample_get_buffer(plain.samples[i]));
    ASSERT_NE(meta, nullptr) << "the copy lost the GstTensorMeta";
    ASSERT_NE(want, nullptr);
    ASSERT_EQ(meta->num_tensors, 1u);
    EXPECT_EQ(meta->tensors[0]->data_type, GST_TENSOR_DATA_TYPE_FLOAT32);
    EXPECT_EQ(tmtest::bytes_of(meta->tensors[0]->data), tmtest::bytes_of(want->tensors[0]->data));
  }
}

/* A frame that tensorupload copies into its pool (foreign system memory)
 * keeps its GstTensorMeta, as tensordownload's copy does: GStreamer's own
 * metadata copy would drop it. Its tensor is the same data buffer. */
TEST(TensorMetaRead, UploadCopyKeepsTheTensorMeta) {
  MetaRun run;
  GstBuffer *sent_data = nullptr;
  tmtest::run_meta_pipeline(kGray + "tensorupload name=up storage=system ! appsink name=sink", &run,
                            [&](GstElement *src) {
                              GstTensor *t = tensor_over("t", GST_TENSOR_DATA_TYPE_UINT8, {4}, pattern(4, 5));
                              sent_data = t->data;
                              tmtest::push(src, gray_frame(0, {t}));
                            });
  ASSERT_TRUE(run.eos) << run.error;
  ASSERT_EQ(run.samples.size(), 1u);
  EXPECT_EQ(run.upload_copied, 32u) << "the frame was meant to take the copy path";
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(gst_sample_get_buffer(run.samples[0]));
  ASSERT_NE(meta, nullptr) << "the copy lost the GstTensorMeta";
  ASSERT_EQ(meta->num_tensors, 1u);
  EXPECT_EQ(meta->tensors[0]->data, sent_data);
  EXPECT_EQ(tmtest::bytes_of(meta->tensors[0]->data), pattern(4, 5));
}

namespace {

/* The one tensor of `buffer`'s GstTensorMeta, with `id` and `dims`; NULL
 * (after a failure) when it has another. */
const GstTensor *expect_one_tensor(GstBuffer *buffer, const char *id, const std::vector<gsize> &dims) {
  const GstTensorMeta *meta = gst_buffer_get_tensor_meta(buffer);
  EXPECT_NE(meta, nullptr) << "the frame has no GstTensorMeta";
  if (!meta)
    return nullptr;
  EXPECT_EQ(meta->num_tensors, 1u);
  if (meta->num_tensors != 1 || !meta->tensors[0])
    return nullptr;
  const GstTensor *tensor = meta->tensors[0];
  EXPECT_STREQ(g_quark_to_string(tensor->id), id);
  EXPECT_EQ(std::vector<gsize>(tensor->dims, tensor->dims + tensor->num_dims), dims);
  EXPECT_NE(tensor->data, nullptr);
  return tensor->data ? tensor : nullptr;
}

} // namespace

/* tensorsync, tensorinspect, tensordownload (its copy into the default
 * layout) and a second tensorconvert output=meta behind a tee: every frame
 * leaves with its tensors (the second tensorconvert's own, which replace
 * them), and the frames of the other branch keep theirs. */
TEST(TensorMetaRead, ElementsBehindATeeKeepTheTensorMeta) {
  const std::string source = "videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=RGBA,width=30,height=20 ! "
                             "tensorupload storage=system ! tensorconvert width=8 height=4 output=meta ! ";
  struct Case {
    const char *element;
    std::vector<gsize> dims; // of the tensor after the element
  };
  const Case cases[] = {
      {"tensorsync", {1, 3, 4, 8}},
      {"tensorcudaimport", {1, 3, 4, 8}}, // no CUDA here: a warning, the frame passes on
      {"tensorinspect", {1, 3, 4, 8}},
      {"tensordownload name=down", {1, 3, 4, 8}},
      {"tensorconvert width=4 height=2 output=meta", {1, 3, 2, 4}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.element);
    MetaRun run;
    tmtest::run_meta_pipeline(tmtest::tee_before(source, c.element), &run);
    ASSERT_TRUE(run.eos) << run.error;
    ASSERT_EQ(run.samples.size(), 3u);
    ASSERT_EQ(run.others.size(), 3u);
    if (std::string(c.element).find("down") != std::string::npos) {
      EXPECT_GT(run.download_copied, 0u) << "the frame was meant to take the copy path";
    }
    for (std::size_t i = 0; i < run.samples.size(); ++i) {
      SCOPED_TRACE(i);
      const GstTensor *after = expect_one_tensor(gst_sample_get_buffer(run.samples[i]), "input", c.dims);
      const GstTensor *other = expect_one_tensor(gst_sample_get_buffer(run.others[i]), "input", {1, 3, 4, 8});
      ASSERT_NE(after, nullptr);
      ASSERT_NE(other, nullptr);
      if (c.dims == std::vector<gsize>{1, 3, 4, 8}) {
        EXPECT_EQ(tmtest::bytes_of(after->data), tmtest::bytes_of(other->data));
      }
    }
  }
}

/* tensorbatch behind a tee (and a queue: a tee's request pad does not link
 * to tensorbatch's at parse time): its slot gets a copy of the shared
 * tensor, and the batch its own GstTensorMeta over the batch; the other
 * branch's tensor still describes its own memory. */
TEST(TensorMetaRead, TensorBatchBehindATeeDescribesTheBatch) {
  const std::string source = "videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=RGBA,width=64,height=48 ! "
                             "tensorconvert width=16 height=8 ! ";
  MetaRun run;
  tmtest::run_meta_pipeline(tmtest::tee_before(source, "queue ! tensorbatch"), &run);
  ASSERT_TRUE(run.eos) << run.error;
  ASSERT_EQ(run.samples.size(), 3u);
  ASSERT_EQ(run.others.size(), 3u);
  for (std::size_t i = 0; i < run.samples.size(); ++i) {
    SCOPED_TRACE(i);
    GstBuffer *batch = gst_sample_get_buffer(run.samples[i]);
    GstBuffer *frame = gst_sample_get_buffer(run.others[i]);
    const GstTensor *batched = expect_one_tensor(batch, "batch", {1, 3, 8, 16});
    const GstTensor *own = expect_one_tensor(frame, "input", {1, 3, 8, 16});
    ASSERT_NE(batched, nullptr);
    ASSERT_NE(own, nullptr);
    EXPECT_EQ(tmtest::bytes_of(batched->data), tmtest::bytes_of(frame));
    ASSERT_EQ(gst_buffer_n_memory(own->data), gst_buffer_n_memory(frame));
    for (guint m = 0; m < gst_buffer_n_memory(frame); ++m)
      EXPECT_EQ(gst_buffer_peek_memory(own->data, m), gst_buffer_peek_memory(frame, m)) << "memory " << m;
  }
}

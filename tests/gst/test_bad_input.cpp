// SPDX-License-Identifier: Apache-2.0
// Bad input for every element that reads a frame: tensorupload (system,
// DMA-BUF, D3D11 on the software reference device, and PBO storage where GL
// exists), tensordownload, tensorinspect,
// tensorcudaimport and tensorconvert, each in a real pipeline fed by appsrc. Every case
// must end in an element error from that element whose message names the
// field and the numbers, with no crash and no out-of-bounds read (the ASan
// and valgrind runs execute this program too), and the pipeline must go back
// to NULL and be finalized with nothing left open.
#include "pipeline_util.hpp"
#if defined(TM_TEST_HAVE_GL)
#include "gl_test_util.hpp"
#endif

#include <gst/allocators/gstdmabuf.h>
#include <gst/app/gstappsrc.h>
#include <gst/tensormem/tensormem.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace {

// storage=d3d11 off Windows: the software reference device, asked for before
// main (so before any D3D11 use).
const bool g_software_d3d11 = g_setenv("TENSORMEM_D3D11_DEVICE", "software", TRUE);

/* RGB 333x17: rows of 999 bytes, a default stride of 1000 and a 17000-byte
 * frame, five pages: a CPU read of a memory claiming the frame over a
 * one-page file reaches pages past its end (SIGBUS). */
constexpr const char *kCaps = "video/x-raw,format=RGB,width=333,height=17,framerate=30/1";
constexpr gsize kFrameSize = 17000;
constexpr gint kStride = 1000;

struct ElementCase {
  const char *name;
  const char *launch; // the element under test, named "el"
  bool needs_gl;
  bool takes_any_size;   // its sink template leaves width/height open (video/x-raw(ANY))
  bool takes_any_format; // ... and the format
};

const ElementCase kElements[] = {
    {"UploadSystem", "tensorupload name=el storage=system", false, false, false},
    {"UploadDmaBuf", "tensorupload name=el storage=dmabuf", false, false, false},
    {"UploadD3d11", "tensorupload name=el storage=d3d11", false, false, false},
#if defined(TM_TEST_HAVE_GL)
    {"UploadPbo", "tensorupload name=el storage=pbo", true, false, false},
#endif
    {"Download", "tensordownload name=el", false, false, false},
    {"Inspect", "tensorinspect name=el", false, true, true},
    {"CudaImport", "tensorcudaimport name=el", false, true, true},
    // The formats it converts are in its template; sizes are left open.
    {"Convert", "tensorconvert name=el width=64 height=64", false, true, false},
#if defined(TM_TEST_HAVE_GL)
    // The GL path: system-memory frames, validated before the staging copy.
    {"ConvertGl", "tensorconvert name=el width=64 height=64 storage=pbo", true, true, false},
#endif
};

void PrintTo(const ElementCase &c, std::ostream *os) { *os << c.launch; }

/* The program's GL worker (tests/gst/gl_test_util.hpp), handed to each PBO
 * pipeline through its context: an llvmpipe context per pipeline is slow
 * under valgrind. */
GstTensorMemGlWorker *gl_worker(std::string *why) {
#if defined(TM_TEST_HAVE_GL)
  return tmtest::shared_worker(why);
#else
  *why = "built without OpenGL";
  return nullptr;
#endif
}

/* The first error on the bus of a run: which element posted it and what it
 * says ("message | debug"). */
struct Outcome {
  std::string from;
  std::string text;
  GQuark domain = 0;
  gint code = 0;
  bool eos = false;
};

/* Runs appsrc (with `caps`) ! element ! fakesink, pushes `buffer` (taken)
 * and EOS, waits for an error or EOS, then sets the pipeline back to NULL
 * and checks it gets there and is finalized. */
void run_with(const ElementCase &element, const char *caps, GstBuffer *buffer, Outcome *out) {
  GError *error = nullptr;
  const std::string description = std::string("appsrc name=src ! ") + element.launch + " ! fakesink sync=false";
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  if (error) {
    gst_buffer_unref(buffer);
    g_clear_object(&pipeline);
    FAIL() << description << ": " << error->message;
  }
  if (element.needs_gl) {
    std::string why;
    GstContext *context = gst_context_new_tensor_mem_gl_worker(gl_worker(&why), TRUE);
    gst_element_set_context(pipeline, context);
    gst_context_unref(context);
  }
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstCaps *src_caps = gst_caps_from_string(caps);
  g_object_set(src, "caps", src_caps, "format", GST_FORMAT_TIME, nullptr);
  gst_caps_unref(src_caps);

  EXPECT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE) << description;
  gst_app_src_push_buffer(GST_APP_SRC(src), buffer);
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, tmtest::kTimeout,
                                               static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  EXPECT_NE(msg, nullptr) << description << ": neither EOS nor an error within the timeout";
  if (msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *err = nullptr;
    gchar *debug = nullptr;
    gst_message_parse_error(msg, &err, &debug);
    out->from = GST_OBJECT_NAME(GST_MESSAGE_SRC(msg));
    out->text = std::string(err->message) + " | " + (debug ? debug : "");
    out->domain = err->domain;
    out->code = err->code;
    g_error_free(err);
    g_free(debug);
  } else if (msg) {
    out->eos = true;
  }
  if (msg)
    gst_message_unref(msg);

  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS) << description;
  GstState state = GST_STATE_VOID_PENDING;
  EXPECT_EQ(gst_element_get_state(pipeline, &state, nullptr, 0), GST_STATE_CHANGE_SUCCESS);
  EXPECT_EQ(state, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(src);
  tmtest::release_pipeline(pipeline);
}

/* The error came from the element under test, in `domain`/`code`, and its
 * text holds every one of `parts`. */
void expect_error_from_element(const Outcome &outcome, GQuark domain, gint code,
                               const std::vector<const char *> &parts) {
  EXPECT_EQ(outcome.from, "el") << outcome.text;
  EXPECT_EQ(outcome.domain, domain) << outcome.text;
  EXPECT_EQ(outcome.code, code) << outcome.text;
  for (const char *part : parts)
    EXPECT_NE(outcome.text.find(part), std::string::npos) << "no \"" << part << "\" in: " << outcome.text;
}

/* A system-memory buffer of `size` bytes (all defined) with a GstVideoMeta
 * for the caps' frame whose plane 0 has `offset` and `stride`. */
GstBuffer *with_meta(gsize size, gsize offset, gint stride, guint n_planes = 1) {
  GstBuffer *buffer = gst_buffer_new_allocate(nullptr, size, nullptr);
  gst_buffer_memset(buffer, 0, 0x5a, size);
  gsize offsets[GST_VIDEO_MAX_PLANES] = {offset, offset};
  gint strides[GST_VIDEO_MAX_PLANES] = {stride, stride};
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_RGB, 333, 17, n_planes, offsets,
                                 strides);
  return buffer;
}

GstBuffer *plain(gsize size) {
  GstBuffer *buffer = gst_buffer_new_allocate(nullptr, size, nullptr);
  gst_buffer_memset(buffer, 0, 0x5a, size);
  return buffer;
}

/* A frame-sized GstDmaBufAllocator memory over a memfd that holds one page:
 * someone else's DMA-BUF that claims more than its fd has. */
GstBuffer *dmabuf_longer_than_its_fd() {
  const int fd = memfd_create("short-dmabuf", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, 4096), 0);
  GstAllocator *allocator = gst_dmabuf_allocator_new();
  GstMemory *mem = gst_dmabuf_allocator_alloc(allocator, fd, kFrameSize); // owns fd
  gst_object_unref(allocator);
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, mem);
  return buffer;
}

/* A frame split over two memories at byte 8000 with a meta whose plane 0
 * runs from the first memory into the second (gst_video_frame_map maps only
 * the first). */
GstBuffer *plane_across_two_memories() {
  GstBuffer *buffer = plain(8000);
  GstBuffer *tail = plain(kFrameSize - 8000);
  buffer = gst_buffer_append(buffer, tail);
  gsize offsets[GST_VIDEO_MAX_PLANES] = {0};
  gint strides[GST_VIDEO_MAX_PLANES] = {kStride};
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_RGB, 333, 17, 1, offsets, strides);
  return buffer;
}

struct BufferCase {
  const char *name;
  GstBuffer *(*make)();
  std::vector<const char *> expect; // in the error's "message | debug"
};

const BufferCase kBufferCases[] = {
    {"NegativeStride", [] { return with_meta(kFrameSize, 0, -kStride); }, {"stride[0] = -1000 is negative"}},
    {"StrideSmallerThanARow",
     [] { return with_meta(kFrameSize, 0, 998); },
     {"stride[0] = 998 is smaller than the 999-byte row"}},
    {"HugeStride",
     [] { return with_meta(kFrameSize, 0, G_MAXINT); },
     {"stride[0] = 2147483647", "ends at byte 34359739351", "past the end of the 17000-byte buffer"}},
    {"PlaneOffsetPastTheEnd",
     [] { return with_meta(kFrameSize, 1 << 20, kStride); },
     {"offset[0] = 1048576", "past the end of the 17000-byte buffer"}},
    {"PlaneOffsetPlusSizeOverflows",
     [] { return with_meta(kFrameSize, G_MAXSIZE - 4095, kStride); },
     {"offset[0] = 18446744073709547520 plus the 16999 bytes of plane 0", "overflows a 64-bit size"}},
    {"PlaneCountDiffersFromTheCaps",
     [] { return with_meta(kFrameSize, 0, kStride, 2); },
     {"GstVideoMeta n_planes = 2", "RGB has 1 plane(s)"}},
    {"PlaneAcrossTwoMemories",
     plane_across_two_memories,
     {"plane 0", "ends at byte 16999", "past the end of memory 0 (bytes 0 to 8000"}},
    // The caps' own layout in one memory, two bytes short: checked plane by plane all the same.
    {"DefaultLayoutMetaOnAShortBuffer",
     [] { return with_meta(kFrameSize - 2, 0, kStride); },
     {"plane 0", "ends at byte 16999", "past the end of the 16998-byte buffer"}},
    {"BufferShorterThanTheCapsFrame",
     [] { return plain(kFrameSize - 1); },
     {"buffer size 16999 is smaller than the 17000-byte 333x17 RGB frame"}},
    {"ZeroSizeBuffer", [] { return gst_buffer_new(); }, {"buffer size is 0"}},
    {"DmaBufMemoryLongerThanItsFd", dmabuf_longer_than_its_fd, {"maxsize 17000", "exceeds the 4096-byte DMA-BUF"}},
};

void PrintTo(const BufferCase &c, std::ostream *os) { *os << c.name; }

/* A test of one element with one case; skipped, saying why, for the PBO
 * storage where no headless GL context can be made. */
template <class Case> class ElementTest : public ::testing::TestWithParam<std::tuple<ElementCase, Case>> {
protected:
  void SetUp() override {
    std::string why;
    if (element().needs_gl && !gl_worker(&why))
      GTEST_SKIP() << "no headless GL context: " << why;
  }
  const ElementCase &element() const { return std::get<0>(this->GetParam()); }
  const Case &bad() const { return std::get<1>(this->GetParam()); }
};

class BadBuffer : public ElementTest<BufferCase> {
protected:
  /* One good run first: GLib and GStreamer open some descriptors lazily
   * (the system clock's poll) and keep them, which the fd count must not
   * blame on a bad-input run. */
  static void SetUpTestSuite() {
    const ElementCase identity{"Identity", "identity name=el", false, false, false};
    Outcome outcome;
    run_with(identity, kCaps, plain(kFrameSize), &outcome);
    EXPECT_TRUE(outcome.eos) << outcome.text;
  }
};

TEST_P(BadBuffer, IsAnElementErrorNamingTheFieldAndThePipelineReturnsToNull) {
  const ElementCase &element = this->element();
  const BufferCase &bad = this->bad();
  const int fds_before = tmtest::fd_count();
  Outcome outcome;
  ASSERT_NO_FATAL_FAILURE(run_with(element, kCaps, bad.make(), &outcome));
  EXPECT_FALSE(outcome.eos) << "the bad buffer went through";
  expect_error_from_element(outcome, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT, bad.expect);
  if (!element.needs_gl) { // a GL driver may keep descriptors of its own
    EXPECT_EQ(tmtest::fd_count(), fds_before) << "a descriptor outlived the pipeline";
  }
}

/* Caps that do not describe a representable frame. */
struct CapsCase {
  const char *name;
  const char *caps;
  std::vector<const char *> expect;
  bool needs_any_size;   // pad templates with width/height ranges refuse these caps before set_caps
  bool needs_any_format; // pad templates with a format list refuse these caps before set_caps
};

const CapsCase kCapsCases[] = {
    {"WidthTimesHeightOverflows",
     "video/x-raw,format=RGB,width=2147483647,height=2147483647,framerate=30/1",
     {"width = 2147483647, height = 2147483647", "overflows"},
     false,
     false},
    {"FrameGStreamerCannotLayOut",
     "video/x-raw,format=RGB,width=65536,height=65536,framerate=30/1",
     {"width = 65536, height = 65536", "12884901888 bytes"},
     false,
     false},
    {"NegativeWidth",
     "video/x-raw,format=RGB,width=-5,height=17,framerate=30/1",
     {"width = -5 is not positive"},
     true,
     false},
    {"EncodedFormat",
     "video/x-raw,format=ENCODED,width=333,height=17,framerate=30/1",
     {"format = ENCODED"},
     true,
     true},
};

void PrintTo(const CapsCase &c, std::ostream *os) { *os << c.caps; }

class BadCaps : public ElementTest<CapsCase> {};

TEST_P(BadCaps, AreANegotiationErrorNamingTheFieldAndThePipelineReturnsToNull) {
  const ElementCase &element = this->element();
  const CapsCase &bad = this->bad();
  Outcome outcome;
  ASSERT_NO_FATAL_FAILURE(run_with(element, bad.caps, plain(64), &outcome));
  EXPECT_FALSE(outcome.eos) << "the caps were accepted";
  if ((bad.needs_any_size && !element.takes_any_size) || (bad.needs_any_format && !element.takes_any_format)) {
    // The pad template (width and height in [1, max], or a format list)
    // refuses them: upstream reports not-negotiated.
    EXPECT_EQ(outcome.from, "src") << outcome.text;
    EXPECT_NE(outcome.text.find("not-negotiated"), std::string::npos) << outcome.text;
    return;
  }
  expect_error_from_element(outcome, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION, bad.expect);
}

/* Tensor caps an element cannot handle are refused by the element, naming
 * what it takes, not by a pad template as a bare not-negotiated (issue 28:
 * tensordownload said only not-negotiated for num_tensors=2). */
TEST(BadTensorCaps, MoreThanOneTensorIsANegotiationErrorNamingNumTensors) {
  const char *caps = "other/tensors,format=static,num_tensors=2,types=(string)uint8.uint8,"
                     "dimensions=(string)4:1.4:1,framerate=0/1";
  for (const ElementCase element : {ElementCase{"Download", "tensordownload name=el", false, false, false},
                                    ElementCase{"Inspect", "tensorinspect name=el", false, true, true}}) {
    SCOPED_TRACE(element.launch);
    Outcome outcome;
    ASSERT_NO_FATAL_FAILURE(run_with(element, caps, plain(8), &outcome));
    EXPECT_FALSE(outcome.eos) << "two tensors were accepted";
    expect_error_from_element(outcome, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION, {"num_tensors=1"});
  }
}

/* storage=d3d11 takes the template's formats, but DXGI has no texture for
 * three-plane YUV: an element error naming the format and what to do, not a
 * bare not-negotiated (issue 28). */
TEST(D3d11Formats, AFormatWithoutATextureIsRefusedByName) {
  Outcome outcome;
  const gsize i420 = 64 * 48 * 3 / 2;
  ASSERT_NO_FATAL_FAILURE(run_with({"UploadD3d11", "tensorupload name=el storage=d3d11", false, false, false},
                                   "video/x-raw,format=I420,width=64,height=48,framerate=30/1", plain(i420), &outcome));
  EXPECT_FALSE(outcome.eos);
  expect_error_from_element(outcome, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
                            {"no Direct3D 11 texture for I420", "NV12"});
  // NV12, the texture YUV format, goes through.
  Outcome nv12;
  ASSERT_NO_FATAL_FAILURE(run_with({"UploadD3d11", "tensorupload name=el storage=d3d11", false, false, false},
                                   "video/x-raw,format=NV12,width=64,height=48,framerate=30/1", plain(i420), &nv12));
  EXPECT_TRUE(nv12.eos) << nv12.text;
}

/* Our DMA-BUF memory over a memfd sealed against writes: it imports (the fd
 * is read-write) but every mmap of it fails with EPERM, as a map that fails
 * for lack of memory or address space does with ENOMEM. */
GstMemory *unmappable_dmabuf(gsize size) {
  const int fd = memfd_create("write-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
  EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), 0);
  GstMemory *mem = gst_tensor_mem_dmabuf_memory_import_fd(fd, size);
  close(fd);
  return mem;
}

/* GstMemory's map has no error: the cause of a failed map of tensor memory
 * is kept per thread, so that elements name it (issue 28: an ENOMEM mmap
 * read "does not map for writing", the cause only in the debug log). */
TEST(MapFailure, TheCauseOfAFailedMapIsKeptAndAMapThatWorksClearsIt) {
  GstMemory *mem = unmappable_dmabuf(4096);
  ASSERT_NE(mem, nullptr);
  GstMapInfo info;
  EXPECT_FALSE(gst_memory_map(mem, &info, GST_MAP_READ));
  const gchar *why = gst_tensor_mem_memory_get_last_map_failure();
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("mmap"), std::string::npos) << why;
  EXPECT_NE(std::string(why).find(std::strerror(EPERM)), std::string::npos) << why;
  gst_memory_unref(mem);
  GstAllocator *allocator = gst_tensor_mem_dmabuf_allocator_get();
  GstMemory *fine = gst_allocator_alloc(allocator, 4096, nullptr);
  gst_object_unref(allocator);
  ASSERT_TRUE(gst_memory_map(fine, &info, GST_MAP_WRITE));
  EXPECT_EQ(gst_tensor_mem_memory_get_last_map_failure(), nullptr);
  gst_memory_unmap(fine, &info);
  gst_memory_unref(fine);
}

TEST(MapFailure, AnElementThatCannotMapItsInputNamesTheCause) {
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, unmappable_dmabuf(kFrameSize));
  Outcome outcome;
  ASSERT_NO_FATAL_FAILURE(run_with({"UploadSystem", "tensorupload name=el storage=system", false, false, false},
                                   "video/x-raw,format=GRAY8,width=100,height=170,framerate=30/1", buffer, &outcome));
  EXPECT_FALSE(outcome.eos);
  EXPECT_EQ(outcome.from, "el") << outcome.text;
  EXPECT_NE(outcome.text.find(std::strerror(EPERM)), std::string::npos) << outcome.text;
}

/* The pure checks, without an element: every layout GStreamer itself makes
 * passes (palettes and packed sub-byte formats included), and what the
 * element suites cannot reach is refused with its field named. */
GstBuffer *aligned_frame(GstVideoInfo *info, guint align_mask) {
  GstVideoAlignment align;
  gst_video_alignment_reset(&align);
  for (guint &mask : align.stride_align)
    mask = align_mask;
  EXPECT_TRUE(gst_video_info_align(info, &align));
  GstBuffer *buffer = plain(GST_VIDEO_INFO_SIZE(info));
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(info),
                                 GST_VIDEO_INFO_WIDTH(info), GST_VIDEO_INFO_HEIGHT(info), GST_VIDEO_INFO_N_PLANES(info),
                                 info->offset, info->stride);
  return buffer;
}

std::string validation_error(GstBuffer *buffer, const GstVideoInfo *info) {
  GError *error = nullptr;
  const gboolean ok = gst_tensor_mem_validate_buffer(buffer, info, &error);
  std::string text = ok ? "" : error->message;
  EXPECT_EQ(ok, error == nullptr);
  g_clear_error(&error);
  gst_buffer_unref(buffer);
  return text;
}

TEST(ValidateBuffer, AcceptsTheDefaultAndPaddedLayoutsOfEveryKindOfFormat) {
  for (const char *format : {"RGB", "RGBA", "GRAY8", "NV12", "I420", "YUY2", "RGB8P", "v210", "IYU1"}) {
    const std::string caps = std::string("video/x-raw,format=") + format + ",width=33,height=17";
    GstVideoInfo info;
    GError *error = nullptr;
    GstCaps *parsed = gst_caps_from_string(caps.c_str());
    ASSERT_TRUE(gst_tensor_mem_video_info_from_caps(&info, parsed, &error)) << caps << ": " << error->message;
    gst_caps_unref(parsed);
    EXPECT_EQ(validation_error(plain(GST_VIDEO_INFO_SIZE(&info)), &info), "") << caps << " default layout";
    // The same layout described by a meta (what a pool adds): its planes are not checked one by one.
    GstBuffer *described = plain(GST_VIDEO_INFO_SIZE(&info));
    gst_buffer_add_video_meta_full(described, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&info),
                                   GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info),
                                   GST_VIDEO_INFO_N_PLANES(&info), info.offset, info.stride);
    EXPECT_EQ(validation_error(described, &info), "") << caps << " default layout with a GstVideoMeta";
    GstVideoInfo padded = info;
    GstBuffer *buffer = aligned_frame(&padded, 63);
    EXPECT_EQ(validation_error(buffer, &info), "") << caps << " 64-byte strides";
  }
}

/* The caps' own layout with the last row's padding cut off (16 999 of the
 * frame's 17 000 bytes): every plane still fits, so the buffer is read. */
TEST(ValidateBuffer, AcceptsTheDefaultLayoutWithoutTheLastRowsPadding) {
  const GstVideoInfo info = tmtest::info_from_string(kCaps);
  EXPECT_EQ(validation_error(with_meta(kFrameSize - 1, 0, kStride), &info), "");
  EXPECT_EQ(validation_error(with_meta(kFrameSize, 0, kStride), &info), "");
}

TEST(ValidateBuffer, RefusesAPlainFdMemoryLongerThanItsFile) {
  const GstVideoInfo info = tmtest::info_from_string(kCaps);
  const int fd = memfd_create("short-file", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  GstAllocator *allocator = gst_fd_allocator_new();
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, gst_fd_allocator_alloc(allocator, fd, kFrameSize, GST_FD_MEMORY_FLAG_NONE));
  gst_object_unref(allocator);
  const std::string text = validation_error(buffer, &info);
  EXPECT_NE(text.find("maxsize 17000"), std::string::npos) << text;
  EXPECT_NE(text.find("exceeds the 4096-byte file"), std::string::npos) << text;
}

/* Our own DMA-BUF memory is measured by its storage (sized once, when the fd
 * was imported), not by asking the kernel per buffer: a memory whose maxsize
 * was widened past that size behind the allocator's back is still refused,
 * and an honest one is accepted. */
TEST(ValidateBuffer, MeasuresOurOwnDmaBufMemoryByItsStorage) {
  const GstVideoInfo info = tmtest::info_from_string(kCaps);
  for (const gsize file_size : {gsize{4096}, kFrameSize}) {
    const int fd = memfd_create("own-dmabuf", MFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(file_size)), 0);
    GstMemory *mem = gst_tensor_mem_dmabuf_memory_import_fd(fd, 0);
    close(fd); // the memory keeps its own dup
    ASSERT_NE(mem, nullptr);
    ASSERT_TRUE(gst_is_tensor_mem_dmabuf_memory(mem));
    const gsize honest = mem->maxsize;
    mem->maxsize = mem->size = kFrameSize; // a memory lying about its size when the file is short
    GstBuffer *buffer = gst_buffer_new();
    gst_buffer_append_memory(buffer, gst_memory_ref(mem));
    const std::string text = validation_error(buffer, &info);
    if (file_size < kFrameSize) {
      EXPECT_NE(text.find("maxsize 17000"), std::string::npos) << text;
      EXPECT_NE(text.find("exceeds the 4096-byte DMA-BUF"), std::string::npos) << text;
    } else {
      EXPECT_EQ(text, "");
    }
    mem->maxsize = mem->size = honest;
    gst_memory_unref(mem);
  }
}

TEST(ValidateBuffer, RefusesATiledLayout) {
  GstVideoInfo info = tmtest::info_from_string("video/x-raw,format=NV12_64Z32,width=128,height=64");
  GstBuffer *buffer = plain(GST_VIDEO_INFO_SIZE(&info));
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&info), 128, 64,
                                 GST_VIDEO_INFO_N_PLANES(&info), info.offset, info.stride);
  const std::string text = validation_error(buffer, &info);
  EXPECT_NE(text.find("tiled format NV12_64Z32"), std::string::npos) << text;
}

TEST(ValidateCaps, NameWhatIsMissingOrWrong) {
  const std::pair<const char *, const char *> cases[] = {
      {"image/jpeg,width=33,height=17", "media type image/jpeg are not raw video"},
      {"video/x-raw,width=33,height=17", "format = (missing)"},
      {"video/x-raw,format=RGB,width=33", "field height is missing"},
      {"video/x-raw,format=RGB,width=33,height=0", "height = 0 is not positive"},
      {"video/x-raw,format=RGB,width=[1,33],height=17", "not fixed"},
  };
  for (const auto &[caps, expected] : cases) {
    GstCaps *parsed = gst_caps_from_string(caps);
    ASSERT_NE(parsed, nullptr) << caps;
    GstVideoInfo info;
    GError *error = nullptr;
    EXPECT_FALSE(gst_tensor_mem_video_info_from_caps(&info, parsed, &error)) << caps;
    ASSERT_NE(error, nullptr) << caps;
    EXPECT_TRUE(g_error_matches(error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION)) << caps;
    EXPECT_NE(std::string(error->message).find(expected), std::string::npos) << caps << ": " << error->message;
    g_error_free(error);
    gst_caps_unref(parsed);
  }
}

std::string element_name(const ElementCase &e) { return e.name; }

INSTANTIATE_TEST_SUITE_P(Elements, BadBuffer,
                         ::testing::Combine(::testing::ValuesIn(kElements), ::testing::ValuesIn(kBufferCases)),
                         [](const auto &info) {
                           return element_name(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
                         });

INSTANTIATE_TEST_SUITE_P(Elements, BadCaps,
                         ::testing::Combine(::testing::ValuesIn(kElements), ::testing::ValuesIn(kCapsCases)),
                         [](const auto &info) {
                           return element_name(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
                         });

} // namespace

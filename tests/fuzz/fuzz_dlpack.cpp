// SPDX-License-Identifier: Apache-2.0
/* fuzz-dlpack: gst_tensor_mem_buffer_to_dlpack() on random caps and buffers.
 * Caps: other/tensors of every type name (and unknown ones) with 1 to 5
 * dimensions, video/x-raw of every raw format, now and then unfixed caps or
 * two structures. Buffer: one memory (sometimes two) of system memory or a
 * memfd-backed DMA-BUF whose file is shorter or longer than the memory
 * says, near the size the caps need or anything; with a GstVideoMeta of
 * random stride and offset now and then; flags READ, READ|WRITE or 0; an
 * extra reference now and then (a writable tensor then must be refused).
 * Asserted for every tensor handed out: a CPU tensor of 1 or more positive
 * dimensions, non-negative strides and one lane; every element lies inside
 * the buffer and is read (and, for a writable tensor, written) without a
 * fault (ASan for system memory, SIGBUS past a memfd's end); the deleter,
 * called once, releases exactly one tensor and the buffer's reference and
 * map (the buffer is writable again). A refusal sets a GError with a
 * message. */
#include "fuzz_gst.hpp"
#include "fuzz_input.hpp"

#include <gst/tensormem/gsttensordlpack.h>
#include <gst/video/video.h>

#include <algorithm>
#include <string>
#include <vector>

using tensormem_fuzz::FuzzInput;

TENSORMEM_FUZZ_INIT_GSTREAMER

namespace {

GstMemory *make_memory(FuzzInput &in, gsize size) {
  // A memfd DMA-BUF whose file is near the size its memory says, or system memory.
  return in.pick(3) == 0 ? tensormem_fuzz::memfd_dmabuf_memory(tensormem_fuzz::near_size(in, size), size)
                         : tensormem_fuzz::system_memory(in, size);
}

GstCaps *make_caps(FuzzInput &in, gsize *need) {
  GstCaps *caps;
  if (in.flag()) {
    static const char *const types[] = {"uint8", "int8",    "uint16",  "int16",   "uint32", "int32",
                                        "uint64", "int64",  "float16", "float32", "float64", "complex"};
    static const gsize sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 4, 8, 1};
    const guint type = in.pick(12);
    std::string dims;
    gsize n = sizes[type];
    for (guint i = 0, nd = in.range(1, 5); i < nd; ++i) {
      const guint d = in.pick(16) == 0 ? in.u32() : in.range(1, 12);
      dims += (i ? ":" : "") + std::to_string(d);
      n *= d;
    }
    caps = gst_caps_new_simple("other/tensors", "format", G_TYPE_STRING, "static", "num_tensors", G_TYPE_INT, 1,
                               "types", G_TYPE_STRING, types[type], "dimensions", G_TYPE_STRING, dims.c_str(),
                               nullptr);
    *need = n;
  } else {
    guint n_formats = 0;
    const GstVideoFormat *formats = gst_video_formats_raw(&n_formats);
    GstVideoInfo info;
    gst_video_info_set_format(&info, formats[in.pick(n_formats)], in.range(1, 24), in.range(1, 24));
    caps = gst_video_info_to_caps(&info);
    *need = GST_VIDEO_INFO_SIZE(&info);
  }
  switch (in.pick(16)) {
  case 0: gst_caps_append(caps, gst_caps_new_empty_simple("video/x-raw")); break;
  case 1: gst_caps_set_simple(caps, "width", GST_TYPE_INT_RANGE, 1, 8, nullptr); break;
  default: break;
  }
  return caps;
}

void use_tensor(DLManagedTensor *managed, GstBuffer *buffer, bool writable) {
  const DLTensor &t = managed->dl_tensor;
  FUZZ_CHECK(t.device.device_type == kDLCPU, "device type %d", static_cast<int>(t.device.device_type));
  FUZZ_CHECK(t.ndim >= 1 && t.dtype.lanes == 1 && t.dtype.bits >= 8 && t.dtype.bits % 8 == 0, "ndim %d, %u x %u bits",
             t.ndim, static_cast<unsigned>(t.dtype.lanes), static_cast<unsigned>(t.dtype.bits));
  const std::uint64_t elem = t.dtype.bits / 8;
  unsigned __int128 last = 0, count = 1;
  for (int i = 0; i < t.ndim; ++i) {
    FUZZ_CHECK(t.shape[i] >= 1, "dimension %d is %lld", i, static_cast<long long>(t.shape[i]));
    FUZZ_CHECK(t.strides[i] >= 0, "stride %d is %lld", i, static_cast<long long>(t.strides[i]));
    last += static_cast<unsigned __int128>(t.shape[i] - 1) * static_cast<std::uint64_t>(t.strides[i]);
    count *= static_cast<std::uint64_t>(t.shape[i]);
  }
  const unsigned __int128 end = t.byte_offset + (last + 1) * elem;
  FUZZ_CHECK(end <= gst_buffer_get_size(buffer), "the tensor ends at byte %llu of a %zu-byte buffer",
             static_cast<unsigned long long>(end), gst_buffer_get_size(buffer));
  if (count > 1u << 16)
    return; // accepted and inside the buffer; too many elements to walk for every input
  auto *base = static_cast<volatile std::uint8_t *>(t.data) + t.byte_offset;
  std::vector<std::int64_t> index(static_cast<std::size_t>(t.ndim), 0);
  std::uint8_t sum = 0;
  for (unsigned __int128 n = 0; n < count; ++n) {
    std::uint64_t at = 0;
    for (int i = 0; i < t.ndim; ++i)
      at += static_cast<std::uint64_t>(index[static_cast<std::size_t>(i)]) * static_cast<std::uint64_t>(t.strides[i]);
    for (std::uint64_t b = 0; b < elem; ++b) {
      sum = static_cast<std::uint8_t>(sum + base[at * elem + b]);
      if (writable)
        base[at * elem + b] = sum;
    }
    for (int i = t.ndim - 1; i >= 0 && ++index[static_cast<std::size_t>(i)] == t.shape[i]; --i)
      index[static_cast<std::size_t>(i)] = 0;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  FuzzInput in(data, size);
  gsize need = 0;
  GstCaps *caps = make_caps(in, &need);
  need = std::min<gsize>(need, 1 << 20);
  gsize mem_size = need;
  switch (in.pick(4)) {
  case 0: mem_size = in.pick(static_cast<std::uint32_t>(2 * need + 2)); break;
  case 1: mem_size = need + in.range(0, 64); break;
  default: break;
  }
  GstBuffer *buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, make_memory(in, mem_size));
  if (in.pick(16) == 0)
    gst_buffer_append_memory(buffer, make_memory(in, in.range(1, 64)));
  if (in.pick(4) == 0) {
    gsize offset[GST_VIDEO_MAX_PLANES] = {in.pick(4) == 0 ? in.u64() : in.range(0, 64)};
    gint stride[GST_VIDEO_MAX_PLANES] = {in.pick(4) == 0 ? static_cast<gint>(in.u32()) : static_cast<gint>(in.range(0, 256))};
    gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_GRAY8, in.range(1, 24),
                                   in.range(1, 24), 1, offset, stride);
  }
  static const int kFlags[] = {GST_MAP_READ, GST_MAP_READ | GST_MAP_WRITE, 0, GST_MAP_WRITE};
  const auto flags = static_cast<GstMapFlags>(kFlags[in.pick(4)]);
  GstBuffer *extra = in.pick(4) == 0 ? gst_buffer_ref(buffer) : nullptr;

  guint64 made0 = 0, released0 = 0;
  gst_tensor_mem_dlpack_get_stats(&made0, &released0);
  GError *error = nullptr;
  DLManagedTensor *managed = gst_tensor_mem_buffer_to_dlpack(buffer, caps, flags, &error);
  if (managed == nullptr) {
    FUZZ_CHECK(error != nullptr && error->message[0] != '\0', "refused without a message");
    g_error_free(error);
  } else {
    FUZZ_CHECK(error == nullptr, "a tensor and an error");
    FUZZ_CHECK((flags & GST_MAP_READ) != 0, "a tensor for flags %d without READ", static_cast<int>(flags));
    FUZZ_CHECK(!(flags & GST_MAP_WRITE) || extra == nullptr, "a writable tensor of a shared buffer");
    FUZZ_CHECK(managed->deleter != nullptr, "no deleter");
    use_tensor(managed, buffer, (flags & GST_MAP_WRITE) != 0);
    managed->deleter(managed);
    guint64 made1 = 0, released1 = 0;
    gst_tensor_mem_dlpack_get_stats(&made1, &released1);
    FUZZ_CHECK(made1 - made0 == 1 && released1 - released0 == 1, "made %llu, released %llu",
               static_cast<unsigned long long>(made1 - made0), static_cast<unsigned long long>(released1 - released0));
    if (extra == nullptr)
      FUZZ_CHECK(gst_buffer_is_writable(buffer), "the deleter left a reference on the buffer");
  }
  if (extra)
    gst_buffer_unref(extra);
  gst_buffer_unref(buffer);
  gst_caps_unref(caps);
  return 0;
}

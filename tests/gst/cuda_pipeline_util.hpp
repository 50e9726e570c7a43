// SPDX-License-Identifier: Apache-2.0
// Shared by the CUDA GStreamer tests: runs a pipeline to EOS or error and
// collects tensorinspect's messages, warnings, tensorcudaimport's counters
// and the distinct memories that reached the inspector.
#pragma once

#include "pipeline_util.hpp"

#include <gst/tensormem/tensormem.h>

#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace cudatest {

/// The CUDA API meson runs this program against: "driver" where it forces
/// the driver (TENSORMEM_CUDA_API=driver and the fake driver), "runtime"
/// otherwise (TENSORMEM_CUDART and the fake runtime).
inline std::string tested_api() {
  const char *forced = std::getenv("TENSORMEM_CUDA_API");
  return forced && std::string(forced) == "driver" ? "driver" : "runtime";
}
/// The exported name of a call on the tested API.
inline std::string call_name(const char *runtime_name, const char *driver_name) {
  return tested_api() == "driver" ? driver_name : runtime_name;
}
/// How the tested API writes status `n`: "(cudaError n)" or "(CUresult n)".
inline std::string status_text(int n) {
  return std::string(tested_api() == "driver" ? "(CUresult " : "(cudaError ") + std::to_string(n) + ")";
}

using Frame = tmtest::InspectReport;

struct Run {
  std::vector<Frame> frames;
  std::vector<std::string> warnings; // from the element named "imp" only
  bool eos = false;
  std::string error;
  bool have_summary = false;
  guint64 summary_frames = 0, summary_cuda = 0, summary_host = 0;
  guint64 imports = 0;
  gboolean cuda_available = FALSE;
  std::string cuda_backend;
  std::set<const void *> memories;
  std::string last_checksum;

  std::vector<std::string> checksums() const {
    std::vector<std::string> out;
    for (const Frame &f : frames)
      out.push_back(f.checksum);
    return out;
  }
  size_t on_path(const char *path) const {
    size_t n = 0;
    for (const Frame &f : frames)
      n += f.path == path;
    return n;
  }
};

inline GstPadProbeReturn count_memory(GstPad *, GstPadProbeInfo *info, gpointer data) {
  auto *memories = static_cast<std::set<const void *> *>(data);
  if (GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info)) {
    if (gst_buffer_n_memory(buffer) > 0) {
      GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
      while (mem->parent)
        mem = mem->parent;
      memories->insert(mem);
    }
  }
  return GST_PAD_PROBE_OK;
}

/* `description` must name tensorinspect "ins" and may name tensorcudaimport
 * "imp". */
inline void run(const std::string &description, Run *run) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  if (error) {
    ADD_FAILURE() << description << ": " << error->message;
    g_error_free(error);
    if (pipeline)
      gst_object_unref(pipeline);
    return;
  }
  GstElement *ins = gst_bin_get_by_name(GST_BIN(pipeline), "ins");
  GstElement *imp = gst_bin_get_by_name(GST_BIN(pipeline), "imp");
  if (ins) {
    GstPad *pad = gst_element_get_static_pad(ins, "sink");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, count_memory, &run->memories, nullptr);
    gst_object_unref(pad);
  }
  GstBus *bus = gst_element_get_bus(pipeline);
  EXPECT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE) << description;
  for (;;) {
    GstMessage *msg = gst_bus_timed_pop_filtered(
        bus, tmtest::kTimeout,
        static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING | GST_MESSAGE_ELEMENT));
    if (!msg) {
      ADD_FAILURE() << description << ": neither EOS nor an error within the timeout";
      break;
    }
    bool done = false;
    switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_EOS:
      run->eos = true;
      done = true;
      break;
    case GST_MESSAGE_ERROR:
    case GST_MESSAGE_WARNING: {
      std::string text = tmtest::problem_text(msg);
      if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
        run->error = text;
        done = true;
      } else if (std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg))) == "imp") {
        // Others (a late sink on a loaded machine, say) are not ours to count.
        run->warnings.push_back(text);
      }
      break;
    }
    case GST_MESSAGE_ELEMENT: {
      const GstStructure *s = gst_message_get_structure(msg);
      if (std::optional<Frame> f = tmtest::inspect_report_of(s)) {
        EXPECT_EQ(f->frame, run->frames.size());
        run->frames.push_back(std::move(*f));
      } else if (gst_structure_has_name(s, "tensorinspect-summary")) {
        run->have_summary = true;
        gst_structure_get_uint64(s, "frames", &run->summary_frames);
        gst_structure_get_uint64(s, "cuda-frames", &run->summary_cuda);
        gst_structure_get_uint64(s, "host-frames", &run->summary_host);
      }
      break;
    }
    default: break;
    }
    gst_message_unref(msg);
    if (done)
      break;
  }
  if (imp) {
    gchar *backend = nullptr;
    g_object_get(imp, "imports", &run->imports, "cuda-available", &run->cuda_available, "cuda-backend", &backend,
                 nullptr);
    run->cuda_backend = backend ? backend : "";
    g_free(backend);
  }
  if (ins) {
    gchar *last = nullptr;
    g_object_get(ins, "last-checksum", &last, nullptr);
    run->last_checksum = last ? last : "";
    g_free(last);
  }
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS) << description;
  gst_object_unref(bus);
  if (imp)
    gst_object_unref(imp);
  if (ins)
    gst_object_unref(ins);
  tmtest::release_pipeline(pipeline);
}

} // namespace cudatest

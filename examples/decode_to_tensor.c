/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decode → model tensor → application, the way an inference program takes
 * its input:
 *
 *   filesrc location=CLIP ! h264parse ! openh264dec !
 *       tensorupload storage=pbo ! tensorconvert width=W height=H
 *       resize=letterbox dtype=float32 layout=nchw ! tensorcudaimport !
 *       appsink
 *
 * Each buffer the application pulls is handed over through DLPack
 * (gst_tensor_mem_buffer_to_dlpack(), what PyTorch, CuPy or TVM take): a
 * CUDA device pointer where tensorcudaimport found a GPU, a host pointer
 * otherwise. The program prints, per frame, where the tensor lives, its
 * shape and the mean of each channel (read through the tensor's own shape
 * and strides; for a CUDA tensor through a host map of the same buffer,
 * since plain C has no device to compute on), then releases the tensor with
 * its deleter.
 *
 *   GST_PLUGIN_PATH=build/gst/plugin build/examples/decode-to-tensor \
 *       [--storage=pbo|system] CLIP.h264 [WIDTH [HEIGHT]]
 *
 * Output lines: "frame N: device D shape 1x3xHxW mean R G B", then
 * "frames N". Exit status: 0 on success, 1 on any failure, 77 when
 * storage=pbo is asked for and no headless GL context can be made here (a
 * skip for meson test).
 */
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gst/tensormem/tensormem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_SKIP 77

/* Per-channel mean of an NCHW float32 tensor at `base`, through its strides. */
static void channel_means(const DLTensor *t, const guint8 *base, double means[3]) {
  const int64_t c_n = t->shape[1], h_n = t->shape[2], w_n = t->shape[3];
  for (int64_t c = 0; c < c_n && c < 3; ++c) {
    double sum = 0;
    for (int64_t y = 0; y < h_n; ++y) {
      for (int64_t x = 0; x < w_n; ++x) {
        const int64_t at = c * t->strides[1] + y * t->strides[2] + x * t->strides[3];
        float v;
        memcpy(&v, base + t->byte_offset + (gsize)at * sizeof(float), sizeof v);
        sum += v;
      }
    }
    means[c] = sum / (double)(h_n * w_n);
  }
}

/* Hands one sample to "the framework" and prints what it got. */
static gboolean consume(GstSample *sample, guint index) {
  GstBuffer *buffer = gst_sample_get_buffer(sample);
  GError *error = NULL;
  DLManagedTensor *tensor = gst_tensor_mem_buffer_to_dlpack(buffer, gst_sample_get_caps(sample), GST_MAP_READ, &error);
  if (!tensor) {
    fprintf(stderr, "frame %u: no DLPack tensor: %s\n", index, error->message);
    g_error_free(error);
    return FALSE;
  }
  const DLTensor *t = &tensor->dl_tensor;
  gboolean ok = t->ndim == 4 && t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->shape[1] == 3;
  if (!ok) {
    fprintf(stderr, "frame %u: not an NCHW float32 tensor of 3 channels\n", index);
  } else {
    double means[3] = {0, 0, 0};
    if (t->device.device_type == kDLCPU) {
      channel_means(t, t->data, means);
    } else {
      /* An inference runtime reads the device pointer itself; here a host
       * map of the same buffer (readers share it) stands in for it. */
      GstMapInfo map;
      ok = gst_buffer_map(buffer, &map, GST_MAP_READ);
      if (ok) {
        channel_means(t, map.data, means);
        gst_buffer_unmap(buffer, &map);
      }
    }
    printf("frame %u: device %s shape %ldx%ldx%ldx%ld mean %.6f %.6f %.6f\n", index,
           t->device.device_type == kDLCUDA ? "cuda" : "cpu", (long)t->shape[0], (long)t->shape[1],
           (long)t->shape[2], (long)t->shape[3], means[0], means[1], means[2]);
  }
  tensor->deleter(tensor);
  return ok;
}

int main(int argc, char **argv) {
  const char *storage = "pbo";
  int arg = 1;
  gst_init(&argc, &argv);
  gst_tensor_mem_init();
  if (arg < argc && g_str_has_prefix(argv[arg], "--storage="))
    storage = argv[arg++] + strlen("--storage=");
  if (arg >= argc) {
    fprintf(stderr, "usage: %s [--storage=pbo|system] CLIP.h264 [WIDTH [HEIGHT]]\n", argv[0]);
    return 1;
  }
  const char *clip = argv[arg++];
  const int width = arg < argc ? atoi(argv[arg++]) : 640;
  const int height = arg < argc ? atoi(argv[arg++]) : 640;

  if (strcmp(storage, "pbo") == 0) {
    GError *error = NULL;
    GstTensorMemGlWorker *worker = gst_tensor_mem_gl_worker_new(&error);
    if (!worker) {
      printf("SKIP: no headless GL context here: %s\n", error->message);
      g_error_free(error);
      return EXIT_SKIP;
    }
    gst_object_unref(worker);
  }

  gchar *location = g_strescape(clip, NULL);
  gchar *description = g_strdup_printf(
      "filesrc location=\"%s\" ! h264parse ! openh264dec ! tensorupload storage=%s ! "
      "tensorconvert width=%d height=%d resize=letterbox dtype=float32 layout=nchw ! tensorcudaimport ! "
      "appsink name=sink sync=false",
      location, storage, width, height);
  g_free(location);
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch(description, &error);
  g_free(description);
  if (!pipeline || error) {
    fprintf(stderr, "pipeline: %s\n", error ? error->message : "not made");
    g_clear_error(&error);
    if (pipeline)
      gst_object_unref(pipeline);
    return 1;
  }
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  gboolean ok = gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE;
  guint frames = 0;
  while (ok) {
    GstSample *sample = gst_app_sink_pull_sample(GST_APP_SINK(sink));
    if (!sample)
      break; /* EOS or an error, told apart on the bus below */
    ok = consume(sample, frames++);
    gst_sample_unref(sample);
  }
  GstMessage *msg = gst_bus_timed_pop_filtered(GST_ELEMENT_BUS(pipeline), 30 * GST_SECOND,
                                               (GstMessageType)(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  if (!msg || GST_MESSAGE_TYPE(msg) != GST_MESSAGE_EOS) {
    if (msg) {
      GError *err = NULL;
      gst_message_parse_error(msg, &err, NULL);
      fprintf(stderr, "pipeline error: %s\n", err->message);
      g_error_free(err);
    } else {
      fprintf(stderr, "no EOS within 30 s\n");
    }
    ok = FALSE;
  }
  if (msg)
    gst_message_unref(msg);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  printf("frames %u\n", frames);
  return ok && frames > 0 ? 0 : 1;
}

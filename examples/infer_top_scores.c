/* SPDX-License-Identifier: Apache-2.0 */
/* Decode → tensorconvert → tensorinfer, and the top five scores of each
 * frame read from the model's output in the frame's GstTensorMeta, through
 * GStreamer's analytics API only (nothing of gst-tensormem's API). Built
 * against GStreamer older than 1.26 (no GstTensorMeta), the chain runs
 * with output=tensors instead and the scores are the other/tensors buffer
 * tensorinfer gives, its one memory.
 *
 *   infer-top-scores MODEL.onnx [VIDEO_FILE]
 *   infer-top-scores --streams=N MODEL.onnx [VIDEO_FILE]
 *
 * The model takes a float32 [1,3,224,224] image (ImageNet normalisation)
 * and gives one float32 [1,N] score tensor. Without a file, ten frames of
 * videotestsrc stand in for the video. Prints one line per frame:
 *   frame 3: scores 7:0.412 2:0.201 ...
 * (class index:score, best first). With --streams=N, N streams of the file
 * (of videotestsrc, pattern i for stream i, without one) go into one batch
 * (tensorbatch), the model (its batch dimension open)
 * runs once per batch, and each slot of each batch gets its line:
 *   batch 3 slot 1: scores 7:0.412 2:0.201 ...
 * Exit status 0 when every frame (batch) had scores, 1 otherwise. */
#if INFER_TOP_SCORES_TENSOR_META
#include <gst/analytics/analytics.h>
#endif
#include <gst/app/gstappsink.h>
#include <gst/gst.h>

#include <stdio.h>
#include <string.h>

#define TOP 5
/* What tensorconvert and tensorinfer hand on. */
#if INFER_TOP_SCORES_TENSOR_META
#define CONVERT_OUTPUT "meta"
#define INFER_OUTPUT "meta"
#else
#define CONVERT_OUTPUT "tensor"
#define INFER_OUTPUT "tensors"
#endif

/* Prints the TOP largest of `n` scores, best first. */
static void print_top(const char *row, const char *name, const float *values, gsize n) {
  gsize best[TOP];
  gsize found = 0;
  /* Selection of the TOP largest: N is a class count, small enough. */
  for (gsize k = 0; k < TOP && k < n; ++k) {
    gsize pick = n;
    for (gsize c = 0; c < n; ++c) {
      gboolean taken = FALSE;
      for (gsize j = 0; j < found; ++j)
        taken |= best[j] == c;
      if (!taken && (pick == n || values[c] > values[pick]))
        pick = c;
    }
    best[found++] = pick;
  }
  printf("%s: %s", row, name);
  for (gsize j = 0; j < found; ++j)
    printf(" %" G_GSIZE_FORMAT ":%.6f", best[j], values[best[j]]);
  printf("\n");
}

/* The scores of one sample from tensorinfer, a [B,N] float32 tensor (B 1
 * for a frame, the batch size for a batch), printed row by row as
 * `label` (with " slot R" per row of a batch); FALSE where it has none. */
static gboolean print_scores(const char *label, guint64 index, GstSample *sample, gboolean batch) {
  GstBuffer *buffer = gst_sample_get_buffer(sample);
  GstBuffer *data = NULL;
  const char *name = "scores";
  gsize rows = 0, n = 0;
#if INFER_TOP_SCORES_TENSOR_META
  /* The first 2-D float32 tensor in the meta: the model's scores
   * (tensorconvert's own input tensor and a batch's are 4-D). */
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(buffer);
  for (gsize i = 0; meta && !data && i < meta->num_tensors; ++i) {
    const GstTensor *t = gst_tensor_meta_get(meta, i);
    if (t->data_type == GST_TENSOR_DATA_TYPE_FLOAT32 && t->num_dims == 2 && t->data) {
      data = t->data;
      name = g_quark_to_string(t->id);
      rows = t->dims[0];
      n = t->dims[1];
    }
  }
#else
  /* output=tensors: one memory per model output, the scores the only one;
   * its shape in the caps, innermost first ("N:B"). */
  const char *dims = gst_structure_get_string(gst_caps_get_structure(gst_sample_get_caps(sample), 0), "dimensions");
  if (gst_buffer_n_memory(buffer) == 1 && dims && sscanf(dims, "%" G_GSIZE_FORMAT ":%" G_GSIZE_FORMAT, &n, &rows) == 2)
    data = buffer;
#endif
  GstMapInfo map;
  if (!data || rows == 0 || (!batch && rows != 1) || !gst_buffer_map(data, &map, GST_MAP_READ))
    return FALSE;
  gboolean complete = map.size >= rows * n * sizeof(float);
  for (gsize r = 0; complete && r < rows; ++r) {
    gchar *row = batch ? g_strdup_printf("%s %" G_GUINT64_FORMAT " slot %" G_GSIZE_FORMAT, label, index, r)
                       : g_strdup_printf("%s %" G_GUINT64_FORMAT, label, index);
    print_top(row, name, (const float *)map.data + r * n, n);
    g_free(row);
  }
  gst_buffer_unmap(data, &map);
  return complete;
}

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  guint streams = 0;
  if (argc > 2 && g_str_has_prefix(argv[1], "--streams=")) {
    streams = (guint)g_ascii_strtoull(argv[1] + strlen("--streams="), NULL, 10);
    argv[1] = argv[0];
    ++argv;
    --argc;
  }
  if (argc < 2 || argc > 3 || streams > 16) {
    fprintf(stderr, "usage: %s [--streams=N] MODEL.onnx [VIDEO_FILE]\n", argv[0]);
    return 2;
  }
  const char *convert = "tensorconvert width=224 height=224 layout=nchw dtype=float32 mean=<0.485,0.456,0.406> "
                        "std=<0.229,0.224,0.225>";
  gchar *description = NULL;
  if (streams == 0) {
    gchar *source = argc == 3 ? g_strdup_printf("filesrc location=\"%s\" ! decodebin", argv[2])
                              : g_strdup("videotestsrc num-buffers=10 pattern=ball ! video/x-raw,width=640,height=480");
    description = g_strdup_printf("%s ! %s output=%s ! tensorinfer model=\"%s\" output=%s ! appsink name=sink sync=false",
                                  source, convert, CONVERT_OUTPUT, argv[1], INFER_OUTPUT);
    g_free(source);
  } else {
    /* N streams of the file, each tensorconvert writing its slot of one
     * batch; the model (with an open batch dimension) once per batch. */
    GString *text = g_string_new(NULL);
    g_string_append_printf(text, "tensorbatch name=batch ! tensorinfer model=\"%s\" output=%s ! appsink name=sink sync=false",
                           argv[1], INFER_OUTPUT);
    for (guint i = 0; i < streams; ++i) {
      if (argc == 3)
        g_string_append_printf(text, " filesrc location=\"%s\" ! decodebin", argv[2]);
      else // each stream a pattern of its own, so that the slots differ
        g_string_append_printf(text, " videotestsrc num-buffers=10 pattern=%u ! video/x-raw,width=640,height=480", i);
      g_string_append_printf(text, " ! %s ! batch.sink_%u", convert, i);
    }
    description = g_string_free(text, FALSE);
  }
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch(description, &error);
  g_free(description);
  if (!pipeline || error) {
    fprintf(stderr, "pipeline: %s\n", error ? error->message : "?");
    g_clear_error(&error);
    if (pipeline)
      gst_object_unref(pipeline);
    return 1;
  }
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstBus *bus = gst_element_get_bus(pipeline);
  /* A model that cannot load fails the state change; a wrong shape fails
   * the stream: either way an error on the bus ends the loop. */
  GstMessage *failure = NULL;
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE)
    failure = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  guint64 frames = 0, scored = 0;
  while (!failure) {
    GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 100 * GST_MSECOND);
    if (sample) {
      if (print_scores(streams ? "batch" : "frame", frames, sample, streams > 0))
        ++scored;
      ++frames;
      gst_sample_unref(sample);
    } else if (gst_app_sink_is_eos(GST_APP_SINK(sink))) {
      break;
    } else {
      failure = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    }
  }
  int status = frames > 0 && scored == frames ? 0 : 1;
  if (failure) {
    gst_message_parse_error(failure, &error, NULL);
    fprintf(stderr, "error from %s: %s\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(failure)), error->message);
    g_clear_error(&error);
    gst_message_unref(failure);
    status = 1;
  }
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  printf("%" G_GUINT64_FORMAT " %s, %" G_GUINT64_FORMAT " with scores\n", frames, streams ? "batches" : "frames",
         scored);
  return status;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Decode → tensorconvert → tensorinfer, and the top five scores of each
 * frame read from the model's output in the frame's GstTensorMeta, through
 * GStreamer's analytics API only (nothing of gst-tensormem's API).
 *
 *   infer-top-scores MODEL.onnx [VIDEO_FILE]
 *
 * The model takes a float32 [1,3,224,224] image (ImageNet normalisation)
 * and gives one float32 [1,N] score tensor. Without a file, ten frames of
 * videotestsrc stand in for the video. Prints one line per frame:
 *   frame 3: scores 7:0.412 2:0.201 ...
 * (class index:score, best first). Exit status 0 when every frame had
 * scores, 1 otherwise. */
#include <gst/analytics/analytics.h>
#include <gst/app/gstappsink.h>
#include <gst/gst.h>

#include <stdio.h>
#include <string.h>

#define TOP 5

/* The first float32 tensor of shape [1,N] in the meta: the model's scores
 * (tensorconvert's own input tensor is 4-D and never matches). */
static const GstTensor *scores_of(GstBuffer *buffer) {
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(buffer);
  if (!meta)
    return NULL;
  for (gsize i = 0; i < meta->num_tensors; ++i) {
    const GstTensor *t = gst_tensor_meta_get(meta, i);
    if (t->data_type == GST_TENSOR_DATA_TYPE_FLOAT32 && t->num_dims == 2 && t->dims[0] == 1 && t->data)
      return t;
  }
  return NULL;
}

static gboolean print_top(guint64 frame, const GstTensor *scores) {
  GstMapInfo map;
  if (!gst_buffer_map(scores->data, &map, GST_MAP_READ))
    return FALSE;
  const float *values = (const float *)map.data;
  const gsize n = MIN(scores->dims[1], map.size / sizeof(float));
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
  printf("frame %" G_GUINT64_FORMAT ": %s", frame, g_quark_to_string(scores->id));
  for (gsize j = 0; j < found; ++j)
    printf(" %" G_GSIZE_FORMAT ":%.6f", best[j], values[best[j]]);
  printf("\n");
  gst_buffer_unmap(scores->data, &map);
  return TRUE;
}

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s MODEL.onnx [VIDEO_FILE]\n", argv[0]);
    return 2;
  }
  gchar *source = argc == 3 ? g_strdup_printf("filesrc location=\"%s\" ! decodebin", argv[2])
                            : g_strdup("videotestsrc num-buffers=10 pattern=ball ! video/x-raw,width=640,height=480");
  gchar *description =
      g_strdup_printf("%s ! tensorconvert width=224 height=224 layout=nchw dtype=float32 mean=<0.485,0.456,0.406> "
                      "std=<0.229,0.224,0.225> output=meta ! tensorinfer model=\"%s\" ! appsink name=sink sync=false",
                      source, argv[1]);
  g_free(source);
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
      const GstTensor *scores = scores_of(gst_sample_get_buffer(sample));
      if (scores && print_top(frames, scores))
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
  printf("%" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT " with scores\n", frames, scored);
  return status;
}

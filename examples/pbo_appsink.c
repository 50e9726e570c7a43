/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenGL PBO memory into an application through appsink.
 *
 *   videotestsrc ! video/x-raw,format=RGBA,width=W,height=H !
 *       tensorupload storage=pbo ! appsink
 *
 * videotestsrc writes straight into the PBO pool tensorupload proposes, so
 * every buffer the application pulls is GstTensorPboMemory: one GL buffer of
 * a headless GL worker. The program checks that, prints the GL buffer name,
 * maps the buffer for reading with gst_buffer_map() (a glMapBufferRange on
 * the worker's thread, shared by every reader of that buffer), prints a
 * checksum of the first row, and at EOS prints tensorupload's copied-bytes,
 * which must be 0.
 *
 * The GL worker comes from the application (--worker=app, the default: a
 * context set on the pipeline), from a bus sync handler answering the
 * element's need-context message (--worker=need-context), or from
 * tensorupload itself (--worker=auto).
 *
 *   GST_PLUGIN_PATH=build/gst/plugin build/examples/pbo-appsink \
 *       [--worker=app|need-context|auto] [NUM_BUFFERS [WIDTH [HEIGHT]]]
 *
 * Exit status: 0 on success, 1 on any failure (an element error, memory that
 * is not PBO memory, a failed map, a copy, missing frames), 77 when no
 * headless GL context can be made here (a skip for meson test).
 */
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gst/tensormem/tensormem.h>
#include <gst/video/video.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_SKIP 77

typedef enum { WORKER_APP, WORKER_NEED_CONTEXT, WORKER_AUTO } WorkerMode;

/* FNV-1a over `len` bytes. */
static guint32 checksum(const guint8 *data, gsize len) {
  guint32 h = 2166136261u;
  for (gsize i = 0; i < len; ++i) {
    h ^= data[i];
    h *= 16777619u;
  }
  return h;
}

/* Bus sync handler (--worker=need-context): runs on the thread of the element
 * that asks, before gst_tensor_mem_gl_worker_ensure() goes on to start a worker of
 * its own. */
static GstBusSyncReply on_bus_sync(GstBus *bus, GstMessage *msg, gpointer user_data) {
  GstTensorMemGlWorker *worker = user_data;
  const gchar *type = NULL;
  (void)bus;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_NEED_CONTEXT && gst_message_parse_context_type(msg, &type) &&
      g_strcmp0(type, GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE) == 0) {
    GstContext *context = gst_context_new_tensor_mem_gl_worker(worker, TRUE);
    gst_element_set_context(GST_ELEMENT(GST_MESSAGE_SRC(msg)), context);
    gst_context_unref(context);
    printf("answered need-context from %s\n", GST_MESSAGE_SRC_NAME(msg));
  }
  return GST_BUS_PASS;
}

/* Looks at one pulled sample. Returns FALSE after printing why. */
static gboolean check_sample(GstSample *sample, guint index, GstTensorMemGlWorker *expected_worker) {
  GstBuffer *buffer = gst_sample_get_buffer(sample);
  GstCaps *caps = gst_sample_get_caps(sample);
  GstVideoInfo vinfo;
  if (!buffer || !caps || !gst_video_info_from_caps(&vinfo, caps)) {
    fprintf(stderr, "sample %u: no buffer or no video caps\n", index);
    return FALSE;
  }
  GstCapsFeatures *features = gst_caps_get_features(caps, 0);
  if (!features || !gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_TENSOR_PBO)) {
    fprintf(stderr, "sample %u: caps lack %s\n", index, GST_CAPS_FEATURE_MEMORY_TENSOR_PBO);
    return FALSE;
  }
  if (gst_buffer_n_memory(buffer) != 1) {
    fprintf(stderr, "sample %u: %u memories, expected one PBO\n", index, gst_buffer_n_memory(buffer));
    return FALSE;
  }
  GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
  if (!gst_is_tensor_mem_pbo_memory(mem)) {
    fprintf(stderr, "sample %u: memory of allocator %s is not PBO memory\n", index,
            mem->allocator ? GST_OBJECT_NAME(mem->allocator) : "(none)");
    return FALSE;
  }
  GstTensorMemGlWorker *worker = gst_tensor_mem_pbo_memory_get_gl_worker(mem);
  if (expected_worker && worker != expected_worker) {
    fprintf(stderr, "sample %u: the PBO belongs to another GL worker than the application's\n", index);
    return FALSE;
  }

  /* Row 0 of plane 0: where the GstVideoMeta (rows padded to 64 bytes) puts it. */
  const GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
  const gsize row_offset = meta ? meta->offset[0] : GST_VIDEO_INFO_PLANE_OFFSET(&vinfo, 0);
  const gint stride = meta ? meta->stride[0] : GST_VIDEO_INFO_PLANE_STRIDE(&vinfo, 0);
  const gsize row_bytes = (gsize)GST_VIDEO_INFO_WIDTH(&vinfo) * GST_VIDEO_INFO_COMP_PSTRIDE(&vinfo, 0);

  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    fprintf(stderr, "sample %u: gst_buffer_map(READ) of GL buffer %u failed\n", index,
            gst_tensor_mem_pbo_memory_get_buffer_id(mem));
    return FALSE;
  }
  gboolean ok = TRUE;
  if (row_offset + row_bytes > map.size) {
    fprintf(stderr,
            "sample %u: row 0 (%" G_GSIZE_FORMAT " + %" G_GSIZE_FORMAT " bytes) past the %" G_GSIZE_FORMAT
            "-byte map\n",
            index, row_offset, row_bytes, map.size);
    ok = FALSE;
  } else {
    printf("sample %u: GL buffer %u (worker %s), %" G_GSIZE_FORMAT " bytes mapped at %p, stride %d, "
           "row 0 checksum %08x\n",
           index, gst_tensor_mem_pbo_memory_get_buffer_id(mem), GST_OBJECT_NAME(worker), map.size, (void *)map.data, stride,
           checksum(map.data + row_offset, row_bytes));
  }
  gst_buffer_unmap(buffer, &map);
  return ok;
}

static int run(WorkerMode mode, guint num_buffers, guint width, guint height) {
  GError *error = NULL;
  GstTensorMemGlWorker *worker = NULL;
  if (mode != WORKER_AUTO) {
    worker = gst_tensor_mem_gl_worker_new(&error);
    if (!worker) {
      printf("SKIP: no headless GL context here: %s\n", error ? error->message : "unknown reason");
      g_clear_error(&error);
      return EXIT_SKIP;
    }
    printf("application GL worker %s: %s, \"%s\", \"%s\"\n", GST_OBJECT_NAME(worker),
           gst_tensor_mem_gl_worker_get_platform(worker), gst_tensor_mem_gl_worker_get_renderer(worker),
           gst_tensor_mem_gl_worker_get_version(worker));
  }

  gchar *description = g_strdup_printf("videotestsrc num-buffers=%u ! video/x-raw,format=RGBA,width=%u,height=%u ! "
                                       "tensorupload name=up storage=pbo ! "
                                       "appsink name=sink sync=false",
                                       num_buffers, width, height);
  printf("pipeline: %s\n", description);
  GstElement *pipeline = gst_parse_launch(description, &error);
  g_free(description);
  /* A missing element gives a partial pipeline *and* an error: both fail. */
  if (!pipeline || error) {
    fprintf(stderr, "cannot build the pipeline: %s (is GST_PLUGIN_PATH set to the build's gst/plugin?)\n",
            error ? error->message : "unknown reason");
    g_clear_error(&error);
    gst_clear_object(&pipeline);
    gst_clear_object(&worker);
    return 1;
  }

  GstBus *bus = gst_element_get_bus(pipeline);
  if (mode == WORKER_APP) {
    /* Every element of the pipeline (and any added later) gets the worker. */
    GstContext *context = gst_context_new_tensor_mem_gl_worker(worker, TRUE);
    gst_element_set_context(pipeline, context);
    gst_context_unref(context);
  } else if (mode == WORKER_NEED_CONTEXT) {
    gst_bus_set_sync_handler(bus, on_bus_sync, gst_object_ref(worker), gst_object_unref);
  }

  GstElement *up = gst_bin_get_by_name(GST_BIN(pipeline), "up");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  /* Only PBO memory is welcome: negotiation fails rather than falling back. */
  GstCaps *sink_caps = gst_caps_from_string("video/x-raw(" GST_CAPS_FEATURE_MEMORY_TENSOR_PBO ")");
  gst_app_sink_set_caps(GST_APP_SINK(sink), sink_caps);
  gst_caps_unref(sink_caps);
  int status = 0;
  guint pulled = 0;

  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    fprintf(stderr, "the pipeline refused to start\n");
    status = 1;
  }
  /* gst_app_sink_pull_sample() would wait forever after an element error
   * (no EOS follows one), so pull with a timeout and look at the bus in
   * between. */
  GstMessage *msg = NULL;
  while (status == 0) {
    GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 100 * GST_MSECOND);
    if (sample) {
      if (!check_sample(sample, pulled, worker))
        status = 1;
      ++pulled;
      gst_sample_unref(sample);
      continue;
    }
    if (gst_app_sink_is_eos(GST_APP_SINK(sink)))
      break;
    msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    if (msg)
      break;
  }

  /* An error message on the bus (storage=pbo without a worker, a refused
   * copy, caps nobody takes...) explains a short run. */
  if (!msg)
    msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  if (msg) {
    GError *err = NULL;
    gchar *debug = NULL;
    gst_message_parse_error(msg, &err, &debug);
    fprintf(stderr, "error from %s: %s\n%s\n", GST_MESSAGE_SRC_NAME(msg), err->message, debug ? debug : "");
    g_clear_error(&err);
    g_free(debug);
    gst_message_unref(msg);
    status = 1;
  }
  if (status == 0 && !gst_app_sink_is_eos(GST_APP_SINK(sink))) {
    fprintf(stderr, "the stream stopped before EOS\n");
    status = 1;
  }
  if (status == 0 && pulled != num_buffers) {
    fprintf(stderr, "pulled %u samples, expected %u\n", pulled, num_buffers);
    status = 1;
  }

  guint64 copied = 0;
  g_object_get(up, "copied-bytes", &copied, NULL);
  printf("tensorupload copied-bytes=%" G_GUINT64_FORMAT " over %u buffers\n", copied, pulled);
  if (copied != 0) {
    fprintf(stderr, "tensorupload copied: videotestsrc did not write into the proposed PBO pool\n");
    status = 1;
  }

  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(up);
  gst_bus_set_sync_handler(bus, NULL, NULL, NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  /* The GL thread stops once the last PBO memory and this reference are gone. */
  gst_clear_object(&worker);
  printf("%s\n", status == 0 ? "OK" : "FAILED");
  return status;
}

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  gst_tensor_mem_init();

  WorkerMode mode = WORKER_APP;
  guint numbers[3] = {30, 640, 480}; /* buffers, width, height */
  guint n_numbers = 0;
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    if (strcmp(arg, "--worker=app") == 0) {
      mode = WORKER_APP;
    } else if (strcmp(arg, "--worker=need-context") == 0) {
      mode = WORKER_NEED_CONTEXT;
    } else if (strcmp(arg, "--worker=auto") == 0) {
      mode = WORKER_AUTO;
    } else {
      char *end = NULL;
      const unsigned long value = strtoul(arg, &end, 10);
      if (n_numbers == 3 || !end || *end != '\0' || value == 0 || value > 16384) {
        fprintf(stderr, "usage: %s [--worker=app|need-context|auto] [NUM_BUFFERS [WIDTH [HEIGHT]]]\n", argv[0]);
        gst_deinit();
        return 2;
      }
      numbers[n_numbers++] = (guint)value;
    }
  }

  const int status = run(mode, numbers[0], numbers[1], numbers[2]);
  gst_deinit();
  return status;
}

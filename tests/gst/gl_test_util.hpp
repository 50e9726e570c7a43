// SPDX-License-Identifier: Apache-2.0
// The application-side GL worker the PBO tests share, and questions about the
// GL buffers in its context.
#pragma once

#include <gtest/gtest.h>

#include <gst/tensormem/tensormem.h>
#include <gst/tensormem/tensormem.hpp>
#include <tensormem/gl_worker.hpp>

#include <epoxy/gl.h>

#include <cstdio>
#include <string>

namespace tmtest {

/* One GL worker for the whole program (making an llvmpipe context is slow
 * under valgrind); null with `*why` set when no headless GL context can be
 * made. Tests that need a fresh worker make their own. */
inline GstTensorMemGlWorker *shared_worker(std::string *why) {
  static GstTensorMemGlWorker *worker = nullptr;
  static std::string reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    GError *error = nullptr;
    worker = gst_tensor_mem_gl_worker_new(&error);
    if (!worker) {
      reason = error ? error->message : "unknown";
      g_clear_error(&error);
    } else {
      std::printf("GL worker: %s, \"%s\", %s\n", gst_tensor_mem_gl_worker_get_platform(worker),
                  gst_tensor_mem_gl_worker_get_renderer(worker), gst_tensor_mem_gl_worker_get_version(worker));
    }
  }
  *why = reason;
  return worker;
}

/* Releases the shared worker before gst_deinit, so leak checkers see the GL
 * thread stopped. */
class SharedWorkerRelease : public ::testing::Environment {
public:
  void TearDown() override {
    std::string why;
    if (GstTensorMemGlWorker *worker = shared_worker(&why))
      gst_object_unref(worker);
  }
};
inline const auto *const g_shared_worker_release = ::testing::AddGlobalTestEnvironment(new SharedWorkerRelease);

/* Hands the program's shared GL worker to every element of `element` (a
 * pipeline or bin) through a GstContext: an llvmpipe context per pipeline
 * is slow under valgrind. */
inline void share_gl_worker(GstElement *element) {
  std::string why;
  GstContext *context = gst_context_new_tensor_mem_gl_worker(shared_worker(&why), TRUE);
  gst_element_set_context(element, context);
  gst_context_unref(context);
}

/* Whether GL name `id` is a live buffer of the worker's context. */
inline bool is_gl_buffer(GstTensorMemGlWorker *worker, guint id) {
  bool alive = false;
  EXPECT_TRUE(gst_tensor_mem_gl_worker_get_core_gl_worker(worker)->submit([&] { alive = glIsBuffer(id); }));
  return alive;
}

/* GL buffers alive in the worker's context among names 1..limit (names are
 * handed out from 1 upwards and the tests make few). */
inline int live_gl_buffers(GstTensorMemGlWorker *worker, guint limit = 4096) {
  int live = 0;
  EXPECT_TRUE(gst_tensor_mem_gl_worker_get_core_gl_worker(worker)->submit([&] {
    for (guint id = 1; id <= limit; ++id)
      live += glIsBuffer(id) ? 1 : 0;
  }));
  return live;
}

} // namespace tmtest

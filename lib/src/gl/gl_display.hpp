// SPDX-License-Identifier: Apache-2.0
// Private to the GL folder: an initialised EGL display and the headless
// context a GL worker makes on it.
#pragma once

#include <tensormem/gl_worker.hpp>

#include <epoxy/egl.h>

#include <memory>

namespace tensormem {

/// One eglInitialize of a display, undone by the last holder. EGL displays
/// are per-platform singletons without a reference count of their own, so
/// the count of live holders per display is kept here: terminating while a
/// second worker (or a fence) still used the display would pull its context
/// away.
class GlDisplay {
public:
  /// eglInitialize, counted. Device error with the EGL error code on failure.
  static Result<std::shared_ptr<GlDisplay>> initialize(EGLDisplay display);
  /// A display another library initialised and terminates (GstGL's, for a
  /// worker that shares its context): eglInitialize (a no-op on an
  /// initialised display), never eglTerminate, and not counted among ours.
  static Result<std::shared_ptr<GlDisplay>> borrow(EGLDisplay display);
  ~GlDisplay();
  GlDisplay(const GlDisplay &) = delete;
  GlDisplay &operator=(const GlDisplay &) = delete;

  EGLDisplay get() const noexcept { return display_; }
  bool has_extension(const char *name) const noexcept;

  /// The EGL_KHR_fence_sync / EGL_KHR_wait_sync entry points, resolved once
  /// through eglGetProcAddress. libepoxy's own dispatch checks the extension
  /// against the calling thread's current display, which a waiter on another
  /// thread (or a fence outliving its worker) does not have. Null when absent.
  struct SyncFns {
    PFNEGLCREATESYNCKHRPROC create = nullptr;
    PFNEGLDESTROYSYNCKHRPROC destroy = nullptr;
    PFNEGLCLIENTWAITSYNCKHRPROC client_wait = nullptr;
    PFNEGLGETSYNCATTRIBKHRPROC get_attrib = nullptr;
    PFNEGLWAITSYNCKHRPROC server_wait = nullptr;
  };
  const SyncFns &sync() const noexcept { return sync_; }

  struct Token {};
  GlDisplay(Token, EGLDisplay display, bool borrowed = false) noexcept : display_(display), borrowed_(borrowed) {}

private:
  void resolve_sync_fns();

  EGLDisplay display_;
  bool borrowed_ = false;
  SyncFns sync_;
};

/// A context current on the calling thread, and what it is.
struct HeadlessContext {
  std::shared_ptr<GlDisplay> display;
  EGLContext context = EGL_NO_CONTEXT;
  EGLSurface surface = EGL_NO_SURFACE;
  GlInfo info;
};

/// Makes a context without a window and makes it current on this thread
/// (the platform and API ladder of GlWorker). The error names every platform
/// tried and why each failed.
Result<HeadlessContext> make_headless_context();
/// A context without a window on `display` (borrowed) sharing objects with
/// `share` (a context of another library on that display), current on this
/// thread; the API ladder of make_headless_context. `platform` names it in
/// GlInfo.
Result<HeadlessContext> make_sharing_context(EGLDisplay display, EGLContext share, const char *platform);
/// Releases and destroys what make_headless_context made (on the same thread).
void destroy_headless_context(HeadlessContext &ctx) noexcept;

/// "EGL_BAD_ALLOC (0x3003)"-style text of the last EGL error.
std::string egl_error_text();

/// After an EGL call on a thread where no context is current (a streaming
/// thread waiting on a fence, the thread that drops the last fence), drops
/// the EGL state that call made for the thread. libglvnd frees that state
/// when the thread exits; a thread of GStreamer's pool exiting while the
/// process exits then ran that teardown inside a libEGL already being
/// unloaded, and the process crashed after main() had returned. A thread
/// with a current context (the worker, an application's GL thread) keeps
/// its state: releasing would take its context away.
void release_egl_thread_state() noexcept;

} // namespace tensormem

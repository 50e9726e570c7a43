// SPDX-License-Identifier: Apache-2.0
#include "gl_display.hpp"

#include <tensormem/log.hpp>

#include <epoxy/gl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace tensormem {
namespace {

// Live holders per initialised display (see GlDisplay). Never destroyed: a
// worker dropped from its own task finishes on a detached thread, which may
// still be letting go of its display while the process runs its exit-time
// destructors.
std::mutex &display_mu() {
  static auto *mu = new std::mutex;
  return *mu;
}
std::map<EGLDisplay, int> &display_holders() {
  static auto *holders = new std::map<EGLDisplay, int>;
  return *holders;
}

// release_egl_thread_state() calls that released something, for
// GlWorker::egl_thread_releases().
std::atomic<std::uint64_t> g_egl_thread_releases{0};

bool has_token(const char *list, const char *name) noexcept {
  if (!list || !name)
    return false;
  const std::size_t n = std::strlen(name);
  for (const char *p = list; (p = std::strstr(p, name)) != nullptr; p += n) {
    const bool starts = p == list || p[-1] == ' ';
    const bool ends = p[n] == '\0' || p[n] == ' ';
    if (starts && ends)
      return true;
  }
  return false;
}

const char *client_extensions() noexcept {
  const char *list = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  if (!list)
    (void)eglGetError(); // EGL without client extensions reports EGL_BAD_DISPLAY here
  return list;
}

/* TENSORMEM_GL_PERSISTENT_MAPS=0 keeps PBOs on per-map glMapBufferRange even
 * where the GL offers buffer storage: the tests run both paths, and a driver
 * whose persistent maps misbehave can be worked around without a rebuild. */
bool persistent_maps_allowed() {
  const char *value = std::getenv("TENSORMEM_GL_PERSISTENT_MAPS");
  return !value || std::string_view(value) != "0";
}

Result<HeadlessContext> context_on(std::shared_ptr<GlDisplay> display, const char *platform, bool want_desktop,
                                   EGLContext share = EGL_NO_CONTEXT) {
  EGLDisplay dpy = display->get();
  const bool no_config =
      display->has_extension("EGL_KHR_no_config_context") || display->has_extension("EGL_MESA_configless_context");
  const bool surfaceless = display->has_extension("EGL_KHR_surfaceless_context");
  const bool versioned = display->has_extension("EGL_KHR_create_context");
  const char *what = want_desktop ? "desktop GL 3.3 core" : "GLES 3";

  if (want_desktop && !versioned)
    return Error::device(std::string(what) + ": EGL_KHR_create_context is missing");
  if (!eglBindAPI(want_desktop ? EGL_OPENGL_API : EGL_OPENGL_ES_API))
    return Error::device(std::string(what) + ": eglBindAPI: " + egl_error_text());

  EGLConfig config = EGL_NO_CONFIG_KHR;
  if (!(no_config && surfaceless)) {
    const EGLint renderable = want_desktop ? EGL_OPENGL_BIT : EGL_OPENGL_ES3_BIT_KHR;
    const EGLint wanted[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, renderable, EGL_NONE};
    EGLint count = 0;
    if (!eglChooseConfig(dpy, wanted, &config, 1, &count) || count < 1)
      return Error::device(std::string(what) + ": no pbuffer config: " + egl_error_text());
  }

  const EGLint desktop_attrs[] = {EGL_CONTEXT_MAJOR_VERSION_KHR,
                                  3,
                                  EGL_CONTEXT_MINOR_VERSION_KHR,
                                  3,
                                  EGL_CONTEXT_OPENGL_PROFILE_MASK_KHR,
                                  EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT_KHR,
                                  EGL_NONE};
  const EGLint gles_attrs[] = {EGL_CONTEXT_CLIENT_VERSION, 3, EGL_NONE};
  EGLContext context = eglCreateContext(dpy, config, share, want_desktop ? desktop_attrs : gles_attrs);
  if (context == EGL_NO_CONTEXT)
    return Error::device(std::string(what) + ": eglCreateContext: " + egl_error_text());

  EGLSurface surface = EGL_NO_SURFACE;
  if (!surfaceless) {
    const EGLint size[] = {EGL_WIDTH, 1, EGL_HEIGHT, 1, EGL_NONE};
    surface = eglCreatePbufferSurface(dpy, config, size);
    if (surface == EGL_NO_SURFACE) {
      std::string why = egl_error_text();
      eglDestroyContext(dpy, context);
      return Error::device(std::string(what) + ": eglCreatePbufferSurface: " + why);
    }
  }
  HeadlessContext made{std::move(display), context, surface, {}};
  if (!eglMakeCurrent(dpy, surface, surface, context)) {
    std::string why = egl_error_text();
    destroy_headless_context(made);
    return Error::device(std::string(what) + ": eglMakeCurrent: " + why);
  }

  const int version = epoxy_gl_version();
  const bool desktop = epoxy_is_desktop_gl();
  // glMapBufferRange and pixel buffer objects need GL 3.0 / GLES 3.0; the
  // desktop context must also be the 3.3+ core profile asked for.
  if (desktop != want_desktop || version < (want_desktop ? 33 : 30)) {
    destroy_headless_context(made);
    return Error::device(std::string(what) + ": the context reports version " + std::to_string(version / 10) + "." +
                         std::to_string(version % 10) + (desktop ? " (desktop)" : " (ES)"));
  }

  GlInfo &info = made.info;
  info.platform = platform;
  info.api = desktop ? GlApi::DesktopCore : GlApi::Gles;
  info.major = version / 10;
  info.minor = version % 10;
  auto text = [](GLenum name) {
    const GLubyte *s = glGetString(name);
    return s ? std::string(reinterpret_cast<const char *>(s)) : std::string("?");
  };
  info.renderer = text(GL_RENDERER);
  info.version = text(GL_VERSION);
  const GlDisplay::SyncFns &sync = made.display->sync();
  info.fence_sync = sync.create && sync.destroy && sync.client_wait && sync.get_attrib;
  info.wait_sync = info.fence_sync && sync.server_wait;
  const bool buffer_storage = desktop ? (version >= 44 || epoxy_has_gl_extension("GL_ARB_buffer_storage"))
                                      : epoxy_has_gl_extension("GL_EXT_buffer_storage");
  info.persistent_maps = buffer_storage && persistent_maps_allowed();
  return made;
}

/* TENSORMEM_GL_PLATFORMS (a comma list of surfaceless, device, default) and
 * TENSORMEM_GL_API (desktop or gles) narrow the search: to force a GPU's EGL
 * device on a machine with several EGL vendors, and to exercise every fallback
 * in tests. Unset, everything is tried in order. */
bool platform_allowed(const char *platform) {
  const char *list = std::getenv("TENSORMEM_GL_PLATFORMS");
  if (!list || !*list)
    return true;
  std::string_view rest(list);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    if (rest.substr(0, comma) == platform)
      return true;
    if (comma == std::string_view::npos)
      break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

bool api_allowed(bool desktop) {
  const char *api = std::getenv("TENSORMEM_GL_API");
  if (!api || !*api)
    return true;
  return std::string_view(api) == (desktop ? "desktop" : "gles");
}

Result<HeadlessContext> context_on(EGLDisplay raw, const char *platform, EGLContext share = EGL_NO_CONTEXT) {
  if (raw == EGL_NO_DISPLAY)
    return Error::device("no display: " + egl_error_text());
  Result<std::shared_ptr<GlDisplay>> display =
      share == EGL_NO_CONTEXT ? GlDisplay::initialize(raw) : GlDisplay::borrow(raw);
  if (!display)
    return std::move(display).error();
  std::string failures;
  for (bool desktop : {true, false}) {
    if (!api_allowed(desktop)) {
      failures += std::string(failures.empty() ? "" : "; ") + (desktop ? "desktop GL" : "GLES") +
                  " skipped by TENSORMEM_GL_API";
      continue;
    }
    Result<HeadlessContext> ctx = context_on(*display, platform, desktop, share);
    if (ctx)
      return ctx;
    failures += std::string(failures.empty() ? "" : "; ") + ctx.error().message();
  }
  return Error::device(failures);
}

} // namespace

std::string egl_error_text() {
  const EGLint code = eglGetError();
  const char *name = "EGL error";
  switch (code) {
  case EGL_SUCCESS: name = "EGL_SUCCESS"; break;
  case EGL_NOT_INITIALIZED: name = "EGL_NOT_INITIALIZED"; break;
  case EGL_BAD_ACCESS: name = "EGL_BAD_ACCESS"; break;
  case EGL_BAD_ALLOC: name = "EGL_BAD_ALLOC"; break;
  case EGL_BAD_ATTRIBUTE: name = "EGL_BAD_ATTRIBUTE"; break;
  case EGL_BAD_CONFIG: name = "EGL_BAD_CONFIG"; break;
  case EGL_BAD_CONTEXT: name = "EGL_BAD_CONTEXT"; break;
  case EGL_BAD_DISPLAY: name = "EGL_BAD_DISPLAY"; break;
  case EGL_BAD_MATCH: name = "EGL_BAD_MATCH"; break;
  case EGL_BAD_PARAMETER: name = "EGL_BAD_PARAMETER"; break;
  case EGL_BAD_SURFACE: name = "EGL_BAD_SURFACE"; break;
  default: break;
  }
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%04x", static_cast<unsigned>(code));
  return std::string(name) + " (" + hex + ")";
}

void release_egl_thread_state() noexcept {
  if (eglGetCurrentContext() != EGL_NO_CONTEXT)
    return;
  eglReleaseThread();
  g_egl_thread_releases.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t GlWorker::egl_thread_releases() noexcept { return g_egl_thread_releases.load(std::memory_order_relaxed); }

Result<std::shared_ptr<GlDisplay>> GlDisplay::initialize(EGLDisplay display) {
  std::lock_guard lock(display_mu());
  int &holders = display_holders()[display];
  if (holders == 0) {
    EGLint major = 0, minor = 0;
    if (!eglInitialize(display, &major, &minor)) {
      display_holders().erase(display);
      return Error::device("eglInitialize: " + egl_error_text());
    }
  }
  ++holders;
  auto made = std::make_shared<GlDisplay>(Token{}, display);
  made->resolve_sync_fns();
  return made;
}

Result<std::shared_ptr<GlDisplay>> GlDisplay::borrow(EGLDisplay display) {
  EGLint major = 0, minor = 0;
  if (!eglInitialize(display, &major, &minor))
    return Error::device("eglInitialize of the shared display: " + egl_error_text());
  auto made = std::make_shared<GlDisplay>(Token{}, display, true);
  made->resolve_sync_fns();
  return made;
}

void GlDisplay::resolve_sync_fns() {
  if (has_extension("EGL_KHR_fence_sync")) {
    sync_.create = reinterpret_cast<PFNEGLCREATESYNCKHRPROC>(eglGetProcAddress("eglCreateSyncKHR"));
    sync_.destroy = reinterpret_cast<PFNEGLDESTROYSYNCKHRPROC>(eglGetProcAddress("eglDestroySyncKHR"));
    sync_.client_wait = reinterpret_cast<PFNEGLCLIENTWAITSYNCKHRPROC>(eglGetProcAddress("eglClientWaitSyncKHR"));
    sync_.get_attrib = reinterpret_cast<PFNEGLGETSYNCATTRIBKHRPROC>(eglGetProcAddress("eglGetSyncAttribKHR"));
  }
  if (has_extension("EGL_KHR_wait_sync"))
    sync_.server_wait = reinterpret_cast<PFNEGLWAITSYNCKHRPROC>(eglGetProcAddress("eglWaitSyncKHR"));
}

GlDisplay::~GlDisplay() {
  if (borrowed_)
    return; // its owner terminates it
  std::lock_guard lock(display_mu());
  auto it = display_holders().find(display_);
  if (it == display_holders().end())
    return;
  if (--it->second == 0) {
    display_holders().erase(it);
    eglTerminate(display_);
    release_egl_thread_state();
  }
}

bool GlDisplay::has_extension(const char *name) const noexcept {
  return has_token(eglQueryString(display_, EGL_EXTENSIONS), name);
}

Result<HeadlessContext> make_headless_context() {
  std::string tried;
  auto note = [&](const char *platform, const Error &error) {
    tried += std::string(tried.empty() ? "" : "; ") + platform + ": " + error.message();
  };
  const char *client = client_extensions();
  const bool platform_base = has_token(client, "EGL_EXT_platform_base");

  const Error skipped = Error::device("skipped by TENSORMEM_GL_PLATFORMS");
  if (!platform_allowed("surfaceless")) {
    note("EGL_MESA_platform_surfaceless", skipped);
  } else if (platform_base && has_token(client, "EGL_MESA_platform_surfaceless")) {
    Result<HeadlessContext> ctx = context_on(
        eglGetPlatformDisplayEXT(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr), "surfaceless");
    if (ctx)
      return ctx;
    note("EGL_MESA_platform_surfaceless", ctx.error());
  } else {
    note("EGL_MESA_platform_surfaceless", Error::device("not offered by this EGL"));
  }

  if (!platform_allowed("device")) {
    note("EGL_EXT_platform_device", skipped);
  } else if (platform_base && has_token(client, "EGL_EXT_platform_device") &&
             (has_token(client, "EGL_EXT_device_enumeration") || has_token(client, "EGL_EXT_device_base"))) {
    EGLDeviceEXT device = nullptr;
    EGLint count = 0;
    if (eglQueryDevicesEXT(1, &device, &count) && count > 0) {
      Result<HeadlessContext> ctx =
          context_on(eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, device, nullptr), "device");
      if (ctx)
        return ctx;
      note("EGL_EXT_platform_device", ctx.error());
    } else {
      note("EGL_EXT_platform_device", Error::device("no EGL device: " + egl_error_text()));
    }
  } else {
    note("EGL_EXT_platform_device", Error::device("not offered by this EGL"));
  }

  if (!platform_allowed("default")) {
    note("eglGetDisplay(EGL_DEFAULT_DISPLAY)", skipped);
  } else {
    Result<HeadlessContext> ctx = context_on(eglGetDisplay(EGL_DEFAULT_DISPLAY), "default");
    if (ctx)
      return ctx;
    note("eglGetDisplay(EGL_DEFAULT_DISPLAY)", ctx.error());
  }
  return Error::device("GL worker: no headless EGL context could be made (" + tried + ")");
}

Result<HeadlessContext> make_sharing_context(EGLDisplay display, EGLContext share, const char *platform) {
  if (share == EGL_NO_CONTEXT)
    return Error::invalid_argument("GL worker: no context to share objects with");
  Result<HeadlessContext> ctx = context_on(display, platform, share);
  if (!ctx)
    return Error::device("GL worker: no context sharing the given EGL context could be made (" + ctx.error().message() +
                         ")");
  return ctx;
}

void destroy_headless_context(HeadlessContext &ctx) noexcept {
  if (!ctx.display)
    return;
  EGLDisplay dpy = ctx.display->get();
  eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  if (ctx.surface != EGL_NO_SURFACE)
    eglDestroySurface(dpy, ctx.surface);
  if (ctx.context != EGL_NO_CONTEXT)
    eglDestroyContext(dpy, ctx.context);
  ctx.surface = EGL_NO_SURFACE;
  ctx.context = EGL_NO_CONTEXT;
  ctx.display.reset();
  eglReleaseThread();
}

} // namespace tensormem

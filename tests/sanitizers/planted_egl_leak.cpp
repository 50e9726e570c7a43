// SPDX-License-Identifier: Apache-2.0
// Proves that tests/sanitizers/lsan.supp is narrow: it hides what Mesa's EGL
// driver leaks during its own one-time initialisation, but not a leak of ours
// that sits right behind EGL calls. Run by check_planted_leak.py in the ASan
// build only:
//   planted-egl-leak --plant    starts the GL worker (eglInitialize and
//                               context creation in the driver), then leaks
//                               a copy of an EGL string from a task on the
//                               GL thread: LeakSanitizer must report it
//   planted-egl-leak --clean    the same without the planted leak: nothing
//                               may be reported (the driver's leaks are
//                               suppressed)
#include "../gl_driver_pin.hpp"

#include <tensormem/gl_worker.hpp>

#include <epoxy/egl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

// Not static and not inlined, so the leak's stack names it.
__attribute__((noinline)) void *planted_leak_behind_egl() {
  const char *extensions = eglQueryString(eglGetCurrentDisplay(), EGL_EXTENSIONS);
  const std::size_t len = extensions != nullptr ? std::strlen(extensions) : 0;
  auto *copy = static_cast<char *>(std::malloc(len + 4242));
  if (extensions != nullptr)
    std::memcpy(copy, extensions, len + 1);
  return copy;
}

// Where the pointer is dropped: after this returns nothing refers to it.
void *volatile g_sink = nullptr;

} // namespace

int main(int argc, char **argv) {
  if (argc != 2 || (std::string_view(argv[1]) != "--plant" && std::string_view(argv[1]) != "--clean")) {
    std::fprintf(stderr, "usage: %s --plant|--clean\n", argv[0]);
    return 2;
  }
  const bool plant = std::string_view(argv[1]) == "--plant";
  // As every test program does: the driver stays mapped, so its frames are named.
  tmtest::pin_gl_drivers();
  auto worker = tensormem::GlWorker::create();
  if (!worker) {
    std::printf("SKIP: no headless GL here: %s\n", worker.error().message().c_str());
    return 77;
  }
  if (plant) {
    auto done = (*worker)->submit([] { g_sink = planted_leak_behind_egl(); });
    if (!done) {
      std::fprintf(stderr, "GL task failed: %s\n", done.error().message().c_str());
      return 1;
    }
    g_sink = nullptr;
  }
  (*worker)->shutdown();
  std::printf("GL worker started on %s; %s\n", (*worker)->info().renderer.c_str(),
              plant ? "a leak was planted" : "nothing was planted");
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
#include "gl_driver_pin.hpp"

#include <dlfcn.h>
#include <link.h>

#include <array>
#include <cstdlib>
#include <string>

namespace tmtest {

namespace {

// Opens `path` once more with RTLD_NODELETE: the object then stays mapped
// until the process exits, whoever closes it. Failing is harmless (no Mesa,
// another driver layout): the test then runs as before.
void *keep_mapped(const std::string &path) { return dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE); }

// The folder Mesa loads its DRI drivers from: LIBGL_DRIVERS_PATH when set
// (Mesa's own override; the first entry), else "dri" beside libEGL_mesa.
std::string driver_dir(void *egl_mesa) {
  if (const char *env = std::getenv("LIBGL_DRIVERS_PATH"); env != nullptr && *env != '\0') {
    std::string dirs = env;
    return dirs.substr(0, dirs.find(':'));
  }
  link_map *map = nullptr;
  if (dlinfo(egl_mesa, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr)
    return {};
  std::string lib = map->l_name;
  const auto slash = lib.rfind('/');
  return slash == std::string::npos ? std::string() : lib.substr(0, slash) + "/dri";
}

} // namespace

void pin_gl_drivers() {
  // Only LeakSanitizer needs the frames named: other runs (valgrind above
  // all, which would read the driver's and LLVM's symbols in every program)
  // do not pay for loading the driver up front.
  if (dlsym(RTLD_DEFAULT, "__lsan_do_leak_check") == nullptr)
    return;
  // glvnd's vendor library for Mesa: it makes the EGL displays and contexts.
  void *egl_mesa = keep_mapped("libEGL_mesa.so.0");
  if (egl_mesa == nullptr)
    return;
  const std::string dir = driver_dir(egl_mesa);
  if (dir.empty())
    return;
  // The software drivers headless EGL loads (surfaceless and the software
  // device: swrast; a render node without a GPU driver: kms_swrast). With
  // Mesa 24+ both are the same file linking libgallium, which stays mapped
  // with them.
  for (const char *driver : std::array{"swrast_dri.so", "kms_swrast_dri.so"})
    keep_mapped(dir + "/" + driver);
}

} // namespace tmtest

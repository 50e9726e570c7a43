// SPDX-License-Identifier: Apache-2.0
// Keeps Mesa's EGL vendor library (libEGL_mesa) and its software DRI drivers
// mapped until the process exits.
//
// Why: Mesa's driver allocates once per process during eglInitialize and
// context creation and keeps it; when the last EGL display is terminated
// glvnd and the EGL driver unload the DRI driver, so by the time
// LeakSanitizer symbolises at exit those frames show as "<unknown module>"
// and whether a suppression matches depends on which frames of other
// libraries happen to sit on the stack. With the driver kept mapped every
// such stack names the driver, and tests/sanitizers/lsan.supp suppresses by
// the driver's modules only (tests/sanitizers/check_planted_leak.py proves a
// leak of ours behind EGL calls is still reported).
//
// Called first thing in every Linux test program's main() (tests/gtest_main.cpp)
// and in tests/sanitizers/planted_egl_leak.cpp; it does something only in a
// program with LeakSanitizer (the ASan build). Loading a driver early changes
// nothing else: Mesa's own dlopen later finds the same object.
#pragma once

namespace tmtest {

void pin_gl_drivers();

} // namespace tmtest

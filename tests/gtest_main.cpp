// SPDX-License-Identifier: Apache-2.0
/* The main() of every Linux test program.
 *
 * scripts/test.sh collects GoogleTest's JSON reports by pointing
 * GTEST_OUTPUT at a directory ("json:DIR/"). GoogleTest then names the report
 * after the program and, when that file exists, picks "<program>_1.json"
 * and so on; but it checks and writes without a lock, so two meson tests of
 * one program running side by side (gst-bad-input and gst-bad-input-cuda, the
 * CUDA suites run once per API) can both choose "<program>.json" and one
 * report overwrites the other, which made the counted total vary between runs
 * of the same tree. Here a directory output is turned into a file name that
 * no other process can choose: "<program>.pid<N>.json". An explicit file name
 * (GTEST_OUTPUT naming a file, or a --gtest_output argument, which
 * InitGoogleTest applies after this) is left alone. */
#include "gl_driver_pin.hpp"

#include <gtest/gtest.h>

#include <string>
#include <unistd.h>

int main(int argc, char **argv) {
  // Before any test can start EGL (see gl_driver_pin.hpp).
  tmtest::pin_gl_drivers();
  // Before InitGoogleTest: that is where GoogleTest opens its report
  // listener with the file name the flag holds at that moment.
  const std::string output = GTEST_FLAG_GET(output);
  if (output.size() > 5 && output.rfind("json:", 0) == 0 && output.back() == '/') {
    std::string program = argc > 0 ? argv[0] : "test";
    if (auto slash = program.rfind('/'); slash != std::string::npos)
      program.erase(0, slash + 1);
    GTEST_FLAG_SET(output, output + program + ".pid" + std::to_string(getpid()) + ".json");
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

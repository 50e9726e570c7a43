// SPDX-License-Identifier: Apache-2.0
// GoogleTest's main for a program that meson runs case by case through
// --gtest_filter (the Windows loader cases): a filter that matches no test
// fails the run instead of passing it with nothing run, so a renamed case
// cannot drop out unseen. (Debian's GoogleTest 1.12 has no flag for this.)
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int status = RUN_ALL_TESTS();
  if (!GTEST_FLAG_GET(list_tests) && ::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    std::fprintf(stderr, "no test matches --gtest_filter=%s\n", GTEST_FLAG_GET(filter).c_str());
    return 1;
  }
  return status;
}

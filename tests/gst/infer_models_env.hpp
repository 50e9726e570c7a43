// SPDX-License-Identifier: Apache-2.0
/* The ONNX models of tensorinfer's tests (tests/gst/infer_models.py), made
 * once per test program in a directory removed at exit, for every program
 * that runs them (test_infer.cpp, test_detect_ball.cpp); and the program
 * runner both use. meson gives the script and Debian's python3 in
 * TENSORMEM_TEST_INFER_MODELS / TENSORMEM_TEST_PYTHON. Include it in one
 * unit per program: it registers the gtest environment. */
#pragma once

#include <gtest/gtest.h>

#include <glib.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>
#include <vector>

namespace infertest {

inline constexpr int kSkipCode = 77;

/* Runs a program (`args`, its path first): its exit status and standard
 * output (the skip reason when it exits 77). */
inline int run_program(const std::vector<std::string> &args, std::string *out) {
  std::vector<gchar *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<gchar *>(a.c_str()));
  argv.push_back(nullptr);
  gchar *stdout_text = nullptr;
  gint status = 0;
  GError *error = nullptr;
  // Debian's ONNX packages print a screen of "Schema error" lines on stderr: dropped.
  const gboolean spawned = g_spawn_sync(nullptr, argv.data(), nullptr, G_SPAWN_STDERR_TO_DEV_NULL, nullptr, nullptr,
                                        &stdout_text, nullptr, &status, &error);
  if (!spawned) {
    *out = error->message;
    g_error_free(error);
    return -1;
  }
  *out = stdout_text ? stdout_text : "";
  g_free(stdout_text);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs `python3 tests/gst/infer_models.py ARGS...`. */
inline int run_script(const std::vector<std::string> &args, std::string *out) {
  const char *python = g_getenv("TENSORMEM_TEST_PYTHON");
  const char *script = g_getenv("TENSORMEM_TEST_INFER_MODELS");
  if (!python || !script) {
    *out = "TENSORMEM_TEST_PYTHON / TENSORMEM_TEST_INFER_MODELS are not set (run through meson test)";
    return -1;
  }
  std::vector<std::string> argv = {python, script};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, out);
}

/* The models, made once per program in a directory removed at exit. */
class Models : public ::testing::Environment {
public:
  static Models *get() { return instance_; }
  void SetUp() override {
    instance_ = this;
    gchar *dir = g_dir_make_tmp("infer-models-XXXXXX", nullptr);
    dir_ = dir ? dir : "";
    g_free(dir);
    std::string out;
    const int status = run_script({"make", dir_}, &out);
    if (status == kSkipCode)
      skip_ = out.empty() ? "the model script skipped" : out;
    else if (status != 0)
      error_ = "infer_models.py make failed (" + std::to_string(status) + "): " + out;
  }
  void TearDown() override {
    if (!dir_.empty())
      std::filesystem::remove_all(dir_);
  }
  std::string path(const char *name) const { return dir_ + "/" + name; }
  const std::string &dir() const { return dir_; }
  const std::string &skip() const { return skip_; }
  const std::string &error() const { return error_; }

private:
  static inline Models *instance_ = nullptr;
  std::string dir_, skip_, error_;
};

inline const auto *const g_models = ::testing::AddGlobalTestEnvironment(new Models);

} // namespace infertest

/* In a test: fails where the models could not be made, skips (saying why)
 * where the script skipped. */
#define REQUIRE_MODELS()                                                                                               \
  do {                                                                                                                 \
    ASSERT_TRUE(infertest::Models::get()->error().empty()) << infertest::Models::get()->error();                       \
    if (!infertest::Models::get()->skip().empty())                                                                     \
      GTEST_SKIP() << infertest::Models::get()->skip();                                                                \
  } while (0)

namespace infertest {

inline std::string model(const char *name) { return Models::get()->path(name); }

} // namespace infertest

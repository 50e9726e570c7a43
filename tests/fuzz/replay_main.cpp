// SPDX-License-Identifier: Apache-2.0
/* The main() of a fuzz target in the ordinary build (any compiler, no
 * libFuzzer): runs LLVMFuzzerTestOneInput once on every file of the
 * directories (or files) named on the command line, in name order, so the
 * seed corpus and every input that ever crashed run in the normal suites.
 *
 *   fuzz-replay-NAME [--optional] PATH...
 *
 * A PATH after --optional may be missing (tests/fuzz/regressions/NAME before
 * the target's first regression). The run fails when a required PATH is
 * missing or when it ran no input at all; a broken invariant aborts. */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

namespace fs = std::filesystem;

namespace {

bool run_file(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
  // A copy of exactly the input's size, as libFuzzer passes it, so a read
  // past the end is caught under ASan and valgrind.
  std::vector<std::uint8_t> exact(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(exact.empty() ? nullptr : exact.data(), exact.size());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize != nullptr)
    LLVMFuzzerInitialize(&argc, &argv);
  bool optional = false, ok = true;
  std::size_t runs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--optional") {
      optional = true;
      continue;
    }
    std::error_code ec;
    const fs::path path(arg);
    if (fs::is_directory(path, ec)) {
      std::vector<fs::path> files;
      for (const fs::directory_entry &e : fs::directory_iterator(path, ec))
        if (e.is_regular_file() && e.path().filename().string().front() != '.')
          files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const fs::path &f : files)
        if (run_file(f))
          ++runs;
        else
          ok = false;
      std::printf("replay: %zu input(s) from %s\n", files.size(), arg.c_str());
    } else if (fs::is_regular_file(path, ec)) {
      if (run_file(path))
        ++runs;
      else
        ok = false;
    } else if (!optional) {
      std::fprintf(stderr, "replay: %s does not exist\n", arg.c_str());
      ok = false;
    }
  }
  if (runs == 0) {
    std::fprintf(stderr, "replay: no input ran\n");
    return 1;
  }
  std::printf("replay: %zu input(s), every invariant held\n", runs);
  return ok ? 0 : 1;
}

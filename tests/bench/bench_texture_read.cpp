// SPDX-License-Identifier: Apache-2.0
// GstGL interop's texture readback, path by path: a 1080p (and a 64×64)
// RGBA8 texture read into a PBO by each GlWorker::TextureRead path this
// context has, side by side with what a GstGL user runs instead (gldownload's
// CPU map reads the texture into client memory with glGetTexImage on desktop
// GL, glReadPixels on GLES) and with a plain memcpy of the frame. Each
// iteration is the read plus a glFinish, so the time is until the bytes are
// in the buffer. Every path's bytes are checked against the texture once.
// Prints a table; asserts nothing. Exits 77 (skip) without a headless GL
// context.
//
// Usage (N reads a figure, default 100; best of BATCHES, default 3):
//   build/tests/bench/bench-texture-read [N [BATCHES]]
#include "bench_util.hpp"

#include <tensormem/gl_worker.hpp>
#include <tensormem/pbo_storage.hpp>
#include <tensormem/tensormem.hpp>

#include <epoxy/gl.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace tensormem;
using namespace tmbench;

namespace {

[[noreturn]] void die(const std::string &what) { tmbench::die("bench-texture-read", what); }

/* Texel (x, y) of the test texture: every byte distinct enough that a swap
 * of channels, rows or columns shows. */
std::uint32_t texel(std::uint32_t x, std::uint32_t y) {
  return (x & 0xffu) | ((y & 0xffu) << 8) | (((x >> 8) ^ (y >> 8) ^ 0x5au) & 0xffu) << 16 |
         ((x * 7u + y * 13u) & 0xffu) << 24;
}

void run_size(const std::shared_ptr<GlWorker> &worker, std::uint32_t width, std::uint32_t height, int n) {
  const std::size_t bytes = std::size_t{width} * height * 4;
  std::vector<std::uint32_t> pixels(std::size_t{width} * height);
  for (std::uint32_t y = 0; y < height; ++y)
    for (std::uint32_t x = 0; x < width; ++x)
      pixels[std::size_t{y} * width + x] = texel(x, y);
  GLuint texture = 0;
  if (!worker->submit([&] {
        glGenTextures(1, &texture);
        glBindTexture(GL_TEXTURE_2D, texture);
        glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, static_cast<GLsizei>(width), static_cast<GLsizei>(height), 0, GL_RGBA,
                     GL_UNSIGNED_BYTE, pixels.data());
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR); // as GstGL's
        glBindTexture(GL_TEXTURE_2D, 0);
      }))
    die("making the texture");
  Result<Tensor> made = worker->create_pbo(bytes, Shape{{height, width, 4}}, DType::U8, "bench", PboUsage::Download);
  if (!made)
    die("create_pbo: " + made.error().message());
  const std::shared_ptr<PboStorage> pbo = pbo_storage_of(*made);

  std::printf("\n%ux%u RGBA8 texture (%zu bytes), median of %d, best of %d batches:\n", width, height, bytes, n,
              g_batches);
  std::printf("| what | µs per frame | GB/s | bytes |\n|---|---|---|---|\n");
  auto row = [&](const char *what, const Stats &s, const char *check) {
    std::printf("| %s | %.0f | %.2f | %s |\n", what, s.median, static_cast<double>(bytes) / (s.median * 1e3), check);
  };

  using Path = GlWorker::TextureRead;
  for (Path path : {Path::PackReadPixels, Path::PackGetTexImage, Path::Compute, Path::MappedReadPixels}) {
    const std::string name = std::string("read_texture_into, ") + GlWorker::texture_read_name(path) +
                             (path == worker->texture_read_path() ? " (auto)" : "");
    if (!worker->has_texture_read(path)) {
      std::printf("| %s | — | — | not in this context |\n", name.c_str());
      continue;
    }
    GlWorker::TextureRegion region;
    region.texture = texture;
    region.width = width;
    region.height = height;
    region.row_stride = std::size_t{width} * 4;
    region.path = path;
    auto once = [&] {
      Result<void> read = worker->read_texture_into(*pbo, region);
      if (!read)
        die(name + ": " + read.error().message());
      (void)worker->submit([] { glFinish(); });
    };
    once();
    const char *check = "wrong";
    {
      Result<HostView> map = made->map(CpuAccess::Read);
      if (!map)
        die("map: " + map.error().message());
      if (std::memcmp(map->bytes().data(), pixels.data(), bytes) == 0)
        check = "exact";
    }
    row(name.c_str(), time_each(n, once), check);
  }

  // What GstGL's download does with the same texture: into client memory.
  std::vector<std::uint32_t> client(pixels.size());
  const bool desktop = worker->info().api == GlApi::DesktopCore;
  const Stats gstgl = time_each(n, [&] {
    (void)worker->submit([&] {
      glBindTexture(GL_TEXTURE_2D, texture);
      if (desktop) {
        glGetTexImage(GL_TEXTURE_2D, 0, GL_RGBA, GL_UNSIGNED_BYTE, client.data());
      } else {
        GLuint fbo = 0;
        glGenFramebuffers(1, &fbo);
        glBindFramebuffer(GL_READ_FRAMEBUFFER, fbo);
        glFramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, texture, 0);
        glReadPixels(0, 0, static_cast<GLsizei>(width), static_cast<GLsizei>(height), GL_RGBA, GL_UNSIGNED_BYTE,
                     client.data());
        glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
        glDeleteFramebuffers(1, &fbo);
      }
      glBindTexture(GL_TEXTURE_2D, 0);
    });
  });
  row(desktop ? "GstGL's CPU download: glGetTexImage into client memory"
              : "GstGL's CPU download: glReadPixels into client memory",
      gstgl, std::memcmp(client.data(), pixels.data(), bytes) == 0 ? "exact" : "wrong");
  std::vector<std::uint32_t> copy(pixels.size());
  row("memcpy of the frame",
      time_each(n,
                [&] {
                  std::memcpy(copy.data(), pixels.data(), bytes);
                  asm volatile("" : : "r"(copy.data()) : "memory");
                }),
      "—");
  (void)worker->submit([&] { glDeleteTextures(1, &texture); });
}

} // namespace

int main(int argc, char **argv) {
  const int n = argc > 1 ? std::max(1, std::atoi(argv[1])) : 100;
  if (argc > 2)
    g_batches = std::max(1, std::atoi(argv[2]));
  Result<std::shared_ptr<GlWorker>> worker = GlWorker::create();
  if (!worker) {
    std::printf("skip: no headless GL context: %s\n", worker.error().message().c_str());
    return 77;
  }
  const GlInfo &info = (*worker)->info();
  std::printf("GL worker: %s, %s (%s)\n", info.renderer.c_str(), info.version.c_str(), info.platform.c_str());
  run_size(*worker, 1920, 1080, n);
  run_size(*worker, 64, 64, n * 10);
  return 0;
}

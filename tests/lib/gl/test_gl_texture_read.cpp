// SPDX-License-Identifier: Apache-2.0
// GlWorker::read_texture_into, path by path (pack-buffer glReadPixels,
// glGetTextureSubImage, the compute readback, glReadPixels into the PBO's
// mapping), on desktop GL and on GLES: every texel of a texture whose bytes
// name their channel, column and row lands where it belongs, at odd sizes,
// with padded rows and an offset, and nothing outside the rows is touched.
// The texture is this worker's own (the share group of one context is the
// simplest case of the GstGL one).
#include <tensormem/gl_worker.hpp>
#include <tensormem/pbo_storage.hpp>

#include <epoxy/gl.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

using namespace tensormem;

namespace {

using Path = GlWorker::TextureRead;

/* The four bytes of texel (x, y): R, G, B, A each distinct from the others
 * and from any other texel's, so a swap of channels, rows or columns and a
 * vertical flip all change the bytes. */
std::uint8_t channel(std::uint32_t x, std::uint32_t y, std::uint32_t c) {
  return static_cast<std::uint8_t>(x * 4u + c + y * 53u + (c == 3 ? 128u : 0u));
}

struct Case {
  const char *api; // TENSORMEM_GL_API
  Path path;
  std::uint32_t width, height;
  std::uint32_t pad_texels; // extra texels a row in the PBO
  std::size_t offset;
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << c.api << " " << GlWorker::texture_read_name(c.path) << " " << c.width << "x" << c.height;
}

class TextureRead : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override {
    ::setenv("TENSORMEM_GL_API", GetParam().api, 1);
    auto made = GlWorker::create();
    ::unsetenv("TENSORMEM_GL_API");
    if (!made)
      GTEST_SKIP() << "no headless " << GetParam().api << " GL here: " << made.error().message();
    worker = std::move(*made);
    if (!worker->has_texture_read(GetParam().path))
      GTEST_SKIP() << GlWorker::texture_read_name(GetParam().path) << " is not in this context ("
                   << worker->info().version << ")";
  }
  void TearDown() override {
    if (worker && texture)
      (void)worker->submit([t = texture] { glDeleteTextures(1, &t); });
  }

  /* A texture of the test texels, as GstGL makes them (RGBA8, linear
   * filtering, no mipmaps). */
  void make_texture(std::uint32_t width, std::uint32_t height) {
    std::vector<std::uint8_t> texels(std::size_t{width} * height * 4);
    for (std::uint32_t y = 0; y < height; ++y)
      for (std::uint32_t x = 0; x < width; ++x)
        for (std::uint32_t c = 0; c < 4; ++c)
          texels[(std::size_t{y} * width + x) * 4 + c] = channel(x, y, c);
    ASSERT_TRUE(worker->submit([&] {
      glGenTextures(1, &texture);
      glBindTexture(GL_TEXTURE_2D, texture);
      glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
      glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, static_cast<GLsizei>(width), static_cast<GLsizei>(height), 0, GL_RGBA,
                   GL_UNSIGNED_BYTE, texels.data());
      glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
      glBindTexture(GL_TEXTURE_2D, 0);
    }));
  }

  std::shared_ptr<GlWorker> worker;
  GLuint texture = 0;
};

TEST_P(TextureRead, EveryTexelInPlace) {
  const Case c = GetParam();
  make_texture(c.width, c.height);
  const std::size_t stride = (std::size_t{c.width} + c.pad_texels) * 4;
  const std::size_t size = c.offset + stride * c.height + 8;
  Result<Tensor> pbo = worker->create_pbo(size, Shape{size}, DType::U8, "read", PboUsage::Download);
  ASSERT_TRUE(pbo) << pbo.error().message();
  constexpr std::uint8_t kUntouched = 0xa5;
  {
    Result<HostView> map = pbo->map(CpuAccess::Write);
    ASSERT_TRUE(map) << map.error().message();
    std::memset(map->mutable_bytes().data(), kUntouched, size);
  }
  GlWorker::TextureRegion region;
  region.texture = texture;
  region.width = c.width;
  region.height = c.height;
  region.row_stride = stride;
  region.offset = c.offset;
  region.path = c.path;
  std::shared_ptr<PboStorage> storage = pbo_storage_of(*pbo);
  Result<void> read = worker->read_texture_into(*storage, region);
  ASSERT_TRUE(read) << read.error().message();
  ASSERT_TRUE(worker->fence_write(*storage));

  Result<HostView> map = pbo->map(CpuAccess::Read);
  ASSERT_TRUE(map) << map.error().message();
  const std::uint8_t *bytes = reinterpret_cast<const std::uint8_t *>(map->bytes().data());
  int wrong = 0;
  for (std::size_t i = 0; i < size && wrong < 8; ++i) {
    std::uint8_t want = kUntouched;
    if (i >= c.offset) {
      const std::size_t at = i - c.offset, y = at / stride, in_row = at % stride;
      if (y < c.height && in_row < std::size_t{c.width} * 4)
        want = channel(static_cast<std::uint32_t>(in_row / 4), static_cast<std::uint32_t>(y),
                       static_cast<std::uint32_t>(in_row % 4));
    }
    if (bytes[i] != want) {
      ADD_FAILURE() << "byte " << i << ": " << int(bytes[i]) << ", expected " << int(want);
      ++wrong;
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const char *api : {"desktop", "gles"})
    for (Path path : {Path::PackReadPixels, Path::PackGetTexImage, Path::Compute, Path::MappedReadPixels}) {
      // OpenGL ES has no glGetTextureSubImage: no such case to run there
      // (TextureReadRefusals checks that a GLES worker does not offer it).
      if (std::string(api) == "gles" && path == Path::PackGetTexImage)
        continue;
      all.push_back({api, path, 33, 17, 0, 0});
      all.push_back({api, path, 1, 1, 0, 0});
      all.push_back({api, path, 67, 3, 5, 12}); // padded rows at an offset
      all.push_back({api, path, 2, 31, 1, 4});
    }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Paths, TextureRead, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           const Case &c = info.param;
                           return std::string(c.api) + "_" + GlWorker::texture_read_name(c.path) + "_" +
                                  std::to_string(c.width) + "x" + std::to_string(c.height) + "_pad" +
                                  std::to_string(c.pad_texels) + "_at" + std::to_string(c.offset);
                         });

/* What read_texture_into refuses before any GL work: rows past the PBO, an
 * offset or a stride that is not whole texels, a path the context lacks. */
class TextureReadRefusals : public ::testing::Test {
protected:
  void SetUp() override {
    auto made = GlWorker::create();
    if (!made)
      GTEST_SKIP() << "no headless GL here: " << made.error().message();
    worker = std::move(*made);
  }
  std::shared_ptr<GlWorker> worker;
};

TEST_F(TextureReadRefusals, BadRegions) {
  Result<Tensor> pbo = worker->create_pbo(64, Shape{64}, DType::U8);
  ASSERT_TRUE(pbo) << pbo.error().message();
  std::shared_ptr<PboStorage> storage = pbo_storage_of(*pbo);
  GlWorker::TextureRegion region;
  region.texture = 1;
  region.width = 4;
  region.height = 5; // 80 bytes
  region.row_stride = 16;
  EXPECT_EQ(worker->read_texture_into(*storage, region).error().kind(), ErrorKind::InvalidArgument);
  region.height = 2;
  region.offset = 2;
  EXPECT_EQ(worker->read_texture_into(*storage, region).error().kind(), ErrorKind::InvalidArgument);
  region.offset = 0;
  region.row_stride = 18;
  EXPECT_EQ(worker->read_texture_into(*storage, region).error().kind(), ErrorKind::InvalidArgument);
  region.texture = 0;
  region.row_stride = 16;
  EXPECT_EQ(worker->read_texture_into(*storage, region).error().kind(), ErrorKind::InvalidArgument);
}

TEST(TextureReadGles, GetTextureIsNotOfferedAndForcingItFallsBackToAPathThatExists) {
  ::setenv("TENSORMEM_GL_API", "gles", 1);
  auto made = GlWorker::create();
  ::unsetenv("TENSORMEM_GL_API");
  if (!made)
    GTEST_SKIP() << "no headless GLES here: " << made.error().message();
  std::shared_ptr<GlWorker> gles = std::move(*made);
  EXPECT_FALSE(gles->has_texture_read(Path::PackGetTexImage)) << gles->info().version;
  ::setenv("TENSORMEM_GL_TEXTURE_READ", "gettexture", 1);
  const Path forced = gles->texture_read_path();
  ::unsetenv("TENSORMEM_GL_TEXTURE_READ");
  EXPECT_NE(forced, Path::PackGetTexImage);
  EXPECT_TRUE(gles->has_texture_read(forced));
}

TEST_F(TextureReadRefusals, AutoFollowsTheVariableOnlyWhereThePathExists) {
  ::setenv("TENSORMEM_GL_TEXTURE_READ", "compute", 1);
  const Path forced = worker->texture_read_path();
  ::setenv("TENSORMEM_GL_TEXTURE_READ", "no-such-path", 1);
  const Path unknown = worker->texture_read_path();
  ::unsetenv("TENSORMEM_GL_TEXTURE_READ");
  EXPECT_EQ(forced, worker->has_texture_read(Path::Compute) ? Path::Compute : worker->texture_read_path());
  EXPECT_EQ(unknown, worker->texture_read_path());
  EXPECT_NE(worker->texture_read_path(), Path::Auto);
}

} // namespace

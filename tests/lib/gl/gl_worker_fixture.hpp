// SPDX-License-Identifier: Apache-2.0
// The fixture of the GL test programs: a headless GL worker, skipped with the
// reason only when no EGL context can be made at all.
#pragma once

#include <tensormem/gl_worker.hpp>

#include <epoxy/gl.h>

#include <gtest/gtest.h>

namespace tmtest {

class GlWorkerTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto made = tensormem::GlWorker::create();
    if (!made)
      GTEST_SKIP() << "no headless GL here: " << made.error().message();
    worker = std::move(*made);
  }

  tensormem::Tensor make_pbo(std::size_t size, tensormem::Shape shape,
                             tensormem::PboUsage usage = tensormem::PboUsage::Upload) {
    auto t = worker->create_pbo(size, std::move(shape), tensormem::DType::U8, {}, usage);
    EXPECT_TRUE(t) << (t ? "" : t.error().message());
    return std::move(t).value();
  }

  bool is_gl_buffer(std::uint32_t id) {
    bool alive = false;
    EXPECT_TRUE(worker->submit([&] { alive = glIsBuffer(id); }));
    return alive;
  }

  std::shared_ptr<tensormem::GlWorker> worker;
};

} // namespace tmtest

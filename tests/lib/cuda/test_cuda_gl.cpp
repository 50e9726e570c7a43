// SPDX-License-Identifier: Apache-2.0
// A GL-buffer registration end to end on real GL (the headless GL worker,
// Mesa llvmpipe here) and the fake runtime, whose GL interop maps the buffer
// with glMapBufferRange on the worker thread. The CudaGlOps below posts
// each call to the worker, as the GL worker's own implementation must.
#include <tensormem/cuda_handle.hpp>
#include <tensormem/cuda_import.hpp>
#include <tensormem/gl_cuda.hpp>
#include <tensormem/gl_worker.hpp>
#include <tensormem/internal/cuda_runtime.hpp>
#include <tensormem/pbo_storage.hpp>
#include <tensormem/tensor.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <dlfcn.h>
#include <optional>

using namespace tensormem;

namespace {

// This program does not link the fake (so its run path stays the plain
// one); the control functions are looked up in the copy the loader opened.
template <typename F> F fake_fn(const char *name) {
  void *lib = ::dlopen(FAKE_CUDA_CORE_PATH, RTLD_NOW | RTLD_NOLOAD);
  void *sym = lib ? ::dlsym(lib, name) : nullptr;
  if (lib)
    ::dlclose(lib);
  return reinterpret_cast<F>(sym);
}
unsigned long fake_calls(const char *fn) { return fake_fn<unsigned long (*)(const char *)>("fake_cudart_calls")(fn); }
std::size_t fake_live() { return fake_fn<std::size_t (*)(const char *)>("fake_cudart_live")(nullptr); }
unsigned long fake_violations() { return fake_fn<unsigned long (*)()>("fake_cudart_violations")(); }

} // namespace

TEST(CudaGl, CUDA_GL_01_02_a_pbo_registered_mapped_written_and_read_back_through_gl) {
  auto rt = CudaRuntime::get();
  ASSERT_TRUE(rt->available()) << rt->reason();
  Result<std::shared_ptr<GlWorker>> worker = GlWorker::create();
  if (!worker)
    GTEST_SKIP() << "no GL context can be made here: " << worker.error().message();
  Tensor pbo = std::move((*worker)->create_pbo(4096, {4096}, DType::U8)).value();
  auto *storage = dynamic_cast<PboStorage *>(pbo.storage().get());
  ASSERT_NE(storage, nullptr);

  auto ops = make_gl_worker_cuda_gl_ops(*worker, rt);
  Result<std::shared_ptr<CudaHandle>> h = CudaHandle::register_gl_buffer(ops, storage->buffer_id(), 4096);
  ASSERT_TRUE(h) << h.error().message();
  ASSERT_TRUE(attach_cuda(*pbo.storage(), *h));
  {
    std::optional<CudaMap> m = cuda_map_mut(pbo);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->length(), 4096u);
    std::vector<unsigned char> pattern(4096);
    for (std::size_t i = 0; i < pattern.size(); ++i)
      pattern[i] = static_cast<unsigned char>(i * 13 + 1);
    ASSERT_TRUE(rt->memcpy_host_to_device(m->device_ptr(), pattern.data(), pattern.size()));
  } // GL unmap on the worker: the PBO is free for CPU maps again
  {
    Result<HostView> v = pbo.map(CpuAccess::Read);
    ASSERT_TRUE(v) << v.error().message();
    for (std::size_t i = 0; i < 4096; ++i)
      ASSERT_EQ(static_cast<unsigned char>(v->bytes()[i]), static_cast<unsigned char>(i * 13 + 1)) << i;
  }
  detach_cuda(*pbo.storage());
  h->reset();
  EXPECT_EQ(fake_calls("cudaGraphicsGLRegisterBuffer"), 1u);
  EXPECT_EQ(fake_calls("cudaGraphicsMapResources"), 1u);
  EXPECT_EQ(fake_calls("cudaGraphicsUnmapResources"), 1u);
  EXPECT_EQ(fake_calls("cudaGraphicsUnregisterResource"), 1u);
  EXPECT_EQ(fake_live(), 0u);
  EXPECT_EQ(fake_violations(), 0u);
}

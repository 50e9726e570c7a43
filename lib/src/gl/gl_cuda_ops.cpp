// SPDX-License-Identifier: Apache-2.0
#include <tensormem/gl_cuda.hpp>
#include <tensormem/internal/cuda_runtime.hpp>
#include <tensormem/log.hpp>

#include "gl_task.hpp"

#include <new>

namespace tensormem {
namespace {

class GlWorkerCudaGlOps final : public CudaGlOps {
public:
  GlWorkerCudaGlOps(std::shared_ptr<GlWorker> worker, std::shared_ptr<const CudaRuntime> runtime) noexcept
      : worker_(std::move(worker)), rt_(std::move(runtime)) {}

  Result<void *> register_buffer(std::uint32_t buffer_id) override {
    return on_worker<void *>([&] { return rt_->gl_register_buffer(buffer_id); }, "cudaGraphicsGLRegisterBuffer");
  }
  Result<CudaDeviceRange> map(void *resource) override {
    return on_worker<CudaDeviceRange>([&] { return rt_->gl_map_resource(resource); }, "cudaGraphicsMapResources");
  }
  void unmap(void *resource) noexcept override {
    run_quietly("unmap", [&] {
      rt_->gl_unmap_resource(resource);
      // The unmap orders CUDA's work on the map's stream (the default one)
      // before later GL commands. A CPU read of a persistently mapped buffer
      // is no GL command, so without this wait it could see the bytes from
      // before a CUDA kernel's write.
      if (worker_->info().persistent_maps) {
        if (Result<void> synced = rt_->stream_synchronize(nullptr); !synced)
          log(LogLevel::Warning, "CUDA GL unmap: " + synced.error().message());
      }
    });
  }
  void unregister(void *resource) noexcept override {
    run_quietly("unregister", [&] { rt_->gl_unregister_resource(resource); });
  }

private:
  template <typename T, typename Fn> Result<T> on_worker(Fn &&fn, const char *what) {
    return result_from_worker<T>([&](std::function<void()> task) { return worker_->submit(std::move(task)); },
                                 std::forward<Fn>(fn), what);
  }

  template <typename Fn> void run_quietly(const char *what, Fn &&fn) noexcept {
    try {
      if (Result<void> ran = worker_->submit(fn); !ran)
        log(LogLevel::Debug, std::string("CUDA GL ") + what + " skipped: " + ran.error().message());
    } catch (const std::bad_alloc &) {
      log(LogLevel::Warning, "CUDA GL task could not be queued on the GL worker: out of memory");
    }
  }

  std::shared_ptr<GlWorker> worker_;
  std::shared_ptr<const CudaRuntime> rt_;
};

} // namespace

std::shared_ptr<CudaGlOps> make_gl_worker_cuda_gl_ops(std::shared_ptr<GlWorker> worker,
                                                      std::shared_ptr<const CudaRuntime> runtime) {
  if (!worker || !runtime)
    return nullptr;
  return std::make_shared<GlWorkerCudaGlOps>(std::move(worker), std::move(runtime));
}

} // namespace tensormem

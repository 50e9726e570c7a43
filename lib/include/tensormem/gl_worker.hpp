// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/export.hpp>

#include <tensormem/pbo_storage.hpp>
#include <tensormem/tensor.hpp>
#include <tensormem/timeline.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace tensormem {

struct HeadlessContext; // the worker's context (private to lib/src/gl)

class GlDisplay;

/// Which GL the worker's context speaks.
enum class GlApi { DesktopCore, Gles };

/// What the worker's context turned out to be.
struct GlInfo {
  std::string platform; ///< "surfaceless", "device" or "default"
  std::string renderer; ///< GL_RENDERER
  std::string version;  ///< GL_VERSION
  GlApi api = GlApi::DesktopCore;
  int major = 0;
  int minor = 0;
  bool fence_sync = false; ///< EGL_KHR_fence_sync
  bool wait_sync = false;  ///< EGL_KHR_wait_sync (GPU-side waits)
  /// PBOs are immutable storage mapped once for their life (glBufferStorage
  /// with persistent, coherent maps: GL 4.4, ARB_buffer_storage or
  /// EXT_buffer_storage), so a CPU map is the map-state machine alone, with
  /// no trip to the GL thread. False where the GL lacks it or
  /// TENSORMEM_GL_PERSISTENT_MAPS=0 asks for per-map glMapBufferRange.
  bool persistent_maps = false;
};

/// One EGL fence sync (EGL_KHR_fence_sync), signalled when the GL commands
/// before it have completed. Move-only; destroys the sync once. Waiting needs
/// no GL context, so any thread may wait; the fence keeps its EGL display
/// initialised for as long as it lives, even past the worker. A thread with
/// no current context is left without EGL state after each call (eglReleaseThread):
/// libglvnd frees such state as the thread exits, and a streaming thread
/// exiting while the process exits crashed inside the libEGL being unloaded.
class TENSORMEM_API EglFence {
public:
  EglFence() = default;
  EglFence(EglFence &&other) noexcept;
  EglFence &operator=(EglFence &&other) noexcept;
  EglFence(const EglFence &) = delete;
  EglFence &operator=(const EglFence &) = delete;
  ~EglFence();

  bool valid() const noexcept { return sync_ != nullptr; }
  /// Blocks up to `timeout` (never unbounded). WouldBlock when it expired,
  /// Device when EGL reports an error, InvalidArgument for an empty fence.
  Result<void> client_wait(std::chrono::nanoseconds timeout) const;
  /// Whether the fence has signalled, without waiting.
  Result<bool> is_signalled() const;

private:
  friend class GlWorker;
  EglFence(std::shared_ptr<GlDisplay> display, void *sync) noexcept;
  void reset() noexcept;

  std::shared_ptr<GlDisplay> display_;
  void *sync_ = nullptr;
};

/// The EGL fences of one GL worker as a timeline: each value is a fence the
/// worker inserted after a GPU-side write. Fences of one context complete in
/// order. Only the worker issues values; waits work from any thread.
class TENSORMEM_API EglTimeline final : public PointTimeline {
public:
  /// Makes `gl`'s context wait for `value` on the GPU (eglWaitSyncKHR); a
  /// CPU wait bounded by GlWorker::wait_fence's default where
  /// EGL_KHR_wait_sync is absent.
  Result<void> wait_gpu(std::uint64_t value, GlWorker &gl) override;

private:
  friend class GlWorker;
  struct Token {};

public:
  EglTimeline(Token, std::string name) : PointTimeline(TimelineKind::EglSync, std::move(name)) {}

private:
  /// Issues the next value for `fence`.
  std::uint64_t adopt(EglFence fence);
};

/// How a new PBO will mostly be used; a hint for the driver's memory choice.
enum class PboUsage { Upload, Download };

/// A thread that owns an EGL context made without a window and runs every GL
/// call. Platforms are tried in order: EGL_MESA_platform_surfaceless,
/// EGL_EXT_platform_device (first device), the default display; desktop GL
/// 3.3+ core first, GLES 3 otherwise.
///
/// Work reaches the thread through a queue: submit() blocks until the task
/// ran, post() does not; both run the task inline when called on the worker
/// thread itself, so GL work that maps tensors cannot deadlock against its own
/// thread. After shutdown() (or destruction) every call answers
/// Disconnected at once; storages made here may outlive the worker, their maps
/// then fail with Disconnected and their deletes do nothing.
class TENSORMEM_API GlWorker {
public:
  /// Starts the thread and its context. Device error naming every platform
  /// tried and why it failed when no context could be made.
  static Result<std::shared_ptr<GlWorker>> create();
  /// A worker whose context lives on another library's EGL display
  /// (`egl_display`, an EGLDisplay it initialised and terminates) and shares
  /// objects (textures, buffers, GL syncs) with `egl_context`, an EGLContext
  /// of that display: GstGL's, so that textures of GL memory can be read
  /// into PBOs on the GPU (docs/pbo.md, "GstGL interop"). The display is
  /// never terminated by us. `platform` is what info().platform says. Device
  /// error when no sharing context could be made (another API, a driver
  /// that refuses to share).
  static Result<std::shared_ptr<GlWorker>> create_sharing(void *egl_display, void *egl_context, std::string platform);
  /// shutdown().
  ~GlWorker();
  GlWorker(const GlWorker &) = delete;
  GlWorker &operator=(const GlWorker &) = delete;

  const GlInfo &info() const noexcept;
  bool on_worker_thread() const noexcept;
  bool is_running() const noexcept;

  /// Runs `task` on the worker (with its context current) and waits for it.
  /// Disconnected when the worker has shut down or shuts down first.
  Result<void> submit(std::function<void()> task);
  /// Queues `task` and returns; Disconnected when the worker has shut down.
  Result<void> post(std::function<void()> task);

  /// Stops the thread: queued tasks that have not started are dropped (their
  /// submitters get Disconnected), the context is destroyed with every GL
  /// object in it. Idempotent.
  void shutdown() noexcept;

  /// The PboOps of this worker: a buffer already mapped through any handle
  /// is refused with Mapped. A buffer made by
  /// create_pbo with persistent maps is handed out at its persistent address
  /// on the calling thread; any other map, unmap and every delete run on the
  /// worker.
  std::shared_ptr<PboOps> ops() const noexcept;

  /// A new GL buffer of `size` bytes wrapped as a tensor (from_pbo's checks
  /// run first, so a refused shape creates nothing): immutable storage
  /// mapped once, persistent and coherent, where info().persistent_maps,
  /// else glBufferData with a usage hint from `usage`.
  Result<Tensor> create_pbo(std::size_t size, Shape shape, DType dtype, std::string name = {},
                            PboUsage usage = PboUsage::Upload);

  /// CPU maps the port has served so far: a glMapBufferRange each, or a
  /// persistent address handed out (tests count shared reader maps).
  std::uint64_t gl_map_calls() const noexcept;
  /// Of those, the ones served from a persistent mapping without a trip to
  /// the GL thread.
  std::uint64_t persistent_map_calls() const noexcept;
  /// GL buffers currently mapped for the CPU.
  std::size_t mapped_buffers() const noexcept;

  /// GL objects of this library alive in the process, over every worker,
  /// for leak checks (tests/soak samples them): `pbos` are GL buffers
  /// create_pbo made and nobody deleted yet (a worker's shutdown takes its
  /// own with its context), `fences` are EglFence objects holding a sync.
  struct LiveObjects {
    std::uint64_t pbos = 0;
    std::uint64_t fences = 0;
  };
  static LiveObjects live_objects() noexcept;
  /// Times this library dropped a thread's EGL state after an EGL call on a
  /// thread with no current context (a fence waited on, queried or
  /// destroyed off the worker), over the process: see EglFence.
  static std::uint64_t egl_thread_releases() noexcept;

  /// A fence after every GL command queued so far (flushed, so a waiter on
  /// another thread cannot wait on commands never sent). NotImplemented
  /// without EGL_KHR_fence_sync.
  Result<EglFence> insert_fence();
  /// Makes the worker's GL queue wait for `fence` on the GPU
  /// (EGL_KHR_wait_sync); without it, a CPU wait bounded by `cpu_timeout`.
  Result<void> wait_fence(const EglFence &fence, std::chrono::nanoseconds cpu_timeout = std::chrono::seconds(5));

  /// This worker's EGL timeline; null without EGL_KHR_fence_sync.
  std::shared_ptr<EglTimeline> timeline() const noexcept;

  /// After a GPU-side write into `storage` queued on this worker: inserts a
  /// fence, issues it on timeline() and records it on the storage, so its
  /// next CPU map waits for the write. Returns the value (0, recording
  /// nothing, without EGL_KHR_fence_sync).
  Result<std::uint64_t> fence_write(Storage &storage);

  /// How read_texture_into moves texels into the PBO (docs/pbo.md, "GstGL
  /// interop", and docs/performance.md for what each costs).
  enum class TextureRead {
    /// texture_read_path(): the fastest this context has.
    Auto,
    /// The texture attached to a framebuffer, glReadPixels into the PBO
    /// bound as GL_PIXEL_PACK_BUFFER (every GL and GLES 3.0).
    PackReadPixels,
    /// glGetTextureSubImage into the bound pack buffer (desktop GL 4.5 or
    /// ARB_get_texture_sub_image; not in GLES).
    PackGetTexImage,
    /// A compute shader: texelFetch of each texel, packed into the PBO
    /// bound as a shader storage buffer (desktop GL 4.3, GLES 3.1).
    Compute,
    /// glReadPixels from the framebuffer into the PBO's CPU mapping (no pack
    /// buffer bound): the driver's plain copy. Where the renderer runs on
    /// the CPU (Mesa llvmpipe, softpipe) its "GPU" memory is CPU memory
    /// anyway, so this is no extra copy there; on hardware it would stall.
    MappedReadPixels,
  };

  /// Reads the `region.width` × `region.height` texels of 2D texture
  /// `region.texture` (a texture of this worker's share group: one of the
  /// context create_sharing shared with) into `pbo`, 4 bytes a texel as
  /// GL_RGBA / GL_UNSIGNED_BYTE read them (the texture's bytes as stored in
  /// an RGBA8 texture), texel row 0 at `region.offset`, rows
  /// `region.row_stride` bytes apart, by `region.path` (Auto:
  /// texture_read_path()). When `region.wait_sync` is set (a GLsync of the
  /// share group) this context waits for it on the GPU first and deletes
  /// it. No CPU copy of ours; the caller fences the write (fence_write(pbo))
  /// before a CPU reader maps it. InvalidArgument when the rows do not fit
  /// the PBO or the stride or offset is not a multiple of 4; NotImplemented
  /// when this context lacks the path asked for; Device error naming the GL
  /// error or framebuffer status otherwise.
  struct TextureRegion {
    std::uint32_t texture = 0;
    std::uint32_t width = 0;
    std::uint32_t height = 0;
    std::size_t row_stride = 0;
    std::size_t offset = 0;
    void *wait_sync = nullptr;
    TextureRead path = TextureRead::Auto;
  };
  Result<void> read_texture_into(PboStorage &pbo, const TextureRegion &region);
  /// Whether this context has `path` (Auto: always).
  bool has_texture_read(TextureRead path) const noexcept;
  /// The path Auto takes: TENSORMEM_GL_TEXTURE_READ (readpixels, gettexture,
  /// compute, mapped) when set and this context has it, else
  /// PackReadPixels: on Mesa llvmpipe no other path was faster beyond noise
  /// and the compute one was ten times slower (docs/performance.md); the
  /// others stay for measuring other drivers.
  TextureRead texture_read_path() const noexcept;
  /// "auto", "readpixels", "gettexture", "compute" or "mapped".
  static const char *texture_read_name(TextureRead path) noexcept;

  struct Core;

private:
  GlWorker(std::shared_ptr<Core> core, std::thread thread) noexcept;
  static Result<std::shared_ptr<GlWorker>> start(std::function<Result<HeadlessContext>()> make_context);

  std::shared_ptr<Core> core_;
  std::shared_ptr<PboOps> ops_;
  std::shared_ptr<EglTimeline> timeline_;
  std::thread thread_;
};

} // namespace tensormem

// SPDX-License-Identifier: Apache-2.0
#include "gl_display.hpp"
#include "gl_task.hpp"

#include <tensormem/gl_worker.hpp>

#include <tensormem/log.hpp>

#include <epoxy/gl.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <future>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace tensormem {

namespace {

// GlWorker::live_objects(): every worker's made-and-not-deleted buffers, and
// the EGL syncs EglFence objects hold.
std::atomic<std::uint64_t> g_live_pbos{0};
std::atomic<std::uint64_t> g_live_fences{0};

/// Where a blocking submitter waits for its task.
struct Completion {
  std::mutex mu;
  std::condition_variable cv;
  enum class State { Pending, Ran, Dropped } state = State::Pending;

  void finish(State s) noexcept {
    std::lock_guard lock(mu);
    state = s;
    cv.notify_all();
  }
  State wait() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return state != State::Pending; });
    return state;
  }
};

struct Task {
  std::function<void()> fn;
  std::shared_ptr<Completion> done; // null for post()
};

std::string gl_error_text(GLenum code) {
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%04x", code);
  return hex;
}

void clear_gl_errors() noexcept {
  for (int i = 0; i < 16 && glGetError() != GL_NO_ERROR; ++i) {
  }
}

Error disconnected(const char *what) {
  return Error::disconnected(std::string(what) + ": the GL worker has shut down");
}

} // namespace

/// What the worker thread and every ops object share. Outlives the thread:
/// ops held by storages keep it, and find `closed` set once the worker is gone.
struct GlWorker::Core {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Task> queue;
  bool closed = false;

  // Written before create() returns, read-only afterwards.
  std::thread::id thread_id;
  GlInfo info;
  std::shared_ptr<GlDisplay> display;

  // Whether the context is current on the worker; atomic because a later
  // thread may be handed the exited worker's id and read it.
  std::atomic<bool> gl_live{false};
  // Touched on the worker thread only.
  std::unordered_set<std::uint32_t> mapped;
  // The buffers create_pbo made here and nobody deleted yet (worker only):
  // g_live_pbos counts them, and a buffer of another origin deleted through
  // the ops is not subtracted.
  std::unordered_set<std::uint32_t> made;

  void note_made(std::uint32_t id) {
    if (made.insert(id).second)
      g_live_pbos.fetch_add(1, std::memory_order_relaxed);
  }

  /// A buffer of immutable storage mapped once, for its life, at `data`.
  /// `cpu_mapped` is the one CPU map the port has handed out.
  struct Persistent {
    std::byte *data = nullptr;
    std::size_t size = 0;
    bool cpu_mapped = false;
  };
  // Entries are added and removed on the worker (buffer creation, delete,
  // shutdown) and read on any mapping thread; `persistent_mu` is never held
  // across a GL call or a wait for the worker.
  std::mutex persistent_mu;
  std::unordered_map<std::uint32_t, Persistent> persistent;

  std::atomic<std::uint64_t> map_calls{0};
  std::atomic<std::uint64_t> persistent_map_calls{0};
  std::atomic<std::size_t> mapped_count{0};

  /// The persistent address of `id` for one CPU map, or nullopt when `id` is
  /// not a persistent buffer (the caller then maps through the worker).
  std::optional<Result<BackendMapping>> persistent_map(std::uint32_t id, std::size_t size) {
    std::lock_guard lock(persistent_mu);
    auto it = persistent.find(id);
    if (it == persistent.end())
      return std::nullopt;
    if (it->second.cpu_mapped)
      return Result<BackendMapping>(
          Error::mapped("GL buffer " + std::to_string(id) + " is already mapped through another handle"));
    if (size > it->second.size)
      return Result<BackendMapping>(
          Error::insufficient_capacity(size, it->second.size, "persistent map of GL buffer " + std::to_string(id)));
    it->second.cpu_mapped = true;
    map_calls.fetch_add(1, std::memory_order_relaxed);
    persistent_map_calls.fetch_add(1, std::memory_order_relaxed);
    mapped_count.fetch_add(1, std::memory_order_relaxed);
    return Result<BackendMapping>(BackendMapping{it->second.data, size});
  }

  /// Ends the CPU map of a persistent buffer: the mapping itself stays, and
  /// being coherent, the CPU's writes reach every GL command issued after
  /// this. Nullopt when `id` is not a persistent buffer.
  std::optional<Result<void>> persistent_unmap(std::uint32_t id) {
    std::lock_guard lock(persistent_mu);
    auto it = persistent.find(id);
    if (it == persistent.end())
      return std::nullopt;
    if (!it->second.cpu_mapped)
      return Result<void>(Error::invalid_operation("unmap: GL buffer " + std::to_string(id) + " is not mapped"));
    it->second.cpu_mapped = false;
    mapped_count.fetch_sub(1, std::memory_order_relaxed);
    return Result<void>();
  }

  /// Forgets the persistent mapping of `id` (on the worker, as the buffer is
  /// deleted or the context goes); true if there was one.
  bool forget_persistent(std::uint32_t id) {
    std::lock_guard lock(persistent_mu);
    auto it = persistent.find(id);
    if (it == persistent.end())
      return false;
    if (it->second.cpu_mapped)
      mapped_count.fetch_sub(1, std::memory_order_relaxed);
    persistent.erase(it);
    return true;
  }

  bool on_worker() const noexcept { return std::this_thread::get_id() == thread_id; }

  /// Runs `fn` on the worker and waits; inline on the worker itself.
  Result<void> run(std::function<void()> fn, const char *what) noexcept {
    try {
      auto done = std::make_shared<Completion>();
      Result<void> queued = enqueue(std::move(fn), done, what);
      if (!queued)
        return queued;
      if (done->wait() != Completion::State::Ran)
        return disconnected(what);
      return {};
    } catch (const std::bad_alloc &) {
      return Error::io(ENOMEM, std::string(what) + ": queueing the GL task");
    } catch (const std::system_error &) {
      // A mutex or condition variable failed: the only other thing these
      // lines can throw.
      return Error::device(std::string(what) + ": the GL task queue's lock failed");
    }
  }

  /// Runs `fn` (returning Result<T>) on the worker and hands its result back.
  template <typename T, typename Fn> Result<T> call(Fn &&fn, const char *what) noexcept {
    return result_from_worker<T>([&](std::function<void()> task) { return run(std::move(task), what); },
                                 std::forward<Fn>(fn), what);
  }

  /// Queues `fn` without waiting; inline on the worker itself.
  Result<void> post(std::function<void()> fn, const char *what) noexcept {
    return enqueue(std::move(fn), nullptr, what);
  }

  /// The worker thread's loop; returns when closed.
  void serve() {
    for (;;) {
      Task task;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return closed || !queue.empty(); });
        if (closed)
          return;
        task = std::move(queue.front());
        queue.pop_front();
      }
      try {
        task.fn();
      } catch (...) {
        log(LogLevel::Error, "GL worker: a task threw; the exception is dropped");
      }
      task.fn = nullptr;
      if (task.done)
        task.done->finish(Completion::State::Ran);
    }
  }

  /// Drops tasks that never started; their submitters see Disconnected.
  void drop_pending() {
    std::deque<Task> left;
    {
      std::lock_guard lock(mu);
      left.swap(queue);
    }
    for (Task &task : left) {
      // The closure may own tensors: destroying it here, with the context
      // still current, lets their deletes run inline.
      task.fn = nullptr;
      if (task.done)
        task.done->finish(Completion::State::Dropped);
    }
  }

  // ---- GL operations: each runs on the worker thread ---------------------

  Result<BackendMapping> gl_map(std::uint32_t id, std::size_t size, CpuAccess access) {
    // MapState serialises one handle; two handles of one
    // GL name (a producer and an import) only meet here.
    if (mapped.count(id))
      return Error::mapped("GL buffer " + std::to_string(id) + " is already mapped through another handle");
    if (size > static_cast<std::size_t>(std::numeric_limits<GLsizeiptr>::max()))
      return Error::invalid_size(size, "glMapBufferRange: " + std::to_string(size) + " bytes is beyond GLsizeiptr");
    clear_gl_errors();
    if (!glIsBuffer(id))
      return Error::invalid_argument("glMapBufferRange: " + std::to_string(id) + " is not a GL buffer of this context");
    glBindBuffer(GL_COPY_WRITE_BUFFER, id);
    GLint64 actual = 0;
    glGetBufferParameteri64v(GL_COPY_WRITE_BUFFER, GL_BUFFER_SIZE, &actual);
    if (actual < 0 || static_cast<std::uint64_t>(actual) < size) {
      glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
      return Error::insufficient_capacity(size, static_cast<std::uint64_t>(actual < 0 ? 0 : actual),
                                          "glMapBufferRange of GL buffer " + std::to_string(id));
    }
    GLbitfield bits = 0;
    if (access_reads(access))
      bits |= GL_MAP_READ_BIT;
    if (access_writes(access))
      bits |= GL_MAP_WRITE_BIT;
    if (bits == 0)
      bits = GL_MAP_READ_BIT;
    map_calls.fetch_add(1, std::memory_order_relaxed);
    void *data = glMapBufferRange(GL_COPY_WRITE_BUFFER, 0, static_cast<GLsizeiptr>(size), bits);
    const GLenum err = glGetError();
    glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
    if (!data)
      return Error::device("glMapBufferRange of GL buffer " + std::to_string(id) + " failed: GL error " +
                           gl_error_text(err));
    mapped.insert(id);
    mapped_count.fetch_add(1, std::memory_order_relaxed);
    return BackendMapping{static_cast<std::byte *>(data), size};
  }

  Result<void> gl_unmap(std::uint32_t id) {
    if (!mapped.erase(id))
      return Error::invalid_operation("glUnmapBuffer: GL buffer " + std::to_string(id) + " is not mapped");
    mapped_count.fetch_sub(1, std::memory_order_relaxed);
    clear_gl_errors();
    glBindBuffer(GL_COPY_WRITE_BUFFER, id);
    const GLboolean intact = glUnmapBuffer(GL_COPY_WRITE_BUFFER);
    glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
    if (!intact)
      return Error::device("glUnmapBuffer of GL buffer " + std::to_string(id) +
                           ": the driver lost the contents while mapped");
    return {};
  }

  void gl_delete(std::uint32_t id) {
    // Deleting a mapped buffer unmaps it; forget the mapping with it so a
    // recycled name is not refused as "already mapped".
    if (mapped.erase(id))
      mapped_count.fetch_sub(1, std::memory_order_relaxed);
    forget_persistent(id);
    if (made.erase(id))
      g_live_pbos.fetch_sub(1, std::memory_order_relaxed);
    glDeleteBuffers(1, &id);
  }

  /// A new buffer of immutable storage, mapped once for its life (on the
  /// worker). Its id, or 0 with the GL error in `*err` (the buffer deleted).
  GLuint gl_create_persistent(std::size_t size, GLenum *err) {
    constexpr GLbitfield kBits = GL_MAP_READ_BIT | GL_MAP_WRITE_BIT | GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT;
    GLuint id = 0;
    clear_gl_errors();
    glGenBuffers(1, &id);
    glBindBuffer(GL_COPY_WRITE_BUFFER, id);
    if (info.api == GlApi::Gles)
      glBufferStorageEXT(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(size), nullptr, kBits);
    else
      glBufferStorage(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(size), nullptr, kBits);
    *err = glGetError();
    void *data = nullptr;
    if (*err == GL_NO_ERROR) {
      data = glMapBufferRange(GL_COPY_WRITE_BUFFER, 0, static_cast<GLsizeiptr>(size), kBits);
      *err = glGetError();
    }
    glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
    if (!data) {
      if (*err == GL_NO_ERROR)
        *err = GL_INVALID_OPERATION;
      glDeleteBuffers(1, &id);
      return 0;
    }
    std::lock_guard lock(persistent_mu);
    persistent[id] = Persistent{static_cast<std::byte *>(data), size, false};
    return id;
  }

private:
  /// What run and post share: on the worker, `fn` runs inline (and `done`,
  /// if any, is finished); elsewhere it is queued for the worker, unless the
  /// worker has shut down. Never throws: a failure to queue is ENOMEM, a
  /// task that threw inline a Device error.
  Result<void> enqueue(std::function<void()> fn, std::shared_ptr<Completion> done, const char *what) noexcept {
    try {
      if (on_worker()) {
        if (!gl_live)
          return disconnected(what);
        fn();
        if (done)
          done->finish(Completion::State::Ran);
        return {};
      }
      {
        std::lock_guard lock(mu);
        if (closed)
          return disconnected(what);
        queue.push_back(Task{std::move(fn), std::move(done)});
      }
      cv.notify_one();
      return {};
    } catch (const std::bad_alloc &) {
      return Error::io(ENOMEM, std::string(what) + ": queueing the GL task");
    } catch (const std::system_error &) {
      // A mutex or condition variable failed: the only other thing these
      // lines can throw.
      return Error::device(std::string(what) + ": the GL task queue's lock failed");
    }
  }
};

namespace {

/// PboOps of a worker. Holds the shared core only, never the worker, so a
/// storage that outlives the worker finds it closed and fails fast.
class GlPboOps final : public PboOps {
public:
  explicit GlPboOps(std::shared_ptr<GlWorker::Core> core) noexcept : core_(std::move(core)) {}

  /// Set once by GlWorker::create: other APIs (CUDA) reach the buffers
  /// through the worker, which their imports keep alive so that releasing
  /// them finds the GL thread.
  void set_worker(std::weak_ptr<GlWorker> worker) noexcept { worker_ = std::move(worker); }

  std::shared_ptr<GlWorker> gl_worker() const noexcept override { return worker_.lock(); }

  Result<BackendMapping> map_buffer(std::uint32_t id, std::size_t size, CpuAccess access) noexcept override {
    if (std::optional<Result<BackendMapping>> held = core_->persistent_map(id, size))
      return std::move(*held);
    return core_->call<BackendMapping>([&] { return core_->gl_map(id, size, access); }, "glMapBufferRange");
  }

  Result<void> unmap_buffer(std::uint32_t id) noexcept override {
    if (std::optional<Result<void>> held = core_->persistent_unmap(id))
      return std::move(*held);
    return core_->call<void>([&] { return core_->gl_unmap(id); }, "glUnmapBuffer");
  }

  void delete_buffer(std::uint32_t id) noexcept override {
    auto core = core_;
    // After shutdown the context took the buffer with it: nothing to do.
    (void)core_->post([core, id] { core->gl_delete(id); }, "glDeleteBuffers");
  }

private:
  std::shared_ptr<GlWorker::Core> core_;
  std::weak_ptr<GlWorker> worker_;
};

void worker_main(std::shared_ptr<GlWorker::Core> core, std::promise<Result<GlInfo>> ready,
                 std::function<Result<HeadlessContext>()> make_context) {
  core->thread_id = std::this_thread::get_id();
  Result<HeadlessContext> made = make_context();
  if (!made) {
    ready.set_value(std::move(made).error());
    return;
  }
  HeadlessContext ctx = std::move(*made);
  core->info = ctx.info;
  core->display = ctx.display;
  core->gl_live = true;
  ready.set_value(ctx.info);

  core->serve();

  core->drop_pending();
  if (!core->mapped.empty())
    log(LogLevel::Warning, "GL worker: shutting down with " + std::to_string(core->mapped.size()) +
                               " buffer(s) still mapped; their CPU addresses die with the context");
  core->mapped.clear();
  {
    std::lock_guard lock(core->persistent_mu);
    core->persistent.clear();
  }
  core->mapped_count = 0;
  // The context takes the buffers still alive with it.
  g_live_pbos.fetch_sub(core->made.size(), std::memory_order_relaxed);
  core->made.clear();
  core->gl_live = false;
  destroy_headless_context(ctx);
}

} // namespace

Result<std::shared_ptr<GlWorker>> GlWorker::create() { return start(make_headless_context); }

Result<std::shared_ptr<GlWorker>> GlWorker::create_sharing(void *egl_display, void *egl_context, std::string platform) {
  return start([egl_display, egl_context, platform = std::move(platform)] {
    return make_sharing_context(static_cast<EGLDisplay>(egl_display), static_cast<EGLContext>(egl_context),
                                platform.c_str());
  });
}

Result<std::shared_ptr<GlWorker>> GlWorker::start(std::function<Result<HeadlessContext>()> make_context) {
  try {
    auto core = std::make_shared<Core>();
    std::promise<Result<GlInfo>> ready;
    std::future<Result<GlInfo>> started = ready.get_future();
    std::thread thread(worker_main, core, std::move(ready), std::move(make_context));
    Result<GlInfo> info = started.get();
    if (!info) {
      thread.join();
      return std::move(info).error();
    }
    std::shared_ptr<GlWorker> worker(new GlWorker(std::move(core), std::move(thread)));
    std::static_pointer_cast<GlPboOps>(worker->ops_)->set_worker(worker);
    return worker;
  } catch (const std::system_error &e) {
    return Error::device(std::string("GL worker: starting the thread: ") + e.what());
  } catch (const std::bad_alloc &) {
    return Error::io(ENOMEM, "GL worker: allocating");
  }
}

GlWorker::GlWorker(std::shared_ptr<Core> core, std::thread thread) noexcept
    : core_(std::move(core)), ops_(std::make_shared<GlPboOps>(core_)),
      timeline_(core_->info.fence_sync
                    ? std::make_shared<EglTimeline>(EglTimeline::Token{}, "gl worker (" + core_->info.platform + ")")
                    : nullptr),
      thread_(std::move(thread)) {}

GlWorker::~GlWorker() { shutdown(); }

void GlWorker::shutdown() noexcept {
  {
    std::lock_guard lock(core_->mu);
    core_->closed = true;
  }
  core_->cv.notify_all();
  if (!thread_.joinable())
    return;
  // Dropped from inside one of its own tasks: the loop ends after that task
  // and the thread, which owns the core it needs, finishes on its own.
  if (core_->on_worker())
    thread_.detach();
  else
    thread_.join();
}

const GlInfo &GlWorker::info() const noexcept { return core_->info; }
bool GlWorker::on_worker_thread() const noexcept { return core_->on_worker(); }

bool GlWorker::is_running() const noexcept {
  std::lock_guard lock(core_->mu);
  return !core_->closed;
}

Result<void> GlWorker::submit(std::function<void()> task) { return core_->run(std::move(task), "GlWorker::submit"); }
Result<void> GlWorker::post(std::function<void()> task) { return core_->post(std::move(task), "GlWorker::post"); }

std::shared_ptr<PboOps> GlWorker::ops() const noexcept { return ops_; }

std::uint64_t GlWorker::gl_map_calls() const noexcept { return core_->map_calls.load(); }
std::uint64_t GlWorker::persistent_map_calls() const noexcept { return core_->persistent_map_calls.load(); }
std::size_t GlWorker::mapped_buffers() const noexcept { return core_->mapped_count.load(); }

GlWorker::LiveObjects GlWorker::live_objects() noexcept {
  return LiveObjects{g_live_pbos.load(std::memory_order_relaxed), g_live_fences.load(std::memory_order_relaxed)};
}

Result<Tensor> GlWorker::create_pbo(std::size_t size, Shape shape, DType dtype, std::string name, PboUsage usage) {
  // from_pbo's checks first, so a refused shape never creates a GL buffer.
  Result<void> fits = check_pbo_fit("GlWorker::create_pbo", std::nullopt, size, shape, dtype);
  if (!fits)
    return std::move(fits).error();
  if (size > static_cast<std::size_t>(std::numeric_limits<GLsizeiptr>::max()))
    return Error::invalid_size(size, "GlWorker::create_pbo: " + std::to_string(size) + " bytes is beyond GLsizeiptr");

  GLuint id = 0;
  GLenum err = GL_NO_ERROR;
  Result<void> ran = core_->run(
      [&] {
        if (core_->info.persistent_maps) {
          id = core_->gl_create_persistent(size, &err);
          if (id != 0)
            core_->note_made(id);
          return;
        }
        clear_gl_errors();
        glGenBuffers(1, &id);
        glBindBuffer(GL_COPY_WRITE_BUFFER, id);
        glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(size), nullptr,
                     usage == PboUsage::Upload ? GL_STREAM_DRAW : GL_STREAM_READ);
        glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
        err = glGetError();
        if (err != GL_NO_ERROR) {
          glDeleteBuffers(1, &id);
          id = 0;
        } else {
          core_->note_made(id);
        }
      },
      "glBufferData");
  if (!ran)
    return std::move(ran).error();
  const char *call = core_->info.persistent_maps ? "glBufferStorage" : "glBufferData";
  if (err == GL_OUT_OF_MEMORY)
    return Error::io(ENOMEM, std::string(call) + ": " + std::to_string(size) + " bytes: GL_OUT_OF_MEMORY");
  if (err != GL_NO_ERROR || id == 0)
    return Error::device(std::string(call) + ": " + std::to_string(size) + " bytes: GL error " + gl_error_text(err));
  return from_pbo(id, size, std::move(shape), dtype, std::move(name), ops_);
}

Result<EglFence> GlWorker::insert_fence() {
  if (!core_->info.fence_sync)
    return Error::not_implemented("GlWorker::insert_fence: EGL_KHR_fence_sync is not offered");
  EGLSyncKHR sync = EGL_NO_SYNC_KHR;
  std::string why;
  Result<void> ran = core_->run(
      [&] {
        sync = core_->display->sync().create(core_->display->get(), EGL_SYNC_FENCE_KHR, nullptr);
        if (sync == EGL_NO_SYNC_KHR)
          why = egl_error_text();
        // A waiter on another thread cannot flush this context for us.
        glFlush();
      },
      "eglCreateSyncKHR");
  if (!ran)
    return std::move(ran).error();
  if (sync == EGL_NO_SYNC_KHR)
    return Error::device("eglCreateSyncKHR: " + why);
  return EglFence(core_->display, sync);
}

Result<void> GlWorker::wait_fence(const EglFence &fence, std::chrono::nanoseconds cpu_timeout) {
  if (!fence.valid())
    return Error::invalid_argument("GlWorker::wait_fence: empty fence");
  if (!core_->info.wait_sync)
    return fence.client_wait(cpu_timeout);
  EGLint ok = EGL_FALSE;
  std::string why;
  Result<void> ran = core_->run(
      [&] {
        ok = fence.display_->sync().server_wait(fence.display_->get(), static_cast<EGLSyncKHR>(fence.sync_), 0);
        if (ok != EGL_TRUE)
          why = egl_error_text();
      },
      "eglWaitSyncKHR");
  if (!ran)
    return std::move(ran).error();
  if (ok != EGL_TRUE)
    return Error::device("eglWaitSyncKHR: " + why);
  return {};
}

/// \brief This worker's EGL fences as a timeline, or null without
/// EGL_KHR_fence_sync (nothing is recorded then and maps behave as before).
std::shared_ptr<EglTimeline> GlWorker::timeline() const noexcept { return timeline_; }

/// \brief Fences the GPU-side write just queued into `storage` and records it
/// there, so the storage's next CPU map orders itself behind the write.
/// \return The value issued on timeline(); 0 without EGL_KHR_fence_sync.
Result<std::uint64_t> GlWorker::fence_write(Storage &storage) {
  if (!timeline_)
    return std::uint64_t{0};
  // Inserting and issuing in one worker task keeps values in fence order
  // even when several threads fence writes at once.
  Result<std::uint64_t> issued = core_->call<std::uint64_t>(
      [&]() -> Result<std::uint64_t> {
        Result<EglFence> fence = insert_fence();
        if (!fence)
          return std::move(fence).error();
        return timeline_->adopt(std::move(*fence));
      },
      "fence_write");
  if (!issued)
    return issued;
  Result<void> recorded = storage.record_write(timeline_, *issued);
  if (!recorded)
    return std::move(recorded).error();
  return issued;
}

// ---- EglFence ---------------------------------------------------------------

EglFence::EglFence(std::shared_ptr<GlDisplay> display, void *sync) noexcept
    : display_(std::move(display)), sync_(sync) {
  if (sync_)
    g_live_fences.fetch_add(1, std::memory_order_relaxed);
}

EglFence::EglFence(EglFence &&other) noexcept
    : display_(std::move(other.display_)), sync_(std::exchange(other.sync_, nullptr)) {}

EglFence &EglFence::operator=(EglFence &&other) noexcept {
  if (this != &other) {
    reset();
    display_ = std::move(other.display_);
    sync_ = std::exchange(other.sync_, nullptr);
  }
  return *this;
}

EglFence::~EglFence() { reset(); }

void EglFence::reset() noexcept {
  if (sync_ && display_) {
    display_->sync().destroy(display_->get(), static_cast<EGLSyncKHR>(sync_));
    release_egl_thread_state();
  }
  if (sync_)
    g_live_fences.fetch_sub(1, std::memory_order_relaxed);
  sync_ = nullptr;
  display_.reset();
}

Result<void> EglFence::client_wait(std::chrono::nanoseconds timeout) const {
  if (!valid())
    return Error::invalid_argument("EglFence::client_wait: empty fence");
  const auto ns = static_cast<EGLTimeKHR>(timeout.count() < 0 ? 0 : timeout.count());
  const EGLint status = display_->sync().client_wait(display_->get(), static_cast<EGLSyncKHR>(sync_), 0, ns);
  const std::string why = status == EGL_FALSE ? egl_error_text() : std::string();
  release_egl_thread_state();
  if (status == EGL_CONDITION_SATISFIED_KHR)
    return {};
  if (status == EGL_TIMEOUT_EXPIRED_KHR)
    return Error::would_block("EglFence::client_wait: not signalled within " + std::to_string(timeout.count()) + " ns");
  return Error::device("eglClientWaitSyncKHR: " + why);
}

Result<bool> EglFence::is_signalled() const {
  if (!valid())
    return Error::invalid_argument("EglFence::is_signalled: empty fence");
  EGLint value = 0;
  const bool asked =
      display_->sync().get_attrib(display_->get(), static_cast<EGLSyncKHR>(sync_), EGL_SYNC_STATUS_KHR, &value);
  const std::string why = asked ? std::string() : egl_error_text();
  release_egl_thread_state();
  if (!asked)
    return Error::device("eglGetSyncAttribKHR: " + why);
  return value == EGL_SIGNALED_KHR;
}

// ---- EglTimeline -------------------------------------------------------------

namespace {

/// One EGL fence as a timeline point.
class EglFencePoint final : public SyncPoint {
public:
  explicit EglFencePoint(EglFence fence) noexcept : fence_(std::move(fence)) {}

  Result<bool> is_signalled() const override { return fence_.is_signalled(); }
  Result<void> wait(std::chrono::nanoseconds timeout) const override { return fence_.client_wait(timeout); }
  const EglFence &fence() const noexcept { return fence_; }

private:
  EglFence fence_;
};

} // namespace

std::uint64_t EglTimeline::adopt(EglFence fence) {
  return add_point(std::make_shared<EglFencePoint>(std::move(fence)));
}

/// \brief Queues a wait for `value` on `gl`'s context: later GL commands there
/// run after the fence, and the calling thread does not block on the GPU.
/// \return InvalidArgument for a value never issued; nothing to do for a
/// value already reached.
Result<void> EglTimeline::wait_gpu(std::uint64_t value, GlWorker &gl) {
  Result<void> issued = check_issued(value, "wait_gpu");
  if (!issued)
    return issued;
  // Every point here is an EglFencePoint: only adopt() adds points.
  const std::shared_ptr<const SyncPoint> point = point_of(value);
  if (!point)
    return {};
  return gl.wait_fence(static_cast<const EglFencePoint &>(*point).fence());
}

} // namespace tensormem

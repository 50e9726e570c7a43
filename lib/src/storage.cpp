// SPDX-License-Identifier: Apache-2.0
#include <tensormem/storage.hpp>

#include <algorithm>
#include <cerrno>
#include <new>

namespace tensormem {

/// The keep-alive behind a scoped pin: it holds the storage and releases the
/// one MapState acquisition when the last holder drops it, so each map
/// releases exactly once however many pin shares exist.
class MapLease {
public:
  explicit MapLease(std::shared_ptr<Storage> storage) noexcept : storage_(std::move(storage)) {}
  MapLease(const MapLease &) = delete;
  MapLease &operator=(const MapLease &) = delete;
  ~MapLease() { storage_->release_map(); }

private:
  std::shared_ptr<Storage> storage_;
};

Result<std::byte *> Storage::acquire_map(CpuAccess access, MapState::Wait wait) {
  return state_.acquire(*this, size_, access, wait);
}

namespace {

/// A pin that releases the acquisition behind `data` when its last share goes.
Result<HostPin> leased_pin(const std::shared_ptr<Storage> &storage, Result<std::byte *> data) {
  if (!data)
    return std::move(data).error();
  try {
    return HostPin(std::make_shared<MapLease>(storage), *data, storage->size_bytes());
  } catch (const std::bad_alloc &) {
    storage->release_map();
    return Error::io(ENOMEM, "map: the pin's lease");
  }
}

} // namespace

Result<HostPin> Storage::map(CpuAccess access, MapState::Wait wait) {
  return leased_pin(shared_from_this(), acquire_map(access, wait));
}

Result<HostPin> Storage::pin_live_map() { return leased_pin(shared_from_this(), state_.retain()); }

Storage::~Storage() { run_destroy_hooks(); }

void Storage::run_destroy_hooks() noexcept {
  // No lock: nobody else holds a reference to a storage being destroyed.
  std::vector<std::function<void()>> hooks;
  hooks.swap(destroy_hooks_);
  for (auto &hook : hooks)
    hook();
}

void Storage::on_destroy(std::function<void()> hook) {
  std::lock_guard lock(hooks_mu_);
  destroy_hooks_.push_back(std::move(hook));
}

Result<StorageHandle> Storage::export_handle() {
  return Error::not_implemented(std::string("export_handle: ") + storage_kind_name(kind()) +
                                " storage exports no handle");
}

Result<HostPin> Storage::pin_host(CpuAccess) {
  return Error::not_implemented(std::string("pin_host: ") + storage_kind_name(kind()) +
                                " storage has no host address that outlives a map; use map()");
}

namespace {

/// \brief Waits for (or, when `may_block` is false, polls) every completion
/// in `points`, all together bounded by `deadline`; `what` names them in
/// the error ("GPU write", "read"); `cancel` (or null) can end the wait.
Result<void> wait_all(const std::vector<GpuCompletion> &points, std::chrono::steady_clock::time_point deadline,
                      bool may_block, const char *what, const WaitCancel *cancel = nullptr) {
  for (const GpuCompletion &p : points) {
    if (!may_block) {
      Result<bool> done = p.timeline->signalled(p.value);
      if (!done)
        return std::move(done).error();
      if (!*done)
        return Error::would_block(std::string("the ") + what + " recorded as value " + std::to_string(p.value) +
                                  " on " + p.timeline->label() + " has not completed");
      continue;
    }
    const auto left =
        std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero());
    Result<void> waited =
        p.timeline->wait_cpu(p.value, std::chrono::duration_cast<std::chrono::nanoseconds>(left), cancel);
    if (!waited)
      return Error(waited.error().kind(),
                   std::string("waiting for the recorded ") + what + ": " + waited.error().message());
  }
  return {};
}

/// \brief Newest value per timeline into `list` (an older value arriving
/// late never replaces a newer one).
void keep_newest(std::vector<GpuCompletion> &list, std::shared_ptr<Timeline> timeline, std::uint64_t value) {
  auto same = std::find_if(list.begin(), list.end(), [&](const GpuCompletion &c) { return c.timeline == timeline; });
  if (same == list.end())
    list.push_back(GpuCompletion{std::move(timeline), value});
  else
    same->value = std::max(same->value, value);
}

/// \brief Drops from `list` every completion that `completed` shows reached.
void forget_completed(std::vector<GpuCompletion> &list, const std::vector<GpuCompletion> &completed) {
  std::erase_if(list, [&](const GpuCompletion &r) {
    return std::any_of(completed.begin(), completed.end(),
                       [&](const GpuCompletion &c) { return c.timeline == r.timeline && c.value >= r.value; });
  });
}

} // namespace

/// \brief Records a GPU write into this storage that completes when
/// `timeline` reaches `value`; CPU maps wait for it first.
///
/// Per timeline the newest value wins: an older value arriving late never
/// replaces a newer one. Value 0 records nothing.
/// \return InvalidArgument for a null timeline or for a value the timeline
/// never issued: a map would otherwise wait on a point nothing signals.
Result<void> Storage::record_write(std::shared_ptr<Timeline> timeline, std::uint64_t value) {
  Result<void> result;
  if (!accept_completion(timeline.get(), value, "record_write", &result))
    return result;
  std::lock_guard lock(writes_mu_);
  keep_newest(writes_, std::move(timeline), value);
  note_recorded();
  return {};
}

bool Storage::accept_completion(const Timeline *timeline, std::uint64_t value, const char *what, Result<void> *result) {
  if (!timeline) {
    *result = Error::invalid_argument(std::string(what) + ": no timeline");
    return false;
  }
  *result = timeline->check_issued(value, what);
  return *result && value != 0;
}

void Storage::note_recorded() noexcept {
  ordering_recorded_.store(!writes_.empty() || !reads_.empty(), std::memory_order_release);
}

bool Storage::map_is_immediate(CpuAccess access) const noexcept {
  return !ordering_recorded_.load(std::memory_order_acquire) && backend_is_immediate(access);
}

/// \brief The newest recorded GPU write on each timeline that wrote here.
std::vector<GpuCompletion> Storage::gpu_completion() const {
  std::lock_guard lock(writes_mu_);
  return writes_;
}

/// \brief Bounds the CPU wait of later maps; a negative bound is 0 (poll once).
void Storage::set_fence_timeout(std::chrono::nanoseconds timeout) noexcept {
  fence_timeout_ns_.store(std::max<std::int64_t>(timeout.count(), 0));
}

std::chrono::nanoseconds Storage::fence_timeout() const noexcept {
  return std::chrono::nanoseconds(fence_timeout_ns_.load());
}

/// \brief Records a read of this storage that completes when `timeline`
/// reaches `value`.
///
/// Reads already known complete are dropped first, so a pooled storage read
/// by a new timeline every frame keeps a short list. Querying them is a
/// cheap poll for the kinds readers use (software, sync_file).
/// \return InvalidArgument for a null timeline or a value never issued.
Result<void> Storage::record_read(std::shared_ptr<Timeline> timeline, std::uint64_t value) {
  Result<void> result;
  if (!accept_completion(timeline.get(), value, "record_read", &result))
    return result;
  try {
    Result<std::vector<GpuCompletion>> running = pending_reads(); // forgets the completed
    if (!running)
      return std::move(running).error();
    std::lock_guard lock(writes_mu_);
    keep_newest(reads_, std::move(timeline), value);
    note_recorded();
    return {};
  } catch (const std::bad_alloc &) {
    return Error::io(ENOMEM, "record_read");
  }
}

/// \brief The recorded reads still running; completed ones are forgotten.
Result<std::vector<GpuCompletion>> Storage::pending_reads() {
  if (!ordering_recorded_.load(std::memory_order_acquire)) // every pool recycle of a storage nobody read
    return std::vector<GpuCompletion>{};
  try {
    std::vector<GpuCompletion> reads;
    {
      std::lock_guard lock(writes_mu_);
      reads = reads_;
    }
    std::vector<GpuCompletion> running;
    std::vector<GpuCompletion> completed;
    for (GpuCompletion &r : reads) {
      Result<bool> done = r.timeline->signalled(r.value);
      if (!done)
        return std::move(done).error();
      (*done ? completed : running).push_back(std::move(r));
    }
    if (!completed.empty()) {
      std::lock_guard lock(writes_mu_);
      forget_completed(reads_, completed); // a newer read recorded meanwhile stays
      note_recorded();
    }
    return running;
  } catch (const std::bad_alloc &) {
    return Error::io(ENOMEM, "pending_reads");
  }
}

/// \brief Waits for every recorded read, bounded, and forgets them.
Result<std::size_t> Storage::wait_for_reads(std::chrono::nanoseconds timeout, const WaitCancel *cancel) {
  Result<std::vector<GpuCompletion>> running = pending_reads();
  if (!running)
    return std::move(running).error();
  if (running->empty())
    return std::size_t{0};
  const auto deadline = std::chrono::steady_clock::now() + std::max(timeout, std::chrono::nanoseconds::zero());
  Result<void> waited = wait_all(*running, deadline, true, "read", cancel);
  if (!waited)
    return std::move(waited).error();
  Result<std::vector<GpuCompletion>> left = pending_reads(); // forgets the ones just waited for
  if (!left)
    return std::move(left).error();
  return running->size();
}

/// \brief Orders a CPU map behind every recorded GPU write, and a map that
/// writes also behind every recorded read: a blocking map waits on the CPU,
/// all together bounded by fence_timeout(); a non-blocking one answers
/// WouldBlock while any is outstanding.
Result<void> Storage::order_before_map(CpuAccess access, bool may_block) noexcept {
  if (!ordering_recorded_.load(std::memory_order_acquire)) // the common case: no lock, nothing to wait for
    return order_backend_map(access, may_block);
  try {
    std::vector<GpuCompletion> writes;
    std::vector<GpuCompletion> reads;
    {
      std::lock_guard lock(writes_mu_);
      writes = writes_;
      if (access_writes(access))
        reads = reads_;
    }
    if (writes.empty() && reads.empty()) // the common case: no clock read, nothing to wait for
      return order_backend_map(access, may_block);
    const auto deadline = std::chrono::steady_clock::now() + fence_timeout();
    Result<void> written = wait_all(writes, deadline, may_block, "GPU write");
    if (!written)
      return Error(written.error().kind(), "map: " + written.error().message());
    Result<void> read = wait_all(reads, deadline, may_block, "read");
    if (!read)
      return Error(read.error().kind(), "map: " + read.error().message());
    return order_backend_map(access, may_block);
  } catch (const std::bad_alloc &) {
    return Error::io(ENOMEM, "map: ordering behind the recorded GPU writes");
  } catch (...) {
    return Error::device("map: ordering behind the recorded GPU writes failed unexpectedly");
  }
}

} // namespace tensormem

// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorsidecache-private.h>

namespace gst_tensormem {

namespace {

struct ObjectAnchor {
  SideCacheBase *cache;
  tensormem::BufferIdentity id;
  std::uint64_t serial;
};

} // namespace

std::size_t SideCacheBase::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::shared_ptr<void> SideCacheBase::find_value(const tensormem::BufferIdentity &id) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key_of(id));
  return it == entries_.end() ? nullptr : it->second.value;
}

std::pair<std::shared_ptr<void>, std::uint64_t> SideCacheBase::insert_value(const tensormem::BufferIdentity &id,
                                                                            std::shared_ptr<void> value) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = entries_.try_emplace(key_of(id), Entry{next_serial_, std::move(value)});
  if (!inserted)
    return {it->second.value, 0};
  return {it->second.value, next_serial_++};
}

void SideCacheBase::erase(const tensormem::BufferIdentity &id, std::uint64_t serial) noexcept {
  std::shared_ptr<void> dropped;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key_of(id));
    if (it == entries_.end() || it->second.serial != serial)
      return;
    dropped = std::move(it->second.value);
    entries_.erase(it);
  }
  // `dropped` goes here, after the lock: its destructor may call into GL or CUDA.
}

void SideCacheBase::anchor_to_storage(tensormem::Storage &anchor, const tensormem::BufferIdentity &id,
                                      std::uint64_t serial) {
  anchor.on_destroy([this, id, serial]() noexcept { erase(id, serial); });
}

void SideCacheBase::anchor_to_object(GstMiniObject *anchor, const tensormem::BufferIdentity &id, std::uint64_t serial) {
  auto *data = new ObjectAnchor{this, id, serial};
  gst_mini_object_weak_ref(
      anchor,
      [](gpointer user_data, GstMiniObject *) {
        auto *a = static_cast<ObjectAnchor *>(user_data);
        a->cache->erase(a->id, a->serial);
        delete a;
      },
      data);
}

} // namespace gst_tensormem

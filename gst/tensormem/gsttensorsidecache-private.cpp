// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorsidecache-private.h>

namespace gst_tensormem {

namespace {

struct ObjectAnchor {
  SideCacheBase *cache;
  SideKey key;
  std::uint64_t serial;
};

} // namespace

std::size_t SideCacheBase::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::shared_ptr<void> SideCacheBase::find_value(const SideKey &key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second.value;
}

std::pair<std::shared_ptr<void>, std::uint64_t> SideCacheBase::insert_value(const SideKey &key,
                                                                            std::shared_ptr<void> value) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = entries_.try_emplace(key, Entry{next_serial_, std::move(value)});
  if (!inserted)
    return {it->second.value, 0};
  return {it->second.value, next_serial_++};
}

void SideCacheBase::erase(const SideKey &key, std::uint64_t serial) noexcept {
  std::shared_ptr<void> dropped;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.serial != serial)
      return;
    dropped = std::move(it->second.value);
    entries_.erase(it);
  }
  // `dropped` goes here, after the lock: its destructor may call into GL or CUDA.
}

void SideCacheBase::anchor_to_storage(tensormem::Storage &anchor, const SideKey &key, std::uint64_t serial) {
  anchor.on_destroy([this, key, serial]() noexcept { erase(key, serial); });
}

void SideCacheBase::anchor_to_object(GstMiniObject *anchor, const SideKey &key, std::uint64_t serial) {
  gst_mini_object_weak_ref(
      anchor,
      [](gpointer user_data, GstMiniObject *) {
        auto *a = static_cast<ObjectAnchor *>(user_data);
        a->cache->erase(a->key, a->serial);
        delete a;
      },
      new ObjectAnchor{this, key, serial});
}

} // namespace gst_tensormem

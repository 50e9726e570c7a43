// SPDX-License-Identifier: Apache-2.0
#pragma once

// Side data kept per buffer (a CUDA import of a storage; in libgsttensormem,
// the storage imported for a foreign DMA-BUF), in one kind of cache keyed on
// the storage's identity in its scope (StorageKey). Header-only.

#include <tensormem/storage.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace tensormem {

/// The type-erased part of SideCache: a map from StorageKey to a value, with
/// its own lock. The lock guards the map only: it is never held while a
/// value is made or destroyed, so a value's destructor may call into GL or
/// CUDA. Each entry belongs to an anchor (the storage it was cached for, or
/// an object of a layer above) and is dropped when its anchor dies.
class SideCacheBase {
public:
  SideCacheBase() = default;
  SideCacheBase(const SideCacheBase &) = delete;
  SideCacheBase &operator=(const SideCacheBase &) = delete;

  std::size_t size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }

  /// Drops entry `serial` under `key` (what an anchor's death does); a newer
  /// entry under the same key stays. The value is released after the lock.
  void erase(const StorageKey &key, std::uint64_t serial) noexcept { drop(key, serial); }
  /// Drops whatever entry is under `key`.
  void forget(const StorageKey &key) noexcept { drop(key, 0); }

protected:
  /// Caches `value` under `key` unless an entry is there already (`replace`:
  /// in its place); returns the cached value and, when `value` was taken,
  /// the entry's serial (else 0). A replaced value is released after the lock.
  std::pair<std::shared_ptr<void>, std::uint64_t> insert_value(const StorageKey &key, std::shared_ptr<void> value,
                                                               bool replace = false) {
    std::shared_ptr<void> dropped;
    std::lock_guard lock(mu_);
    auto [it, inserted] = entries_.try_emplace(key, Entry{next_serial_, value});
    if (!inserted && !replace)
      return {it->second.value, 0};
    if (!inserted) {
      dropped = std::exchange(it->second.value, std::move(value));
      it->second.serial = next_serial_;
    }
    return {it->second.value, next_serial_++};
  }

  std::shared_ptr<void> find_value(const StorageKey &key) const {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second.value;
  }

  /// Anchors entry `serial` under `key`: dropped when `anchor` is destroyed.
  /// The cache must outlive the anchor (caches live for the whole process).
  void anchor_to_storage(Storage &anchor, const StorageKey &key, std::uint64_t serial) {
    anchor.on_destroy([this, key, serial]() noexcept { erase(key, serial); });
  }

private:
  struct Entry {
    std::uint64_t serial;
    std::shared_ptr<void> value;
  };

  // Serial 0 matches any entry.
  void drop(const StorageKey &key, std::uint64_t serial) noexcept {
    std::shared_ptr<void> dropped; // released after the lock
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || (serial != 0 && it->second.serial != serial))
      return;
    dropped = std::move(it->second.value);
    entries_.erase(it);
  }

  mutable std::mutex mu_;
  std::map<StorageKey, Entry> entries_;
  std::uint64_t next_serial_ = 1;
};

/// One cache of `T` per buffer. Make caches for the whole process (with new,
/// never deleted), so an anchor dying late still finds its cache.
template <typename T> class SideCache : public SideCacheBase {
public:
  /// The value cached for `key`, or empty.
  std::shared_ptr<T> find(const StorageKey &key) const { return std::static_pointer_cast<T>(find_value(key)); }

  /// Caches `value` for `storage`'s buffer until `storage` dies. When two
  /// callers race, the first value stays and is what both get back; with
  /// `replace`, `value` takes the place of any cached one.
  std::shared_ptr<T> insert_for_storage(Storage &storage, std::shared_ptr<T> value, bool replace = false) {
    const StorageKey key = StorageKey::of(storage);
    auto [cached, serial] = insert_value(key, std::move(value), replace);
    if (serial != 0)
      anchor_to_storage(storage, key, serial);
    return std::static_pointer_cast<T>(cached);
  }
};

} // namespace tensormem

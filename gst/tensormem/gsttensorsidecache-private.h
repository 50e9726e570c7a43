// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: side data kept per storage (the storage
 * imported for a foreign DMA-BUF, a CUDA handle, later D3D11 shared handles),
 * in one kind of cache keyed on the storage's identity. Not installed. */
#pragma once

#include <gst/gst.h>

#include <tensormem/storage.hpp>
#include <tensormem/types.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace gst_tensormem {

/* The type-erased part of SideCache: a map from BufferIdentity to a value,
 * with its own lock. The lock guards the map only: it is never held while a
 * value is made or destroyed, so a value's destructor may call into GL or
 * CUDA. Each entry belongs to an anchor (a storage, or a GstMiniObject such
 * as the foreign memory an import was made from) and is dropped when its
 * anchor dies. */
class SideCacheBase {
public:
  SideCacheBase() = default;
  SideCacheBase(const SideCacheBase &) = delete;
  SideCacheBase &operator=(const SideCacheBase &) = delete;

  std::size_t size() const;

  /* Drops entry `serial` under `id` (what an anchor's death does); a newer
   * entry under the same identity stays. The value is released after the
   * lock. */
  void erase(const tensormem::BufferIdentity &id, std::uint64_t serial) noexcept;

protected:
  std::shared_ptr<void> find_value(const tensormem::BufferIdentity &id) const;
  /* Caches `value` under `id` unless an entry is there already; returns the
   * cached value and, when `value` was taken, the entry's serial (else 0). */
  std::pair<std::shared_ptr<void>, std::uint64_t> insert_value(const tensormem::BufferIdentity &id,
                                                               std::shared_ptr<void> value);
  /* Anchors entry `serial` under `id`: dropped when `anchor` is destroyed. */
  void anchor_to_storage(tensormem::Storage &anchor, const tensormem::BufferIdentity &id, std::uint64_t serial);
  void anchor_to_object(GstMiniObject *anchor, const tensormem::BufferIdentity &id, std::uint64_t serial);

private:
  struct Key {
    tensormem::StorageKind kind;
    std::uint64_t key;
    friend bool operator<(const Key &a, const Key &b) noexcept {
      return a.kind != b.kind ? a.kind < b.kind : a.key < b.key;
    }
  };
  struct Entry {
    std::uint64_t serial;
    std::shared_ptr<void> value;
  };
  static Key key_of(const tensormem::BufferIdentity &id) noexcept { return {id.kind, id.key}; }

  mutable std::mutex mu_;
  std::map<Key, Entry> entries_;
  std::uint64_t next_serial_ = 1;
};

/* One cache of `T` per storage identity. Caches live for the whole process
 * (function-local statics made with new), so an anchor dying late still finds
 * its cache. */
template <typename T> class SideCache : public SideCacheBase {
public:
  /* The value cached for `id`, or empty. */
  std::shared_ptr<T> find(const tensormem::BufferIdentity &id) const {
    return std::static_pointer_cast<T>(find_value(id));
  }

  /* Caches `value` for `storage`'s identity until `storage` dies. When two
   * callers race, the first value stays and is what both get back. */
  std::shared_ptr<T> insert_for_storage(tensormem::Storage &storage, std::shared_ptr<T> value) {
    const tensormem::BufferIdentity id = storage.identity();
    auto [cached, serial] = insert_value(id, std::move(value));
    if (serial != 0)
      anchor_to_storage(storage, id, serial);
    return std::static_pointer_cast<T>(cached);
  }

  /* Caches `value` under `id` until `object` is finalized. */
  std::shared_ptr<T> insert_for_object(GstMiniObject *object, const tensormem::BufferIdentity &id,
                                       std::shared_ptr<T> value) {
    auto [cached, serial] = insert_value(id, std::move(value));
    if (serial != 0)
      anchor_to_object(object, id, serial);
    return std::static_pointer_cast<T>(cached);
  }
};

} // namespace gst_tensormem

// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: side data kept per storage (the storage
 * imported for a foreign DMA-BUF, a CUDA handle, later D3D11 shared handles),
 * in one kind of cache keyed on the storage's identity. Not installed. */
#pragma once

#include <gst/gst.h>

#include <tensormem/storage.hpp>
#include <tensormem/types.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace gst_tensormem {

/* Which buffer an entry belongs to: the storage's identity, in the scope
 * where it is unique (Storage::identity_scope()). */
struct SideKey {
  tensormem::BufferIdentity id;
  const void *scope = nullptr;

  static SideKey of(const tensormem::Storage &storage) noexcept {
    return {storage.identity(), storage.identity_scope()};
  }
  friend bool operator<(const SideKey &a, const SideKey &b) noexcept {
    if (a.id.kind != b.id.kind)
      return a.id.kind < b.id.kind;
    if (a.id.key != b.id.key)
      return a.id.key < b.id.key;
    return std::less<const void *>()(a.scope, b.scope);
  }
};

/* The type-erased part of SideCache: a map from SideKey to a value, with its
 * own lock. The lock guards the map only: it is never held while a value is
 * made or destroyed, so a value's destructor may call into GL or CUDA. Each
 * entry belongs to an anchor (a storage, or a GstMiniObject such as the
 * foreign memory an import was made from) and is dropped when its anchor
 * dies. */
class SideCacheBase {
public:
  SideCacheBase() = default;
  SideCacheBase(const SideCacheBase &) = delete;
  SideCacheBase &operator=(const SideCacheBase &) = delete;

  std::size_t size() const;

  /* Drops entry `serial` under `key` (what an anchor's death does); a newer
   * entry under the same key stays. The value is released after the lock. */
  void erase(const SideKey &key, std::uint64_t serial) noexcept;

protected:
  std::shared_ptr<void> find_value(const SideKey &key) const;
  /* Caches `value` under `key` unless an entry is there already; returns the
   * cached value and, when `value` was taken, the entry's serial (else 0). */
  std::pair<std::shared_ptr<void>, std::uint64_t> insert_value(const SideKey &key, std::shared_ptr<void> value);
  /* Anchors entry `serial` under `key`: dropped when `anchor` is destroyed. */
  void anchor_to_storage(tensormem::Storage &anchor, const SideKey &key, std::uint64_t serial);
  void anchor_to_object(GstMiniObject *anchor, const SideKey &key, std::uint64_t serial);

private:
  struct Entry {
    std::uint64_t serial;
    std::shared_ptr<void> value;
  };

  mutable std::mutex mu_;
  std::map<SideKey, Entry> entries_;
  std::uint64_t next_serial_ = 1;
};

/* One cache of `T` per buffer. Caches live for the whole process (made with
 * new and never deleted), so an anchor dying late still finds its cache. */
template <typename T> class SideCache : public SideCacheBase {
public:
  /* The value cached for `key`, or empty. */
  std::shared_ptr<T> find(const SideKey &key) const { return std::static_pointer_cast<T>(find_value(key)); }

  /* Caches `value` for `storage`'s buffer until `storage` dies. When two
   * callers race, the first value stays and is what both get back. */
  std::shared_ptr<T> insert_for_storage(tensormem::Storage &storage, std::shared_ptr<T> value) {
    const SideKey key = SideKey::of(storage);
    auto [cached, serial] = insert_value(key, std::move(value));
    if (serial != 0)
      anchor_to_storage(storage, key, serial);
    return std::static_pointer_cast<T>(cached);
  }

  /* Caches `value` under `key` until `object` is finalized. */
  std::shared_ptr<T> insert_for_object(GstMiniObject *object, const SideKey &key, std::shared_ptr<T> value) {
    auto [cached, serial] = insert_value(key, std::move(value));
    if (serial != 0)
      anchor_to_object(object, key, serial);
    return std::static_pointer_cast<T>(cached);
  }
};

} // namespace gst_tensormem

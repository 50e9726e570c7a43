// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: side data kept per storage (the storage
 * imported for a foreign DMA-BUF), in one kind of cache keyed on the
 * storage's identity. CUDA handles are cached in libtensormem
 * (tensormem/cuda_import.hpp). Not installed. */
#pragma once

#include <gst/gst.h>

#include <tensormem/internal/side_cache.hpp>
#include <tensormem/storage.hpp>

#include <cstdint>
#include <memory>

namespace gst_tensormem {

/* Which buffer an entry belongs to: the storage's identity, in the scope
 * where it is unique (the key of libtensormem's caches too). */
using SideKey = tensormem::StorageKey;

/* Anchors entry `serial` under `key` of `cache` to `anchor`: dropped when
 * `anchor` is finalized. */
void anchor_to_object(tensormem::SideCacheBase &cache, GstMiniObject *anchor, const SideKey &key, std::uint64_t serial);

/* libtensormem's per-buffer cache (tensormem/side_cache.hpp: one lock that
 * guards the map only, entries dropped with the storage they were cached
 * for), whose entries may also belong to a GstMiniObject. */
template <typename T> class SideCache : public tensormem::SideCache<T> {
public:
  /* Caches `value` under `key` until `object` is finalized. */
  std::shared_ptr<T> insert_for_object(GstMiniObject *object, const SideKey &key, std::shared_ptr<T> value) {
    auto [cached, serial] = this->insert_value(key, std::move(value));
    if (serial != 0)
      anchor_to_object(*this, object, key, serial);
    return std::static_pointer_cast<T>(cached);
  }
};

} // namespace gst_tensormem

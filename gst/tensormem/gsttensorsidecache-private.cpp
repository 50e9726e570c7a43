// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorsidecache-private.h>

namespace gst_tensormem {

namespace {

struct ObjectAnchor {
  tensormem::SideCacheBase *cache;
  SideKey key;
  std::uint64_t serial;
};

} // namespace

void anchor_to_object(tensormem::SideCacheBase &cache, GstMiniObject *anchor, const SideKey &key,
                      std::uint64_t serial) {
  gst_mini_object_weak_ref(
      anchor,
      [](gpointer user_data, GstMiniObject *) {
        auto *a = static_cast<ObjectAnchor *>(user_data);
        a->cache->erase(a->key, a->serial);
        delete a;
      },
      new ObjectAnchor{&cache, key, serial});
}

} // namespace gst_tensormem

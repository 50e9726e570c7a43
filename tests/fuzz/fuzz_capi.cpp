// SPDX-License-Identifier: Apache-2.0
/* fuzz-capi: the C ABI of libtensormem and its PBO client channel
 * (tensormem.h) under random calls and arguments. The "GL buffers" are a
 * fake producer's: heap bytes behind a tm_pbo_ops table whose map can fail,
 * disconnect, answer an unknown code, or hand back a short length or a null
 * address, as the input says. No GL context is needed: the channel is the
 * C table, and what is fuzzed is libtensormem's side of it (a GL-backed
 * producer's table is the same code path one level down, PboChannel::map,
 * reached here through tm_tensor_pbo_table() of a wrapped tensor and by
 * wrapping that table again, as a second library would).
 *
 * Calls: tm_tensor_wrap_pbo (a NULL table, NULL members, NULL out, wrong
 * dtype values, NULL or absurd shapes), tm_tensor_allocate, _clone, _view
 * (any offset and shape), _free (NULL too), _pbo_table and direct calls of
 * its map/unmap (wrong buffer id, NULL out pointers), _map/_unmap for every
 * access value, _into_client_parts and tm_pbo_client_parts_release twice
 * (double release), the getters with NULL and short arrays; every tm_error
 * pointer NULL or not.
 * Asserted: a failure fills tm_error with the status returned and a
 * NUL-terminated non-empty message, and success leaves it untouched; a map
 * hands out exactly tm_tensor_size_bytes() bytes, all readable (and
 * writable for a writable map) inside the producer's buffer; the library
 * never maps a buffer id it was not given nor more than the buffer; after
 * everything is freed each producer's retains and releases balance and every
 * map of its buffer was unmapped. */
#include "fuzz_input.hpp"

#include <tensormem/tensormem.h>

#include <array>
#include <memory>
#include <vector>

using tensormem_fuzz::FuzzInput;

namespace {

/* One producer: a buffer of `bytes` under name `id`, reached through `ops`. */
struct Producer {
  std::uint32_t id = 0;
  std::vector<std::uint8_t> bytes;
  int refs = 0;          // retains minus releases
  int live_maps = 0;     // maps handed out minus unmaps
  int fail_mode = 0;     // 0 ok, 1 TM_PBO_FAILED, 2 DISCONNECTED, 3 unknown code, 4 short, 5 null address
  tm_pbo_ops ops{};
};

void p_retain(const void *ctx) { ++static_cast<Producer *>(const_cast<void *>(ctx))->refs; }
void p_release(const void *ctx) {
  auto *p = static_cast<Producer *>(const_cast<void *>(ctx));
  FUZZ_CHECK(p->refs > 0, "release of producer %u with no retain", p->id);
  --p->refs;
}
int p_map(const void *ctx, std::uint32_t id, std::size_t size, std::uint8_t **out, std::size_t *len) {
  auto *p = static_cast<Producer *>(const_cast<void *>(ctx));
  FUZZ_CHECK(id == p->id, "map of buffer %u through producer %u", id, p->id);
  FUZZ_CHECK(size <= p->bytes.size(), "map of %zu bytes of a %zu-byte buffer", size, p->bytes.size());
  FUZZ_CHECK(out != nullptr && len != nullptr, "map with NULL out pointers");
  switch (p->fail_mode) {
  case 1: return TM_PBO_FAILED;
  case 2: return TM_PBO_DISCONNECTED;
  case 3: return 42;
  case 4: *out = p->bytes.data(); *len = size / 2; break;
  case 5: *out = nullptr; *len = size; break;
  default: *out = p->bytes.data(); *len = p->bytes.size(); break;
  }
  ++p->live_maps;
  return TM_PBO_OK;
}
int p_unmap(const void *ctx, std::uint32_t id) {
  auto *p = static_cast<Producer *>(const_cast<void *>(ctx));
  FUZZ_CHECK(id == p->id, "unmap of buffer %u through producer %u", id, p->id);
  FUZZ_CHECK(p->live_maps > 0, "unmap of producer %u with no map", p->id);
  --p->live_maps;
  return TM_PBO_OK;
}

struct Session {
  explicit Session(FuzzInput &input) : in(input) {}
  FuzzInput &in;
  std::vector<std::unique_ptr<Producer>> producers;
  std::vector<tm_tensor *> tensors;
  struct Map {
    tm_map *map;
    bool writable;
  };
  std::vector<Map> maps;
  tm_error err{};

  tm_error untouched{}; // what err holds before each call: bytes no call writes

  tm_error *error_arg() {
    std::memset(&untouched, 0x5a, sizeof untouched);
    std::memcpy(&err, &untouched, sizeof err);
    return in.pick(4) == 0 ? nullptr : &err;
  }
  void check(tm_status st, const tm_error *e, const char *call) {
    if (e == nullptr)
      return;
    if (st == TM_OK) {
      FUZZ_CHECK(std::memcmp(e, &untouched, sizeof untouched) == 0, "%s succeeded and wrote tm_error", call);
      return;
    }
    FUZZ_CHECK(e->status == st, "%s returned %d, tm_error says %d", call, st, e->status);
    const std::size_t n = strnlen(e->message, TM_ERROR_MESSAGE_MAX);
    FUZZ_CHECK(n > 0 && n < TM_ERROR_MESSAGE_MAX, "%s: message of %zu characters", call, n);
  }
  tm_tensor *any_tensor() {
    if (tensors.empty() || in.pick(8) == 0)
      return nullptr;
    return tensors[in.pick(static_cast<std::uint32_t>(tensors.size()))];
  }
  void shape(std::array<std::size_t, 5> &dims, std::size_t *ndim) {
    *ndim = in.pick(5);
    for (std::size_t i = 0; i < *ndim; ++i)
      dims[i] = in.pick(16) == 0 ? static_cast<std::size_t>(in.u64()) : in.range(0, 9);
  }
  tm_dtype dtype() { return static_cast<tm_dtype>(in.pick(10)); } // 9 is no dtype

  void wrap() {
    tm_pbo_ops ops{};
    const tm_pbo_ops *table = &ops;
    const Producer *own = nullptr;
    std::uint32_t id = 0;
    std::size_t size = 0;
    if (in.pick(4) == 0 && !tensors.empty()) {
      // Another library's view of one of ours: the table tm_tensor_pbo_table
      // gives, with any size (libtensormem knows the buffer's real size here).
      tm_tensor *src = tensors[in.pick(static_cast<std::uint32_t>(tensors.size()))];
      if (tm_tensor_pbo_table(src, &table, nullptr) != TM_OK)
        return;
      id = tm_tensor_buffer_id(src);
      size = in.range(0, 4096);
    } else {
      auto p = std::make_unique<Producer>();
      p->id = in.range(1, 1000);
      p->bytes.resize(in.range(0, 2048));
      p->ops.state = {p.get(), p_retain, p_release};
      p->ops.map = p_map;
      p->ops.unmap = p_unmap;
      ops = p->ops;
      switch (in.pick(12)) { // a table with a hole
      case 0: ops.state.ctx = nullptr; break;
      case 1: ops.state.retain = nullptr; break;
      case 2: ops.state.release = nullptr; break;
      case 3: ops.map = nullptr; break;
      case 4: ops.unmap = nullptr; break;
      case 5: table = nullptr; break;
      default: break;
      }
      own = p.get();
      id = p->id;
      size = p->bytes.size();
      producers.push_back(std::move(p));
    }
    if (!own && in.pick(8) == 0)
      id = in.u32(); // the channel answers for its own buffer only
    if (in.pick(8) == 0)
      size = in.pick(4) == 0 ? static_cast<std::size_t>(in.u64()) : in.range(0, 4096);
    // A producer's buffer is as large as its wrapper says (only its GL
    // driver could know otherwise); the fake asserts nothing maps past it.
    if (own && size > own->bytes.size())
      size = own->bytes.size();
    std::array<std::size_t, 5> dims{};
    std::size_t ndim = 0;
    shape(dims, &ndim);
    tm_tensor *t = nullptr;
    tm_error *e = error_arg();
    const tm_status st = tm_tensor_wrap_pbo(table, id, size, in.pick(8) == 0 ? nullptr : dims.data(), ndim, dtype(),
                                            in.flag() ? nullptr : "fuzz", in.pick(16) == 0 ? nullptr : &t, e);
    check(st, e, "tm_tensor_wrap_pbo");
    if (st == TM_OK) {
      FUZZ_CHECK(t != nullptr, "wrap_pbo succeeded without a tensor");
      tensors.push_back(t);
    }
  }

  void allocate() {
    std::array<std::size_t, 5> dims{};
    std::size_t ndim = 0;
    shape(dims, &ndim);
    for (std::size_t i = 0; i < ndim; ++i)
      dims[i] %= 64; // heap tensors stay small
    tm_tensor *t = nullptr;
    tm_error *e = error_arg();
    const tm_status st = tm_tensor_allocate(dims.data(), ndim, dtype(), nullptr, in.pick(16) == 0 ? nullptr : &t, e);
    check(st, e, "tm_tensor_allocate");
    if (st == TM_OK)
      tensors.push_back(t);
  }

  void clone_or_view(bool view) {
    tm_tensor *src = any_tensor();
    tm_tensor *t = nullptr;
    tm_error *e = error_arg();
    tm_status st;
    if (view) {
      std::array<std::size_t, 5> dims{};
      std::size_t ndim = 0;
      shape(dims, &ndim);
      const std::size_t offset = in.pick(8) == 0 ? static_cast<std::size_t>(in.u64()) : in.range(0, 256);
      st = tm_tensor_view(src, offset, dims.data(), ndim, &t, e);
    } else {
      st = tm_tensor_clone(src, in.pick(16) == 0 ? nullptr : &t, e);
    }
    check(st, e, view ? "tm_tensor_view" : "tm_tensor_clone");
    if (st == TM_OK)
      tensors.push_back(t);
  }

  void free_one() {
    if (tensors.empty() || in.pick(8) == 0) {
      tm_tensor_free(nullptr);
      return;
    }
    const std::size_t i = in.pick(static_cast<std::uint32_t>(tensors.size()));
    tm_tensor_free(tensors[i]);
    tensors.erase(tensors.begin() + static_cast<std::ptrdiff_t>(i));
  }

  void map() {
    tm_tensor *t = any_tensor();
    const auto access = static_cast<tm_access>(in.pick(4)); // NONE included
    tm_map *m = nullptr;
    std::uint8_t *ptr = nullptr;
    std::size_t len = 0;
    tm_error *e = error_arg();
    const tm_status st = tm_tensor_map(t, access, in.pick(16) == 0 ? nullptr : &m, in.pick(16) == 0 ? nullptr : &ptr,
                                       in.pick(16) == 0 ? nullptr : &len, e);
    check(st, e, "tm_tensor_map");
    if (st != TM_OK)
      return;
    FUZZ_CHECK(m != nullptr && t != nullptr, "map succeeded without a map or a tensor");
    FUZZ_CHECK(len == tm_tensor_size_bytes(t), "map of %zu bytes of a %zu-byte tensor", len, tm_tensor_size_bytes(t));
    FUZZ_CHECK(len == 0 || ptr != nullptr, "map of %zu bytes at NULL", len);
    const bool writable = access == TM_ACCESS_WRITE || access == TM_ACCESS_READ_WRITE;
    volatile std::uint8_t sum = 0;
    for (std::size_t i = 0; i < len; ++i) {
      sum = static_cast<std::uint8_t>(sum + ptr[i]);
      if (writable)
        ptr[i] = static_cast<std::uint8_t>(i);
    }
    maps.push_back({m, writable});
  }

  void unmap() {
    if (maps.empty() || in.pick(8) == 0) {
      tm_tensor_unmap(nullptr);
      return;
    }
    const std::size_t i = in.pick(static_cast<std::uint32_t>(maps.size()));
    tm_tensor_unmap(maps[i].map);
    maps.erase(maps.begin() + static_cast<std::ptrdiff_t>(i));
  }

  void table_calls() {
    const tm_pbo_ops *table = nullptr;
    tm_tensor *t = any_tensor();
    tm_error *e = error_arg();
    const tm_status st = tm_tensor_pbo_table(t, in.pick(16) == 0 ? nullptr : &table, e);
    check(st, e, "tm_tensor_pbo_table");
    if (st != TM_OK)
      return;
    FUZZ_CHECK(table && table->map && table->unmap && table->state.retain && table->state.release,
               "a table with holes");
    const std::uint32_t id = in.pick(4) == 0 ? in.u32() : tm_tensor_buffer_id(t);
    std::uint8_t *ptr = nullptr;
    std::size_t len = 0;
    const std::size_t size = in.pick(4) == 0 ? in.range(0, 8192) : tm_tensor_size_bytes(t);
    table->state.retain(table->state.ctx);
    const int rc = table->map(table->state.ctx, id, size, in.pick(8) == 0 ? nullptr : &ptr,
                              in.pick(8) == 0 ? nullptr : &len);
    if (rc == TM_PBO_OK) {
      FUZZ_CHECK(id == tm_tensor_buffer_id(t), "the table mapped buffer %u for buffer %u", id, tm_tensor_buffer_id(t));
      if (ptr != nullptr && len >= size) {
        volatile std::uint8_t sum = 0;
        for (std::size_t i = 0; i < size; ++i)
          sum = static_cast<std::uint8_t>(sum + ptr[i]);
      }
      FUZZ_CHECK(table->unmap(table->state.ctx, id) == TM_PBO_OK, "unmap after a map failed");
    }
    if (in.pick(8) == 0)
      (void)table->unmap(table->state.ctx, in.u32()); // an unmap of nothing, or of another id
    table->state.release(table->state.ctx);
  }

  void parts_round() {
    if (tensors.empty())
      return;
    const std::size_t i = in.pick(static_cast<std::uint32_t>(tensors.size()));
    tm_pbo_client_parts p{};
    tm_error *e = error_arg();
    const tm_status st = tm_tensor_into_client_parts(tensors[i], in.pick(16) == 0 ? nullptr : &p, e);
    check(st, e, "tm_tensor_into_client_parts");
    if (st != TM_OK)
      return; // the tensor is still the caller's
    tensors.erase(tensors.begin() + static_cast<std::ptrdiff_t>(i)); // consumed
    if (in.flag()) {
      // A second library takes the parts in, as ABI-PARTS says, then lets go.
      tm_tensor *t = nullptr;
      if (tm_tensor_wrap_pbo(&p.ops, p.buffer_id, p.size, p.shape, p.ndim, p.dtype, nullptr, &t, nullptr) == TM_OK)
        tensors.push_back(t);
    }
    tm_pbo_client_parts_release(&p);
    tm_pbo_client_parts_release(&p); // double release: cleared, so nothing
    tm_pbo_client_parts_release(nullptr);
  }

  void getters() {
    tm_tensor *t = any_tensor();
    std::array<std::size_t, 16> dims{};
    const std::size_t n = tm_tensor_shape(t, in.flag() ? nullptr : dims.data(), in.pick(17));
    FUZZ_CHECK(t != nullptr || n == 0, "shape of NULL has %zu dimensions", n);
    (void)tm_tensor_buffer_id(t);
    (void)tm_tensor_size_bytes(t);
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  FuzzInput in(data, size);
  Session s(in);
  for (int step = 0; step < 48 && !in.empty(); ++step) {
    switch (in.pick(12)) {
    case 0:
    case 1: s.wrap(); break;
    case 2: s.allocate(); break;
    case 3: s.clone_or_view(false); break;
    case 4: s.clone_or_view(true); break;
    case 5: s.free_one(); break;
    case 6: s.map(); break;
    case 7: s.unmap(); break;
    case 8: s.table_calls(); break;
    case 9: s.parts_round(); break;
    case 10: s.getters(); break;
    default:
      if (!s.producers.empty())
        s.producers[in.pick(static_cast<std::uint32_t>(s.producers.size()))]->fail_mode = in.pick(6);
      break;
    }
  }
  while (!s.maps.empty()) {
    tm_tensor_unmap(s.maps.back().map);
    s.maps.pop_back();
  }
  for (tm_tensor *t : s.tensors)
    tm_tensor_free(t);
  for (const auto &p : s.producers) {
    FUZZ_CHECK(p->refs == 0, "producer %u: %d retain(s) never released", p->id, p->refs);
    FUZZ_CHECK(p->live_maps == 0, "producer %u: %d map(s) never unmapped", p->id, p->live_maps);
  }
  return 0;
}

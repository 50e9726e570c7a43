// SPDX-License-Identifier: Apache-2.0
/* fuzz-mapstate: the CPU-map state machine (tensormem::MapState) through a
 * storage's public calls, on heap (MemStorage) and memfd-backed DMA-BUF
 * storage of 1 to 4096 bytes. Each input is a sequence of up to 64 steps:
 * map (read, write, read-write; blocking or try-map), unmap of any live
 * pin, raw acquire/release (a release with nothing behind it included),
 * pin_live_map (retain), pin_host, record_write / record_read of issued,
 * unissued and 0 values on two software timelines, signal, pending_reads,
 * wait_for_reads and storage drop. The storage's fence timeout is 0, so a
 * map that must wait fails at once instead of timing out the fuzzer.
 *
 * A model predicts each step, and after it the invariants of
 * docs/architecture-details.md ("Storage, tensor, map state") are asserted:
 *  - between calls on one thread the phase is never Mapping or Unmapping;
 *    Unmapped with no holder, Shared with readers() = the read holders,
 *    Exclusive (readers() = 0) with a writable holder; is_mapped() is
 *    phase != Unmapped;
 *  - readers share one address; a writable map is exclusive, and a
 *    conflicting map or a retain with no live map fails with Mapped;
 *  - a map of an unmapped storage succeeds unless a recorded GPU write is
 *    unsignalled (any access) or a recorded read is (writable access), and
 *    then it fails;
 *  - every successful map and pin covers the whole allocation (all of it is
 *    read, and written for writable access; ASan and valgrind watch);
 *  - recording a value never issued fails; the last holder's release
 *    leaves the storage Unmapped. */
#include "fuzz_input.hpp"

#include <tensormem/dmabuf_storage.hpp>
#include <tensormem/storage.hpp>
#include <tensormem/timeline.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <vector>

using namespace tensormem;
using tensormem_fuzz::FuzzInput;

namespace {

struct Holder {
  HostPin pin;      // empty for a raw acquire_map
  bool raw = false; // release with release_map()
  bool writable = false;
};

struct Model {
  std::shared_ptr<Storage> storage;
  std::vector<Holder> holders;
  std::vector<HostPin> host_pins; // pin_host: outside MapState
  std::array<std::shared_ptr<SoftwareTimeline>, 2> timelines;
  std::array<std::uint64_t, 2> reached{}, newest_write{}, newest_read{};

  bool write_pending() const {
    return newest_write[0] > reached[0] || newest_write[1] > reached[1];
  }
  bool read_pending() const { return newest_read[0] > reached[0] || newest_read[1] > reached[1]; }
  bool exclusive() const { return !holders.empty() && holders.front().writable; }
};

void touch(std::byte *data, std::size_t size, bool writable) {
  volatile std::uint8_t sum = 0;
  for (std::size_t i = 0; i < size; ++i)
    sum = static_cast<std::uint8_t>(sum + static_cast<std::uint8_t>(data[i]));
  if (writable)
    for (std::size_t i = 0; i < size; ++i)
      data[i] = static_cast<std::byte>(i);
}

void check_state(const Model &m) {
  const MapState &st = m.storage->map_state();
  const MapState::Phase phase = st.phase();
  FUZZ_CHECK(phase != MapState::Phase::Mapping && phase != MapState::Phase::Unmapping,
             "phase %d between calls", static_cast<int>(phase));
  FUZZ_CHECK(m.storage->is_mapped() == (phase != MapState::Phase::Unmapped), "is_mapped() disagrees with phase %d",
             static_cast<int>(phase));
  if (m.holders.empty()) {
    FUZZ_CHECK(phase == MapState::Phase::Unmapped && st.readers() == 0, "no holder, phase %d, %zu readers",
               static_cast<int>(phase), st.readers());
  } else if (m.exclusive()) {
    FUZZ_CHECK(phase == MapState::Phase::Exclusive && st.readers() == 0, "a writer holds it, phase %d, %zu readers",
               static_cast<int>(phase), st.readers());
  } else {
    FUZZ_CHECK(phase == MapState::Phase::Shared && st.readers() == m.holders.size(),
               "%zu read holders, phase %d, %zu readers", m.holders.size(), static_cast<int>(phase), st.readers());
  }
}

std::shared_ptr<Storage> make_storage(FuzzInput &in, bool *memfd) {
  const std::size_t size = in.range(1, 4096);
  *memfd = in.flag();
  std::shared_ptr<Storage> s;
  if (*memfd) {
    DmaBufOptions options;
    options.source = DmaBufSource::Memfd;
    auto made = DmaBufStorage::allocate(size, options);
    FUZZ_CHECK(static_cast<bool>(made), "memfd DMA-BUF of %zu bytes: %s", size, made.error().message().c_str());
    s = *made;
  } else {
    auto made = MemStorage::allocate(size);
    FUZZ_CHECK(static_cast<bool>(made), "heap storage of %zu bytes: %s", size, made.error().message().c_str());
    s = *made;
  }
  s->set_fence_timeout(std::chrono::nanoseconds(0));
  return s;
}

void do_map(Model &m, FuzzInput &in, bool raw) {
  static constexpr CpuAccess kAccess[] = {CpuAccess::Read, CpuAccess::Write, CpuAccess::ReadWrite, CpuAccess::Read,
                                          CpuAccess::None};
  const CpuAccess access = kAccess[in.pick(5)];
  const MapState::Wait wait = in.flag() ? MapState::Wait::NoWait : MapState::Wait::Block;
  const bool writable = access_writes(access);
  const std::size_t size = m.storage->size_bytes();
  Holder h;
  h.raw = raw;
  h.writable = writable;
  std::byte *data = nullptr;
  Result<void> outcome;
  if (raw) {
    Result<std::byte *> got = m.storage->acquire_map(access, wait);
    if (got)
      data = *got;
    else
      outcome = std::move(got).error();
  } else {
    Result<HostPin> got = m.storage->map(access, wait);
    if (got) {
      FUZZ_CHECK(got->length() == size, "map pin of %zu bytes over %zu", got->length(), size);
      data = got->data();
      h.pin = std::move(*got);
    } else {
      outcome = std::move(got).error();
    }
  }
  if (access == CpuAccess::None) {
    FUZZ_CHECK(!outcome && outcome.error().kind() == ErrorKind::InvalidArgument, "map for None: %s",
               outcome ? "succeeded" : outcome.error().message().c_str());
    return;
  }
  if (m.exclusive() || (!m.holders.empty() && writable)) {
    FUZZ_CHECK(!outcome && outcome.error().kind() == ErrorKind::Mapped, "conflicting map for %s: %s",
               access_name(access), outcome ? "succeeded" : outcome.error().message().c_str());
    return;
  }
  if (!m.holders.empty()) { // another reader
    FUZZ_CHECK(static_cast<bool>(outcome), "second read map failed: %s", outcome.error().message().c_str());
    const std::byte *shared = m.holders.front().raw ? nullptr : m.holders.front().pin.data();
    FUZZ_CHECK(shared == nullptr || shared == data, "readers do not share one address");
  } else {
    const bool must_wait = m.write_pending() || (writable && m.read_pending());
    FUZZ_CHECK(static_cast<bool>(outcome) == !must_wait, "map for %s with %s: %s", access_name(access),
               must_wait ? "an unsignalled completion" : "nothing to wait for",
               outcome ? "succeeded" : outcome.error().message().c_str());
    if (!outcome)
      return;
  }
  touch(data, size, writable);
  m.holders.push_back(std::move(h));
}

void do_release(Model &m, FuzzInput &in) {
  if (m.holders.empty()) {
    m.storage->release_map(); // nothing behind it: ignored (PBO-MAP-09)
    return;
  }
  const std::size_t i = in.pick(static_cast<std::uint32_t>(m.holders.size()));
  Holder h = std::move(m.holders[i]);
  m.holders.erase(m.holders.begin() + static_cast<std::ptrdiff_t>(i));
  if (h.raw)
    m.storage->release_map();
  else if (in.flag())
    h.pin.unmap();
  // else: the pin goes out of scope here
}

void do_record(Model &m, FuzzInput &in, bool write) {
  const std::size_t t = in.pick(2);
  SoftwareTimeline &tl = *m.timelines[t];
  std::uint64_t value;
  switch (in.pick(4)) {
  case 0: value = tl.issue(); break;
  case 1: value = tl.last_issued(); break;
  case 2: value = tl.last_issued() + 1 + in.u8(); break; // never issued
  default: value = 0;
  }
  Result<void> r = write ? m.storage->record_write(m.timelines[t], value) : m.storage->record_read(m.timelines[t], value);
  if (value > tl.last_issued()) {
    FUZZ_CHECK(!r, "recorded value %llu, never issued", static_cast<unsigned long long>(value));
    return;
  }
  FUZZ_CHECK(static_cast<bool>(r), "record of issued value %llu: %s", static_cast<unsigned long long>(value),
             r.error().message().c_str());
  std::uint64_t &newest = write ? m.newest_write[t] : m.newest_read[t];
  newest = std::max(newest, value);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  FuzzInput in(data, size);
  Model m;
  bool memfd = false;
  m.storage = make_storage(in, &memfd);
  m.timelines = {SoftwareTimeline::create("fuzz-a"), SoftwareTimeline::create("fuzz-b")};
  for (int step = 0; step < 64 && !in.empty(); ++step) {
    switch (in.pick(12)) {
    case 0:
    case 1: do_map(m, in, false); break;
    case 2: do_map(m, in, true); break;
    case 3:
    case 4: do_release(m, in); break;
    case 5: {
      Result<HostPin> pin = m.storage->pin_live_map();
      FUZZ_CHECK(static_cast<bool>(pin) == !m.holders.empty(), "pin_live_map with %zu holders: %s", m.holders.size(),
                 pin ? "succeeded" : pin.error().message().c_str());
      if (pin) {
        touch(pin->data(), pin->length(), m.exclusive());
        Holder h;
        h.writable = m.exclusive();
        h.pin = std::move(*pin);
        m.holders.push_back(std::move(h));
      } else {
        FUZZ_CHECK(pin.error().kind() == ErrorKind::Mapped, "pin_live_map: %s", pin.error().message().c_str());
      }
      break;
    }
    case 6: {
      const CpuAccess access = in.flag() ? CpuAccess::Read : CpuAccess::ReadWrite;
      Result<HostPin> pin = m.storage->pin_host(access);
      FUZZ_CHECK(static_cast<bool>(pin), "pin_host of %s storage: %s", memfd ? "memfd" : "heap",
                 pin.error().message().c_str());
      FUZZ_CHECK(pin->length() == m.storage->size_bytes(), "pin_host of %zu bytes", pin->length());
      touch(pin->data(), pin->length(), false);
      if (m.host_pins.size() < 4)
        m.host_pins.push_back(std::move(*pin));
      break;
    }
    case 7: do_record(m, in, true); break;
    case 8: do_record(m, in, false); break;
    case 9: {
      const std::size_t t = in.pick(2);
      const std::uint64_t value = in.flag() ? m.timelines[t]->last_issued() : m.timelines[t]->last_issued() + 1;
      Result<void> r = m.timelines[t]->signal(value);
      FUZZ_CHECK(static_cast<bool>(r) == (value <= m.timelines[t]->last_issued()), "signal %llu: %s",
                 static_cast<unsigned long long>(value), r ? "succeeded" : r.error().message().c_str());
      if (r)
        m.reached[t] = std::max(m.reached[t], value);
      break;
    }
    case 10: {
      Result<std::vector<GpuCompletion>> pending = m.storage->pending_reads();
      FUZZ_CHECK(static_cast<bool>(pending), "pending_reads: %s", pending.error().message().c_str());
      FUZZ_CHECK(pending->empty() == !m.read_pending(), "%zu pending reads, model says %s", pending->size(),
                 m.read_pending() ? "some" : "none");
      Result<std::size_t> waited = m.storage->wait_for_reads(std::chrono::nanoseconds(0));
      FUZZ_CHECK(static_cast<bool>(waited) == !m.read_pending(), "wait_for_reads(0): %s",
                 waited ? "succeeded" : waited.error().message().c_str());
      break;
    }
    default:
      if (in.flag())
        m.host_pins.clear();
      break;
    }
    check_state(m);
  }
  // Let every holder go, in the order of the input: the last leaves it Unmapped.
  while (!m.holders.empty()) {
    do_release(m, in);
    check_state(m);
  }
  return 0;
}

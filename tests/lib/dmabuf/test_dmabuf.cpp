// SPDX-License-Identifier: Apache-2.0
// DmaBufStorage on real memfd buffers (and DMA heaps where the machine has
// them): allocation, import classification, shared mmap, sync directions, fd
// ownership, pins, identity.
#include "../../dma_heap_probe.hpp"
#include "../../proc_util.hpp"

#include <tensormem/tensormem.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/magic.h>
#include <mutex>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <vector>

using namespace tensormem;

namespace {

DmaBufOptions memfd_options() {
  DmaBufOptions o;
  o.source = DmaBufSource::Memfd;
  return o;
}

std::shared_ptr<DmaBufStorage> memfd_storage(std::size_t size) {
  auto s = DmaBufStorage::allocate(size, memfd_options());
  EXPECT_TRUE(s) << (s ? "" : s.error().message());
  return std::move(s).value();
}

bool have_dma_heap() { return ::access("/dev/dma_heap", F_OK) == 0; }

// A recording stand-in for DMA_BUF_IOCTL_SYNC (memfd answers ENOTTY, so the
// directions are otherwise invisible here).
std::mutex g_calls_mu;
std::vector<std::uint64_t> g_calls;
int g_interrupts = 0;
int recording_sync(int, std::uint64_t flags) {
  std::lock_guard lock(g_calls_mu);
  if (g_interrupts > 0) {
    --g_interrupts;
    return EINTR;
  }
  g_calls.push_back(flags);
  return 0;
}
int failing_sync(int, std::uint64_t) { return EIO; }

struct ScopedEnv {
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old, had_ = true;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { had_ ? ::setenv(name_, old_.c_str(), 1) : ::unsetenv(name_); }
  const char *name_;
  std::string old_;
  bool had_ = false;
};

} // namespace

TEST(DmaBufAlloc, memfd_round_trip_through_maps) {
  auto s = memfd_storage(4096);
  EXPECT_EQ(s->fd_kind(), DmaBufFdKind::Memfd);
  EXPECT_EQ(s->kind(), StorageKind::DmaBuf);
  auto t = std::move(Tensor::wrap(s, {64, 64}, DType::U8)).value();
  {
    auto w = t.map(CpuAccess::Write);
    ASSERT_TRUE(w);
    for (std::size_t i = 0; i < 4096; ++i)
      w->mutable_bytes()[i] = static_cast<std::byte>(i * 7);
  }
  auto r = t.map(CpuAccess::Read);
  ASSERT_TRUE(r);
  for (std::size_t i = 0; i < 4096; ++i)
    ASSERT_EQ(r->bytes()[i], static_cast<std::byte>(i * 7));
  // The map is the storage's one shared mmap of the fd from offset 0, so the
  // view starts on a page boundary (and therefore on 64 bytes).
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(r->data()) % page, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(r->data()) % 64, 0u);
}

TEST(DmaBufAlloc, exports_its_own_fd_over_the_whole_buffer) {
  auto s = memfd_storage(4096);
  Result<StorageHandle> h = s->export_handle();
  ASSERT_TRUE(h) << h.error().message();
  const auto *dmabuf = std::get_if<DmaBufHandle>(&*h);
  ASSERT_NE(dmabuf, nullptr);
  EXPECT_EQ(dmabuf->fd, s->fd()) << "borrowed, not a dup";
  EXPECT_EQ(dmabuf->offset, 0u);
  EXPECT_EQ(dmabuf->size, 4096u);
}

TEST(DmaBufAlloc, the_environment_selects_memfd_and_rejects_unknown_sources) {
  {
    ScopedEnv env("TENSORMEM_DMABUF_SOURCE", "memfd");
    auto s = DmaBufStorage::allocate(128);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ((*s)->fd_kind(), DmaBufFdKind::Memfd);
  }
  ScopedEnv env("TENSORMEM_DMABUF_SOURCE", "gpu");
  auto bad = DmaBufStorage::allocate(128);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_NE(bad.error().message().find("gpu"), std::string::npos);
}

TEST(DmaBufAlloc, without_dma_heaps_the_error_names_every_node_tried) {
  if (have_dma_heap())
    GTEST_SKIP() << "/dev/dma_heap exists on this machine; the no-heap error cannot be provoked";
  ScopedEnv env("TENSORMEM_DMABUF_SOURCE", nullptr);
  auto s = DmaBufStorage::allocate(4096);
  ASSERT_FALSE(s);
  const std::string &m = s.error().message();
  EXPECT_NE(m.find("/dev/dma_heap/system"), std::string::npos) << m;
  EXPECT_NE(m.find("/dev/dma_heap/linux,cma"), std::string::npos) << m;
  EXPECT_NE(m.find("/dev/dma_heap/reserved"), std::string::npos) << m;
  EXPECT_NE(m.find("TENSORMEM_DMABUF_SOURCE=memfd"), std::string::npos) << m;
}

TEST(DmaBufAlloc, dma_heap_allocation_is_a_real_dmabuf) {
  // Where a heap node opens, a failed allocation is a failure, not a skip.
  const tmtest::DmaHeapProbe heap = tmtest::probe_dma_heap();
  if (!heap.present())
    GTEST_SKIP() << heap.why << "; memfd tests cover the shared code";
  DmaBufOptions o;
  o.source = DmaBufSource::Heap;
  auto s = DmaBufStorage::allocate(1 << 16, o);
  ASSERT_TRUE(s) << heap.node << " opened but: " << s.error().message();
  EXPECT_EQ((*s)->fd_kind(), DmaBufFdKind::DmaBuf);
  auto t = std::move(Tensor::wrap(*s, {1 << 16}, DType::U8)).value();
  { std::memset(t.map(CpuAccess::Write)->mutable_bytes().data(), 5, 1 << 16); }
  EXPECT_EQ(t.map(CpuAccess::Read)->bytes()[100], std::byte{5});
}

TEST(DmaBufAlloc, zero_bytes_is_invalid_size) {
  auto s = DmaBufStorage::allocate(0, memfd_options());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), ErrorKind::InvalidSize);
}

TEST(DmaBufImport, a_memfd_is_classified_by_its_filesystem_magic) {
  int fd = ::memfd_create("probe", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 256), 0);
  auto kind = DmaBufStorage::classify(fd);
  ASSERT_TRUE(kind);
  EXPECT_EQ(*kind, DmaBufFdKind::Memfd);
  ::close(fd);
}

TEST(DmaBufImport, a_pipe_is_refused_with_its_magic) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  auto s = DmaBufStorage::import(p[0], 16);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_EQ(s.error().fs_magic(), static_cast<std::uint32_t>(PIPEFS_MAGIC));
  EXPECT_NE(s.error().message().find("0x50495045"), std::string::npos) << s.error().message();
  ::close(p[0]);
  ::close(p[1]);
}

TEST(DmaBufImport, a_regular_file_is_refused_with_its_magic) {
  char path[] = "/var/tmp/tensormem-import-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  struct statfs fs {};
  ASSERT_EQ(::fstatfs(fd, &fs), 0);
  if (static_cast<std::uint32_t>(fs.f_type) == TMPFS_MAGIC) {
    ::close(fd);
    GTEST_SKIP() << "/var/tmp is a tmpfs here, which is a valid memfd/shm source";
  }
  auto s = DmaBufStorage::import(fd, 0);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_EQ(s.error().fs_magic(), static_cast<std::uint32_t>(fs.f_type));
  ::close(fd);
}

TEST(DmaBufImport, bad_descriptors_get_specific_errors) {
  auto neg = DmaBufStorage::import(-1);
  ASSERT_FALSE(neg);
  EXPECT_EQ(neg.error().kind(), ErrorKind::InvalidArgument);
  int fd = ::memfd_create("closed", MFD_CLOEXEC);
  ::close(fd);
  auto closed = DmaBufStorage::import(fd);
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().kind(), ErrorKind::Io);
  EXPECT_EQ(closed.error().os_error(), EBADF);
}

TEST(DmaBufImport, size_is_checked_against_the_buffer) {
  auto s = memfd_storage(1000);
  auto whole = DmaBufStorage::import(s->fd());
  ASSERT_TRUE(whole);
  EXPECT_EQ((*whole)->size_bytes(), 1000u);
  auto part = DmaBufStorage::import(s->fd(), 100);
  ASSERT_TRUE(part);
  EXPECT_EQ((*part)->size_bytes(), 100u);
  auto over = DmaBufStorage::import(s->fd(), 1001);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().kind(), ErrorKind::InsufficientCapacity);
  EXPECT_EQ(over.error().needed(), 1001u);
  EXPECT_EQ(over.error().capacity(), 1000u);
  int empty = ::memfd_create("empty", MFD_CLOEXEC);
  auto e = DmaBufStorage::import(empty);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().kind(), ErrorKind::InvalidSize);
  ::close(empty);
}

TEST(DmaBufImport, the_callers_fd_stays_the_callers) {
  int fd = ::memfd_create("mine", MFD_CLOEXEC);
  ASSERT_EQ(::ftruncate(fd, 64), 0);
  ASSERT_EQ(::pwrite(fd, "tensor", 6, 0), 6);
  {
    auto s = DmaBufStorage::import(fd);
    ASSERT_TRUE(s);
    EXPECT_NE((*s)->fd(), fd);
    ASSERT_EQ(::close(fd), 0); // upstream closes its fd while we hold a dup
    auto t = std::move(Tensor::wrap(*s, {64}, DType::U8)).value();
    auto m = t.map(CpuAccess::Read);
    ASSERT_TRUE(m);
    EXPECT_EQ(0, std::memcmp(m->data(), "tensor", 6));
  }
  int fd2 = ::memfd_create("mine2", MFD_CLOEXEC);
  ASSERT_EQ(::ftruncate(fd2, 64), 0);
  { auto s = DmaBufStorage::import(fd2); }
  EXPECT_EQ(::fcntl(fd2, F_GETFD), FD_CLOEXEC) << "destroying the storage closed the caller's fd";
  ::close(fd2);
}

TEST(DmaBufImport, reimports_of_one_buffer_share_an_identity) {
  auto s = memfd_storage(64);
  auto a = DmaBufStorage::import(s->fd());
  auto dup = s->dup_fd();
  ASSERT_TRUE(dup);
  auto b = DmaBufStorage::import(dup->get());
  EXPECT_EQ((*a)->identity(), s->identity());
  EXPECT_EQ((*b)->identity(), s->identity());
  EXPECT_NE(memfd_storage(64)->identity(), s->identity());
}

TEST(DmaBufImport, a_read_only_fd_maps_for_reading_only) {
  auto s = memfd_storage(64);
  const std::string path = "/proc/self/fd/" + std::to_string(s->fd());
  int ro = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(ro, 0);
  auto imported = DmaBufStorage::import(ro);
  ::close(ro);
  ASSERT_TRUE(imported);
  EXPECT_FALSE((*imported)->writable());
  auto t = std::move(Tensor::wrap(*imported, {64}, DType::U8)).value();
  auto w = t.map(CpuAccess::ReadWrite);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().kind(), ErrorKind::InvalidOperation);
  EXPECT_FALSE(t.is_mapped());
  EXPECT_TRUE(t.map(CpuAccess::Read));
  EXPECT_EQ((*imported)->pin_host(CpuAccess::Write).error().kind(), ErrorKind::InvalidOperation);
}

TEST(DmaBufMap, readers_share_one_mmap_and_a_writer_is_excluded) {
  auto s = memfd_storage(4096);
  auto t = std::move(Tensor::wrap(s, {4096}, DType::U8)).value();
  {
    auto a = t.map(CpuAccess::Read);
    auto b = t.map(CpuAccess::Read);
    auto c = t.view(1024, {16})->map(CpuAccess::Read);
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(s->stats().mmaps, 1u);
    EXPECT_EQ(c->data(), a->data() + 1024);
    auto w = t.map(CpuAccess::Write);
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().kind(), ErrorKind::Mapped);
  }
  EXPECT_TRUE(t.map(CpuAccess::Write));
  // One mapping for the storage's life: later maps reuse it instead of paying
  // mmap and page faults again (coherency comes from the sync ioctl).
  EXPECT_EQ(s->stats().mmaps, 1u);
  EXPECT_EQ(s->stats().munmaps, 0u);
}

TEST(DmaBufMap, each_map_brackets_the_access_with_sync_in_its_direction) {
  DmaBufOptions o = memfd_options();
  o.sync = recording_sync;
  auto s = std::move(DmaBufStorage::allocate(64, o)).value();
  auto t = std::move(Tensor::wrap(s, {64}, DType::U8)).value();
  g_calls.clear();
  {
    auto r1 = t.map(CpuAccess::Read);
    auto r2 = t.map(CpuAccess::Read); // joins: no second START
  }
  { auto w = t.map(CpuAccess::Write); }
  { auto rw = t.map(CpuAccess::ReadWrite); }
  const std::vector<std::uint64_t> expected = {
      DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ,  DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ,
      DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE,
      DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW,    DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW,
  };
  EXPECT_EQ(g_calls, expected);
}

TEST(DmaBufMap, interrupted_syncs_are_retried) {
  DmaBufOptions o = memfd_options();
  o.sync = recording_sync;
  auto s = std::move(DmaBufStorage::allocate(64, o)).value();
  g_calls.clear();
  g_interrupts = 2;
  ASSERT_TRUE(Tensor::wrap(s, {64}, DType::U8)->map(CpuAccess::Read));
  EXPECT_EQ(g_calls.size(), 2u);
  EXPECT_EQ(s->stats().sync_calls, 4u); // two interrupted + START + END
}

TEST(DmaBufMap, a_failing_start_sync_fails_the_map_and_leaves_nothing_mapped) {
  DmaBufOptions o = memfd_options();
  o.sync = failing_sync;
  auto s = std::move(DmaBufStorage::allocate(64, o)).value();
  auto m = Tensor::wrap(s, {64}, DType::U8)->map(CpuAccess::Read);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind(), ErrorKind::Io);
  EXPECT_EQ(m.error().os_error(), EIO);
  EXPECT_FALSE(s->is_mapped());
  auto again = Tensor::wrap(s, {64}, DType::U8)->map(CpuAccess::Read);
  ASSERT_FALSE(again) << "the failed START must not leave a half-made map behind";
  EXPECT_EQ(s->stats().mmaps, 1u);
}

TEST(DmaBufMap, enotty_on_memfd_is_handled_quietly_once_per_storage) {
  int warnings = 0;
  set_log_handler(
      [](LogLevel level, std::string_view, void *user) {
        if (level <= LogLevel::Warning)
          ++*static_cast<int *>(user);
      },
      &warnings);
  auto s = memfd_storage(64); // the real ioctl: ENOTTY on memfd
  auto t = std::move(Tensor::wrap(s, {64}, DType::U8)).value();
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(t.map(i % 2 ? CpuAccess::Read : CpuAccess::Write));
  set_log_handler(nullptr, nullptr);
  EXPECT_EQ(warnings, 0);
  EXPECT_EQ(s->stats().sync_calls, 1u);
}

TEST(DmaBufPin, a_pin_keeps_the_mapping_after_maps_end) {
  auto s = memfd_storage(4096);
  auto t = std::move(Tensor::wrap(s, {4096}, DType::U8)).value();
  auto pin = t.view(64, {64})->pin_host(CpuAccess::ReadWrite);
  ASSERT_TRUE(pin);
  EXPECT_EQ(pin->length(), 64u);
  EXPECT_GE(pin->alignment(), 64u);
  const std::byte *mapped;
  {
    auto m = t.map(CpuAccess::Read);
    mapped = m->data();
  }
  EXPECT_EQ(pin->data(), mapped + 64) << "maps and pins share one mmap";
  EXPECT_EQ(s->stats().mmaps, 1u);
  EXPECT_EQ(s->stats().munmaps, 0u);
  EXPECT_TRUE(s->sync_for_cpu(CpuAccess::ReadWrite));
  pin->data()[0] = std::byte{0x5a};
  EXPECT_TRUE(s->sync_for_device(CpuAccess::ReadWrite));
  std::weak_ptr<Storage> weak = s;
  s.reset();
  t = std::move(Tensor::allocate({1}, DType::U8)).value();
  EXPECT_FALSE(weak.expired()) << "a pin keeps its storage";
  EXPECT_EQ(pin->data()[0], std::byte{0x5a});
  pin->unmap();
  EXPECT_TRUE(weak.expired());
}

TEST(DmaBufPin, pin_holders_sync_in_their_direction) {
  DmaBufOptions o = memfd_options();
  o.sync = recording_sync;
  auto s = std::move(DmaBufStorage::allocate(64, o)).value();
  g_calls.clear();
  ASSERT_TRUE(s->sync_for_cpu(CpuAccess::Read));
  ASSERT_TRUE(s->sync_for_device(CpuAccess::Write));
  EXPECT_EQ(g_calls, (std::vector<std::uint64_t>{DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ,
                                                 DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE}));
}

TEST(DmaBufLife, ten_thousand_allocate_free_cycles_leak_no_fd) {
  const int before = tmtest::open_fd_count();
  for (int i = 0; i < 10000; ++i) {
    auto s = memfd_storage(4096);
    auto t = Tensor::wrap(s, {4096}, DType::U8);
    ASSERT_TRUE(t->map(i % 3 ? CpuAccess::Read : CpuAccess::Write));
    if (i % 100 == 0) {
      auto re = DmaBufStorage::import(s->fd());
      ASSERT_TRUE(re);
    }
  }
  EXPECT_EQ(tmtest::open_fd_count(), before);
}

TEST(DmaBufLayout, image_strides_are_64_byte_aligned_for_every_layout) {
  for (PixelFormat f : {PixelFormat::RGBA, PixelFormat::RGB, PixelFormat::GRAY8, PixelFormat::NV12, PixelFormat::NV16,
                        PixelFormat::NV24, PixelFormat::I420, PixelFormat::RGBP}) {
    auto l = image_layout(f, 321, 17, kDmaBufStrideAlign);
    ASSERT_TRUE(l);
    for (int p = 0; p < l->n_planes; ++p) {
      EXPECT_EQ(l->stride[p] % 64, 0u) << format_info(f).name << " plane " << p;
      EXPECT_EQ(l->offset[p] % 64, 0u) << format_info(f).name << " plane " << p;
    }
    auto s = memfd_storage(l->size);
    EXPECT_EQ(s->size_bytes(), l->size);
  }
}

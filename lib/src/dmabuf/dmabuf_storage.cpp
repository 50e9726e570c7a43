// SPDX-License-Identifier: Apache-2.0
#include <tensormem/dmabuf_storage.hpp>

#include <tensormem/log.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/magic.h>
#include <string_view>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace tensormem {

namespace {

constexpr int kSyncRetries = 64;

int real_sync(int fd, std::uint64_t flags) {
  dma_buf_sync arg{};
  arg.flags = flags;
  return ::ioctl(fd, DMA_BUF_IOCTL_SYNC, &arg) == 0 ? 0 : errno;
}

std::uint64_t direction(CpuAccess access) {
  switch (access) {
  case CpuAccess::Write: return DMA_BUF_SYNC_WRITE;
  case CpuAccess::ReadWrite: return DMA_BUF_SYNC_RW;
  default: return DMA_BUF_SYNC_READ;
  }
}

Result<DmaBufSource> resolve_source(DmaBufSource source) {
  if (source != DmaBufSource::Default)
    return source;
  const char *env = std::getenv("TENSORMEM_DMABUF_SOURCE");
  if (!env || !*env || std::string_view(env) == "heap")
    return DmaBufSource::Heap;
  if (std::string_view(env) == "memfd")
    return DmaBufSource::Memfd;
  return Error::invalid_argument(std::string("TENSORMEM_DMABUF_SOURCE=") + env +
                                 " is not a DMA-BUF source; use \"heap\" or \"memfd\"");
}

/* "/dev/dma_heap/system (No such file or directory), …" for an error. */
std::string heap_attempt(const std::string &path, int err) { return path + " (" + std::strerror(err) + ")"; }

Result<UniqueFd> alloc_from_heaps(std::size_t size, const std::vector<std::string> &heaps) {
  std::string tried;
  for (const std::string &name : heaps) {
    const std::string path = "/dev/dma_heap/" + name;
    UniqueFd heap(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    int err = errno;
    if (heap.valid()) {
      dma_heap_allocation_data data{};
      data.len = size;
      data.fd_flags = O_RDWR | O_CLOEXEC;
      if (::ioctl(heap.get(), DMA_HEAP_IOCTL_ALLOC, &data) == 0)
        return UniqueFd(static_cast<int>(data.fd));
      err = errno;
    }
    tried += (tried.empty() ? "" : ", ") + heap_attempt(path, err);
  }
  return Error::io(ENODEV, "DmaBufStorage::allocate " + std::to_string(size) +
                               " bytes: no DMA heap could allocate; tried " +
                               (tried.empty() ? std::string("no heap names") : tried) +
                               "; TENSORMEM_DMABUF_SOURCE=memfd selects CPU-only memfd buffers");
}

Result<UniqueFd> alloc_memfd(std::size_t size) {
  UniqueFd fd(::memfd_create("tensormem", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid())
    return Error::io(errno, "DmaBufStorage::allocate: memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0)
    return Error::io(errno, "DmaBufStorage::allocate: ftruncate to " + std::to_string(size) + " bytes");
  // Nobody may shrink it under a live mapping (SIGBUS on access).
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) != 0)
    return Error::io(errno, "DmaBufStorage::allocate: sealing the memfd");
  return fd;
}

} // namespace

DmaBufStorage::DmaBufStorage(Token, UniqueFd fd, std::size_t size, DmaBufFdKind kind, bool writable, std::uint64_t key,
                             DmaBufSyncFn sync) noexcept
    : Storage(size), fd_(std::move(fd)), fd_kind_(kind), writable_(writable), key_(key),
      sync_fn_(sync ? sync : real_sync) {}

DmaBufStorage::~DmaBufStorage() {
  run_destroy_hooks();
  if (data_) {
    ::munmap(data_, size_bytes());
    munmaps_.fetch_add(1);
  }
}

Result<DmaBufFdKind> DmaBufStorage::classify(int fd) {
  if (fd < 0)
    return Error::invalid_argument("DmaBufStorage: fd " + std::to_string(fd) + " is not a file descriptor");
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0)
    return Error::io(errno, "DmaBufStorage: fstatfs of fd " + std::to_string(fd));
  const auto magic = static_cast<std::uint32_t>(fs.f_type);
  if (magic == DMA_BUF_MAGIC)
    return DmaBufFdKind::DmaBuf;
  if (magic == TMPFS_MAGIC)
    return DmaBufFdKind::Memfd;
  return Error::unsupported_fd(magic, "DmaBufStorage: fd " + std::to_string(fd) +
                                          " is neither a DMA-BUF nor a memfd/shm file");
}

Result<std::shared_ptr<DmaBufStorage>> DmaBufStorage::allocate(std::size_t size, const DmaBufOptions &options) {
  if (size == 0)
    return Error::invalid_size(0, "DmaBufStorage::allocate: zero bytes");
  auto source = resolve_source(options.source);
  if (!source)
    return std::move(source).error();
  auto fd = *source == DmaBufSource::Memfd ? alloc_memfd(size) : alloc_from_heaps(size, options.heaps);
  if (!fd)
    return std::move(fd).error();
  return adopt(std::move(*fd), size, options, "DmaBufStorage::allocate");
}

Result<std::shared_ptr<DmaBufStorage>> DmaBufStorage::import(int fd, std::size_t size, const DmaBufOptions &options) {
  if (fd < 0)
    return Error::invalid_argument("DmaBufStorage::import: fd " + std::to_string(fd) + " is not a file descriptor");
  // The caller's fd stays the caller's: everything below works on a dup.
  UniqueFd own(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!own.valid())
    return Error::io(errno, "DmaBufStorage::import: dup of fd " + std::to_string(fd));
  return adopt(std::move(own), size, options, "DmaBufStorage::import");
}

Result<std::shared_ptr<DmaBufStorage>> DmaBufStorage::adopt(UniqueFd fd, std::size_t size, const DmaBufOptions &options,
                                                            const char *what) {
  auto kind = classify(fd.get());
  if (!kind)
    return std::move(kind).error();
  const off_t end = ::lseek(fd.get(), 0, SEEK_END);
  if (end < 0)
    return Error::io(errno, std::string(what) + ": size of the buffer");
  const auto actual = static_cast<std::size_t>(end);
  if (size == 0)
    size = actual;
  if (size == 0)
    return Error::invalid_size(0, std::string(what) + ": the buffer is empty");
  if (size > actual)
    return Error::insufficient_capacity(size, actual, std::string(what) + ": buffer smaller than asked");
  if (*kind == DmaBufFdKind::Memfd) {
    // An imported memfd that could still be shrunk would fault our mapping;
    // seal it where we can (an fd without sealing support, such as a
    // /dev/shm file, is accepted as is).
    const int seals = ::fcntl(fd.get(), F_GET_SEALS);
    if (seals >= 0 && !(seals & F_SEAL_SHRINK) && !(seals & F_SEAL_SEAL))
      (void)::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK);
  }
  const int mode = ::fcntl(fd.get(), F_GETFL);
  if (mode < 0)
    return Error::io(errno, std::string(what) + ": F_GETFL");
  const bool writable = (mode & O_ACCMODE) == O_RDWR;
  auto id = identity_of(fd.get());
  if (!id)
    return std::move(id).error();
  return std::make_shared<DmaBufStorage>(Token{}, std::move(fd), size, *kind, writable, id->key, options.sync);
}

Result<void> DmaBufStorage::check_source(const DmaBufOptions &options) {
  auto source = resolve_source(options.source);
  if (!source)
    return std::move(source).error();
  if (*source == DmaBufSource::Memfd)
    return {};
  std::string tried;
  for (const std::string &name : options.heaps) {
    const std::string path = "/dev/dma_heap/" + name;
    UniqueFd heap(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (heap.valid())
      return {};
    tried += (tried.empty() ? "" : ", ") + heap_attempt(path, errno);
  }
  return Error::device("no DMA heap could allocate (tried " + (tried.empty() ? std::string("no heap names") : tried) +
                       "); set TENSORMEM_DMABUF_SOURCE=memfd to use memfd-backed buffers");
}

Result<StorageHandle> DmaBufStorage::export_handle() { return StorageHandle(DmaBufHandle{fd(), 0, size_bytes()}); }

Result<BufferIdentity> DmaBufStorage::identity_of(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return Error::io(errno, "DmaBufStorage: fstat of fd " + std::to_string(fd));
  const std::uint64_t key = (static_cast<std::uint64_t>(st.st_dev) << 40) ^ static_cast<std::uint64_t>(st.st_ino);
  return BufferIdentity::derived(StorageKind::DmaBuf, key);
}

Result<UniqueFd> DmaBufStorage::dup_fd() const {
  UniqueFd fd(::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0));
  if (!fd.valid())
    return Error::io(errno, "DmaBufStorage::dup_fd");
  return fd;
}

// One mapping serves every map and pin for the storage's whole life: a pooled
// video buffer would otherwise pay mmap, munmap and a page fault per page on
// every frame. Coherency comes from the sync ioctl around each access, not
// from the mapping's lifetime. Caller holds mu_.
Result<std::byte *> DmaBufStorage::mapping() {
  if (data_)
    return data_;
  const int prot = writable_ ? PROT_READ | PROT_WRITE : PROT_READ;
  void *data = ::mmap(nullptr, size_bytes(), prot, MAP_SHARED, fd_.get(), 0);
  if (data == MAP_FAILED)
    return Error::io(errno, "DmaBufStorage: mmap of " + std::to_string(size_bytes()) + " bytes");
  mmaps_.fetch_add(1);
  data_ = static_cast<std::byte *>(data);
  return data_;
}

Result<void> DmaBufStorage::sync(std::uint64_t flags, const char *what) {
  // Caller holds mu_.
  if (sync_unsupported_)
    return {};
  for (int attempt = 0; attempt < kSyncRetries; ++attempt) {
    sync_calls_.fetch_add(1);
    const int err = sync_fn_(fd_.get(), flags);
    if (err == 0)
      return {};
    if (err == EINTR || err == EAGAIN)
      continue;
    if (err == ENOTTY) {
      // memfd and shm have no sync ioctl: their CPU view is coherent. Note it
      // once for this storage and stop asking.
      sync_unsupported_ = true;
      log(LogLevel::Debug, "DmaBufStorage: no DMA_BUF_IOCTL_SYNC on this fd (memfd/shm); CPU access is coherent");
      return {};
    }
    return Error::io(err, std::string("DmaBufStorage: DMA_BUF_IOCTL_SYNC ") + what);
  }
  return Error::io(EAGAIN, std::string("DmaBufStorage: DMA_BUF_IOCTL_SYNC ") + what + " kept being interrupted");
}

Result<BackendMapping> DmaBufStorage::backend_map(std::size_t size, CpuAccess access) noexcept {
  if (access_writes(access) && !writable_)
    return Error::invalid_operation("DmaBufStorage: map for " + std::string(access_name(access)) +
                                    " of a buffer imported read-only");
  if (plain_mapping_.load(std::memory_order_acquire))
    return BackendMapping{data_, size};
  std::lock_guard lock(mu_);
  auto data = mapping();
  if (!data)
    return std::move(data).error();
  const std::uint64_t dir = direction(access);
  if (auto s = sync(DMA_BUF_SYNC_START | dir, "START"); !s)
    return std::move(s).error();
  mapped_flags_ = dir;
  if (sync_unsupported_)
    plain_mapping_.store(true, std::memory_order_release);
  return BackendMapping{*data, size};
}

// A fd without the sync ioctl (memfd) whose mapping is made: no syscall and
// no lock left in a map, so MapState may make it in one step.
bool DmaBufStorage::backend_is_immediate(CpuAccess access) const noexcept {
  return plain_mapping_.load(std::memory_order_acquire) && (writable_ || !access_writes(access));
}

Result<void> DmaBufStorage::backend_unmap() noexcept {
  if (plain_mapping_.load(std::memory_order_acquire))
    return {};
  std::lock_guard lock(mu_);
  Result<void> s = sync(DMA_BUF_SYNC_END | mapped_flags_, "END");
  mapped_flags_ = 0;
  return s;
}

Result<HostPin> DmaBufStorage::pin_host(CpuAccess access) {
  if (access == CpuAccess::None)
    return Error::invalid_argument("DmaBufStorage::pin_host: access None grants no CPU access");
  if (access_writes(access) && !writable_)
    return Error::invalid_operation("DmaBufStorage::pin_host: writable pin of a buffer imported read-only");
  std::byte *data;
  {
    std::lock_guard lock(mu_);
    auto made = mapping();
    if (!made)
      return std::move(made).error();
    data = *made;
  }
  // The mapping lives as long as the storage, which the pin keeps.
  return HostPin(shared_from_this(), data, size_bytes());
}

Result<void> DmaBufStorage::sync_for_cpu(CpuAccess access) {
  std::lock_guard lock(mu_);
  return sync(DMA_BUF_SYNC_START | direction(access), "START (pin)");
}

Result<void> DmaBufStorage::sync_for_device(CpuAccess access) {
  std::lock_guard lock(mu_);
  return sync(DMA_BUF_SYNC_END | direction(access), "END (pin)");
}

DmaBufStats DmaBufStorage::stats() const noexcept { return {mmaps_.load(), munmaps_.load(), sync_calls_.load()}; }

} // namespace tensormem

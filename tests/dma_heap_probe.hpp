// SPDX-License-Identifier: Apache-2.0
// Whether this machine has a DMA heap this process may use, for the tests
// that allocate from one. Only two answers allow a skip: no heap node at all,
// or nodes this process may not open. Where a node opens, an allocation that
// then fails is a failure of ours, never a skip.
#pragma once

#include <tensormem/dmabuf_storage.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace tmtest {

struct DmaHeapProbe {
  // Present: a node opened, or failed to open for a reason other than
  // permission; either way the test runs and the library reports the error.
  enum class State { Absent, Refused, Present };
  State state = State::Absent;
  std::string node; // Present: that node
  std::string why;  // Absent, Refused: the skip reason, naming the nodes

  bool present() const { return state == State::Present; }
};

/* Opens (read-write, as storage=auto requires) each heap node the library
 * tries by default, in its order. */
inline DmaHeapProbe probe_dma_heap() {
  DmaHeapProbe probe;
  if (::access("/dev/dma_heap", F_OK) != 0) {
    probe.why = "no /dev/dma_heap on this machine (no DMA heap driver)";
    return probe;
  }
  std::string refused;
  const tensormem::DmaBufOptions defaults;
  for (const std::string &name : defaults.heaps) {
    const std::string path = "/dev/dma_heap/" + name;
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    const int err = errno;
    if (fd >= 0)
      ::close(fd);
    if (fd >= 0 || (err != ENOENT && err != EACCES && err != EPERM)) {
      probe.state = DmaHeapProbe::State::Present;
      probe.node = path;
      return probe;
    }
    if (err != ENOENT)
      refused += (refused.empty() ? "" : ", ") + path + " (" + std::strerror(err) + ")";
  }
  if (refused.empty()) {
    probe.why = "no /dev/dma_heap on this machine (the directory has none of the nodes the library tries)";
  } else {
    probe.state = DmaHeapProbe::State::Refused;
    probe.why = "a DMA heap exists but this process may not open it: " + refused;
  }
  return probe;
}

} // namespace tmtest

// SPDX-License-Identifier: Apache-2.0
// Private to the CUDA sources: handing CUDA a file descriptor to take over
// (external memory, external semaphores). CUDA owns an imported fd once the
// import succeeds, so it is only ever given a duplicate, and a duplicate it
// refused is closed again tolerantly.
#pragma once

#ifndef _WIN32
#include <tensormem/result.hpp>

#include <string>
#include <sys/stat.h>

namespace tensormem::detail {

/// A close-on-exec duplicate, owned by the caller until CUDA takes it, and
/// the identity (device, inode) of the file it names.
struct ImportDup {
  int fd = -1;
  struct stat identity {};
};

/// Duplicates `fd` for an import; `what` prefixes the error (an Io error
/// when the duplicate or its fstat fails; nothing is left open then).
Result<ImportDup> duplicate_for_import(int fd, const std::string &what);

/// After a refused import: closes `dup.fd` only if the number still names
/// the file duplicated (drivers have been seen closing it, and
/// another thread may have reused the number since).
void reclaim_after_failed_import(const ImportDup &dup) noexcept;

} // namespace tensormem::detail
#endif

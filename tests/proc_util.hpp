// SPDX-License-Identifier: Apache-2.0
// What /proc says about this process, for leak checks in tests and figures
// in benchmarks (no GoogleTest here, so benchmarks can include it).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>

namespace tmtest {

/* Open file descriptors of this process, not counting the one used to list
 * them; -1 if /proc/self/fd cannot be read. */
inline int open_fd_count() {
  DIR *dir = ::opendir("/proc/self/fd");
  if (!dir)
    return -1;
  int n = 0;
  while (dirent *e = ::readdir(dir))
    if (e->d_name[0] != '.')
      ++n;
  ::closedir(dir);
  return n - 1; // the directory stream's own fd
}

/* Resident set size in KiB (VmRSS), or -1. */
inline long rss_kib() {
  std::FILE *f = std::fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmRSS:", 6) == 0)
      kib = std::strtol(line + 6, nullptr, 10);
  std::fclose(f);
  return kib;
}

} // namespace tmtest

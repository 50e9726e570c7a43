// SPDX-License-Identifier: Apache-2.0
// A "stale runtime" for the loader ladder: it answers cudaGetDeviceCount and
// cudaFree but lacks every other entry point, so the loader must close it
// and try the next candidate (CUDA-LOAD-04).
#include <cstddef>

extern "C" __attribute__((visibility("default"))) int cudaGetDeviceCount(int *count) {
  if (count)
    *count = 1;
  return 0;
}

extern "C" __attribute__((visibility("default"))) int cudaFree(void *) { return 0; }

// SPDX-License-Identifier: Apache-2.0
// A "stale runtime" for the loader ladder: it answers cudaGetDeviceCount and
// cudaFree but lacks every other entry point, so the loader must close it
// and try the next candidate (CUDA-LOAD-04).
#include <cstddef>

#ifdef _WIN32
#define PARTIAL_EXPORT extern "C" __declspec(dllexport)
#else
#define PARTIAL_EXPORT extern "C" __attribute__((visibility("default")))
#endif

PARTIAL_EXPORT int cudaGetDeviceCount(int *count) {
  if (count)
    *count = 1;
  return 0;
}

PARTIAL_EXPORT int cudaFree(void *) { return 0; }

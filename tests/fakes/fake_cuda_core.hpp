// SPDX-License-Identifier: Apache-2.0
// The fake CUDA core shared by the two front ends (fake_cudart.cpp exports
// the runtime API, fake_cuda_driver.cpp the driver API): host memory as
// device memory, counters, the call log, fault injection, the fd import
// semantics and the balance check at exit. Every function here is one
// operation: it takes the core's lock, counts and logs the call under the
// exported name the front end passes, fails first if a fault is armed for
// the operation, then (for a driver call that needs one) checks that the
// calling thread has a live context current, and only then does its work.
// The numbers returned are cudaError_t and CUresult at once: the two agree
// on every code the core answers.
#pragma once

#include <cstddef>

#if defined(_WIN32)
#define FAKE_CORE_API __declspec(dllexport)
#else
#define FAKE_CORE_API __attribute__((visibility("default")))
#endif

namespace fakecuda {

/// How a front end calls into the core: its exported name, and whether the
/// driver's rule applies (a context must be current on the calling thread).
struct Entry {
  const char *symbol;
  bool needs_context;
};

enum CopyKind { kHostToHost = 0, kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3, kDefault = 4 };

// Runtime-only: cudaGetDeviceCount answers cudaErrorNoDevice for no device.
FAKE_CORE_API int runtime_device_count(const Entry &e, int *count);

// Driver-only: initialisation, devices and contexts.
FAKE_CORE_API int driver_init(const Entry &e, unsigned flags);
FAKE_CORE_API int driver_device_count(const Entry &e, int *count);
FAKE_CORE_API int driver_device_get(const Entry &e, int *device, int ordinal);
FAKE_CORE_API int primary_context_retain(const Entry &e, void **context, int device);
FAKE_CORE_API int primary_context_release(const Entry &e, int device);
FAKE_CORE_API int context_push(const Entry &e, void *context);
FAKE_CORE_API int context_pop(const Entry &e, void **context);

// Both APIs.
FAKE_CORE_API const char *error_string(const Entry &e, int error);
FAKE_CORE_API int device_malloc(const Entry &e, void **ptr, std::size_t size);
FAKE_CORE_API int device_free(const Entry &e, void *ptr);
FAKE_CORE_API int memcpy(const Entry &e, void *dst, const void *src, std::size_t count, int kind);
FAKE_CORE_API int stream_create(const Entry &e, void **stream);
FAKE_CORE_API int stream_synchronize(const Entry &e, void *stream);
FAKE_CORE_API int stream_destroy(const Entry &e, void *stream);
FAKE_CORE_API int import_external_memory(const Entry &e, void **ext_mem, const void *desc);
FAKE_CORE_API int external_memory_mapped_buffer(const Entry &e, void **dev_ptr, void *ext_mem, const void *desc);
FAKE_CORE_API int destroy_external_memory(const Entry &e, void *ext_mem);
FAKE_CORE_API int import_external_semaphore(const Entry &e, void **ext_sem, const void *desc);
// `v1_layout`: the parameter blocks are the pre-CUDA-11.2 runtime's (no
// reserved tail; the unsuffixed runtime exports); otherwise the _v2 ones,
// which the driver API has always used.
FAKE_CORE_API int signal_external_semaphores(const Entry &e, void *const *sems, const void *params, unsigned count,
                                             void *stream, bool v1_layout);
FAKE_CORE_API int wait_external_semaphores(const Entry &e, void *const *sems, const void *params, unsigned count,
                                           void *stream, bool v1_layout);
FAKE_CORE_API int destroy_external_semaphore(const Entry &e, void *ext_sem);
// Direct3D 11 textures. The front ends translate their own descriptors into
// these neutral ones.
struct ArrayRequest {
  unsigned long long offset;
  std::size_t width, height, depth;
  int bits[4]; // per channel, 0 after the last
  int kind;    // 1 unsigned, 2 float (cudaChannelFormatKind numbers); -1 unknown
  unsigned levels;
  unsigned flags;
  bool tail_zero; // the descriptor's reserved words were all zero
};
struct Copy2D {
  bool to_array; // linear → array; otherwise array → linear
  void *array;
  void *linear;
  std::size_t pitch; // of the linear side
  std::size_t array_x_bytes, array_y, linear_x_bytes, linear_y;
  std::size_t width_bytes, height;
  int kind; // cudaMemcpyKind (the driver passes 3, device to device)
  void *stream;
};
FAKE_CORE_API int device_luid(const Entry &e, int ordinal, unsigned char *luid, unsigned *node_mask);
FAKE_CORE_API int set_device(const Entry &e, int ordinal);
FAKE_CORE_API int external_memory_mipmapped_array(const Entry &e, void **mipmap, void *ext_mem,
                                                  const ArrayRequest &request);
FAKE_CORE_API int mipmapped_array_level(const Entry &e, void **array, const void *mipmap, unsigned level);
FAKE_CORE_API int free_mipmapped_array(const Entry &e, void *mipmap);
FAKE_CORE_API int memcpy_2d(const Entry &e, const Copy2D &copy);
FAKE_CORE_API int gl_register_buffer(const Entry &e, void **resource, unsigned buffer, unsigned flags);
FAKE_CORE_API int gl_map_resources(const Entry &e, int count, void **resources, void *stream);
FAKE_CORE_API int gl_mapped_pointer(const Entry &e, void **dev_ptr, std::size_t *size, void *resource);
FAKE_CORE_API int gl_unmap_resources(const Entry &e, int count, void **resources, void *stream);
FAKE_CORE_API int gl_unregister_resource(const Entry &e, void *resource);

} // namespace fakecuda

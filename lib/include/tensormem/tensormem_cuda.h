// SPDX-License-Identifier: Apache-2.0
/*
 * The CUDA GL-registration channel: how a GL buffer's
 * CUDA registration crosses from one separately built library to another.
 * It reuses the frozen client state of tensormem.h (ctx + retain + release)
 * and adds three plain C functions. Like the PBO channel it is a struct of
 * function pointers, never a compiler's interface table, and nothing is
 * looked up in a process-global registry.
 *
 * Producer: tensormem::CudaHandle::into_client_parts() (cuda_handle.hpp)
 * turns a GL-buffer handle into these parts; the handle becomes Detached.
 * Importer: tensormem::cuda_gl_ops_from_client() / CudaHandle::from_client()
 * refuse a NULL ctx, retain, release, map, unmap or unregister before
 * calling anything, retain once on construction and release once when the
 * imported operations are destroyed.
 *
 * Plain C11; usable from C++.
 */
#ifndef TENSORMEM_TENSORMEM_CUDA_H
#define TENSORMEM_TENSORMEM_CUDA_H

#include <tensormem/tensormem.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes of tm_cuda_map_fn. Any non-zero value is a failure. */
#define TM_CUDA_OK 0
#define TM_CUDA_FAILED 1

/*
 * Maps the registered resource (a cudaGraphicsResource_t) on the thread
 * where its GL context is current and writes its device address and length.
 * Returns TM_CUDA_OK, or non-zero with the out-values untouched.
 */
typedef int (*tm_cuda_map_fn)(const void *ctx, void *resource, void **out_ptr, size_t *out_len);
/* Ends the mapping taken by a successful map. */
typedef void (*tm_cuda_unmap_fn)(const void *ctx, void *resource);
/* Unregisters the resource; called once, by whoever owns the registration. */
typedef void (*tm_cuda_unregister_fn)(const void *ctx, void *resource);

/* The channel's operations: client state plus the three functions. */
typedef struct tm_cuda_gl_ops {
  tm_client_state state;
  tm_cuda_map_fn map;
  tm_cuda_unmap_fn unmap;
  tm_cuda_unregister_fn unregister;
} tm_cuda_gl_ops;

/*
 * A GL-buffer registration handed to a C entry point. `ops`
 * borrows the reference held by the parts' owner; the callee retains before
 * the owner lets go. The receiver owns the registration from then on and
 * unregisters it once through `ops.unregister`.
 */
typedef struct tm_cuda_gl_client_parts {
  tm_cuda_gl_ops ops;
  void *resource; /* cudaGraphicsResource_t */
  size_t size;    /* bytes of the registered GL buffer */
} tm_cuda_gl_client_parts;

#ifdef __cplusplus
}
#endif

#endif /* TENSORMEM_TENSORMEM_CUDA_H */

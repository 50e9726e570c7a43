// SPDX-License-Identifier: Apache-2.0
/*
 * The C surface of libtensormem.
 *
 * Two things live here:
 *
 *  1. The client channel vocabulary (tm_client_state, tm_pbo_ops and the
 *     TM_PBO_* return codes). It is frozen: separately built libraries, each
 *     linking its own copy of the tensor code, exchange GL buffers through
 *     these plain structs because a compiler's interface tables have no
 *     stable layout between copies. A library
 *     that only includes this header, without linking libtensormem, can use
 *     a channel on its own.
 *
 *  2. The tm_* entry points of libtensormem for C callers. They never let an
 *     exception out; failures come back as a tm_status plus an optional
 *     message written into caller-owned memory (tm_error), never into a
 *     thread-local slot that another copy of the library could not see.
 *
 * Plain C11; usable from C++.
 */
#ifndef TENSORMEM_TENSORMEM_H
#define TENSORMEM_TENSORMEM_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#if defined(TENSORMEM_BUILDING)
#define TM_API __declspec(dllexport)
#else
#define TM_API __declspec(dllimport)
#endif
#else
#define TM_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Client channel vocabulary (frozen layout) -------------------------- */

/*
 * An opaque context and the pair that extends its life.
 * A state handed to a callee is borrowed: the callee calls retain() before
 * the lender's own reference can go, and release() once when done.
 */
typedef struct tm_client_state {
  const void *ctx;
  void (*retain)(const void *ctx);
  void (*release)(const void *ctx);
} tm_client_state;

/* Return codes of the PBO channel functions. Any value other
 * than these two is a generic failure; producers report it as
 * TM_PBO_FAILED. */
#define TM_PBO_OK 0
#define TM_PBO_DISCONNECTED (-1)
#define TM_PBO_FAILED 1

/* Maps the whole GL buffer `buffer_id` of `size` bytes for CPU read and
 * write; on success writes the address and the length it reports. */
typedef int (*tm_pbo_map_fn)(const void *ctx, uint32_t buffer_id, size_t size, uint8_t **out_ptr, size_t *out_len);
/* Ends the one live mapping of `buffer_id`. */
typedef int (*tm_pbo_unmap_fn)(const void *ctx, uint32_t buffer_id);

/*
 * The PBO operations table. There is no delete function on
 * purpose: whoever rebuilds a tensor from a table does not own the GL
 * buffer; only the producer deletes it.
 */
typedef struct tm_pbo_ops {
  tm_client_state state;
  tm_pbo_map_fn map;
  tm_pbo_unmap_fn unmap;
} tm_pbo_ops;

/* The one text with which PBO storage refuses a long-lived host pin;
 * every path that refuses it repeats this constant. */
#define TM_PBO_PIN_HOST_REFUSAL                                                                                        \
  "pin_host: a PBO has no host address outside a map/unmap pair, so it cannot give one that outlives a map "           \
  "guard; use map() instead (persistent mapping, EXT_buffer_storage's persistent-map bit, is not used)"

/* ---- libtensormem entry points ------------------------------------------ */

/* Mirrors tensormem::ErrorKind (value = kind + 1). */
typedef enum tm_status {
  TM_OK = 0,
  TM_ERROR_INVALID_ARGUMENT = 1,
  TM_ERROR_INVALID_SIZE = 2,
  TM_ERROR_INVALID_SHAPE = 3,
  TM_ERROR_SHAPE_MISMATCH = 4,
  TM_ERROR_INSUFFICIENT_CAPACITY = 5,
  TM_ERROR_INVALID_OPERATION = 6,
  TM_ERROR_NOT_IMPLEMENTED = 7,
  TM_ERROR_MAPPED = 8,
  TM_ERROR_DISCONNECTED = 9,
  TM_ERROR_WOULD_BLOCK = 10,
  TM_ERROR_IO = 11,
  TM_ERROR_DEVICE = 12,
  /* Something the library did not expect (out of memory, say). */
  TM_ERROR_INTERNAL = 13,
  /* A wait ended early at its caller's request (ErrorKind::Cancelled). */
  TM_ERROR_CANCELLED = 14
} tm_status;

/* Mirrors tensormem::DType. */
typedef enum tm_dtype {
  TM_DTYPE_U8 = 0,
  TM_DTYPE_I8,
  TM_DTYPE_U16,
  TM_DTYPE_I16,
  TM_DTYPE_U32,
  TM_DTYPE_I32,
  TM_DTYPE_F16,
  TM_DTYPE_F32,
  TM_DTYPE_F64
} tm_dtype;

/* Mirrors tensormem::CpuAccess. */
typedef enum tm_access { TM_ACCESS_NONE = 0, TM_ACCESS_READ, TM_ACCESS_WRITE, TM_ACCESS_READ_WRITE } tm_access;

#define TM_ERROR_MESSAGE_MAX 256

/* Caller-owned failure details. Every entry point that takes one accepts
 * NULL; on failure it fills `status` and a NUL-terminated, possibly
 * truncated `message`; on success it leaves it untouched. */
typedef struct tm_error {
  tm_status status;
  char message[TM_ERROR_MESSAGE_MAX];
} tm_error;

/* A tensor owned by the C caller; free with tm_tensor_free(). */
typedef struct tm_tensor tm_tensor;
/* One CPU map of a tensor; end with tm_tensor_unmap(). */
typedef struct tm_map tm_map;

/*
 * Wraps GL buffer `buffer_id` (`size` bytes) reached through `ops` as a
 * tensor of `shape[0..ndim)` elements of `dtype`. The table is read during
 * the call only; the new tensor retains its client state and releases it
 * when the last reference goes. A NULL table, ctx, retain,
 * release, map or unmap is refused with TM_ERROR_INVALID_ARGUMENT before
 * anything is retained. `name` may be NULL ("pbo_tensor").
 */
TM_API tm_status tm_tensor_wrap_pbo(const tm_pbo_ops *ops, uint32_t buffer_id, size_t size, const size_t *shape,
                                    size_t ndim, tm_dtype dtype, const char *name, tm_tensor **out, tm_error *err);

/* A heap tensor of exactly the footprint, zero-filled. */
TM_API tm_status tm_tensor_allocate(const size_t *shape, size_t ndim, tm_dtype dtype, const char *name, tm_tensor **out,
                                    tm_error *err);

/* A second handle on the same tensor (same storage, same window). */
TM_API tm_status tm_tensor_clone(const tm_tensor *tensor, tm_tensor **out, tm_error *err);

/* A zero-copy window `offset_bytes` into `tensor`'s window, of `shape`:
 * shares the storage and its map state. */
TM_API tm_status tm_tensor_view(const tm_tensor *tensor, size_t offset_bytes, const size_t *shape, size_t ndim,
                                tm_tensor **out, tm_error *err);

/* Drops the caller's handle. NULL is ignored. */
TM_API void tm_tensor_free(tm_tensor *tensor);

/*
 * The PBO operations table of a PBO tensor's storage: built
 * once, stored inside the storage, valid for as long as the storage lives
 * (so for as long as `tensor` or anything sharing its storage does). Its
 * ctx is the storage; the table holds no reference of its own. A tensor that
 * is not PBO-backed → TM_ERROR_INVALID_ARGUMENT.
 */
TM_API tm_status tm_tensor_pbo_table(const tm_tensor *tensor, const tm_pbo_ops **out, tm_error *err);

/* GL buffer name of a PBO tensor (0 for other storages). */
TM_API uint32_t tm_tensor_buffer_id(const tm_tensor *tensor);
/* Bytes of the logical shape. */
TM_API size_t tm_tensor_size_bytes(const tm_tensor *tensor);
/* Number of dimensions; copies up to `capacity` of them into `dims`. */
TM_API size_t tm_tensor_shape(const tm_tensor *tensor, size_t *dims, size_t capacity);

/*
 * Maps the tensor's logical bytes for `access`. Readers share one backend
 * mapping; a writable map is exclusive (conflict → TM_ERROR_MAPPED).
 */
TM_API tm_status tm_tensor_map(const tm_tensor *tensor, tm_access access, tm_map **out_map, uint8_t **out_ptr,
                               size_t *out_len, tm_error *err);
/* Ends one map. NULL is ignored. */
TM_API void tm_tensor_unmap(tm_map *map);

/*
 * A whole PBO handed to a C entry point on this thread.
 * `ops.state` borrows the reference in `owner`: the callee retains it
 * before the parts are released. Release with tm_pbo_client_parts_release().
 */
typedef struct tm_pbo_client_parts {
  tm_pbo_ops ops;
  uint32_t buffer_id;
  size_t size;         /* the whole GL allocation */
  const size_t *shape; /* owned by the parts */
  size_t ndim;
  tm_dtype dtype;
  void *owner; /* private: the parts' own reference */
} tm_pbo_client_parts;

/*
 * Exports `tensor` as client parts. On success the tensor handle is consumed
 * (freed) and its reference moves into the parts. A window that does not
 * start at byte 0 of the buffer is refused with TM_ERROR_INVALID_OPERATION
 * and the tensor is left to the caller.
 */
TM_API tm_status tm_tensor_into_client_parts(tm_tensor *tensor, tm_pbo_client_parts *out, tm_error *err);
/* Drops the parts' reference and clears them. NULL is ignored. */
TM_API void tm_pbo_client_parts_release(tm_pbo_client_parts *parts);

#ifdef __cplusplus
}
#endif

#endif /* TENSORMEM_TENSORMEM_H */

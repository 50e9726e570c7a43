// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in for a second library with its own copy of the tensor code: it
 * is built against tensormem.h only and does not link libtensormem, so the
 * only way it can reach a PBO is the C channel. It imports a table the way
 * an importer must (check every part, retain before use, release once) and
 * reads or writes the buffer through map/unmap.
 */
#include <tensormem/tensormem.h>

#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#define FOREIGN_API __declspec(dllexport)
#else
#define FOREIGN_API __attribute__((visibility("default")))
#endif

typedef struct foreign_pbo {
  tm_client_state state;
  tm_pbo_map_fn map;
  tm_pbo_unmap_fn unmap;
  uint32_t buffer_id;
  size_t size;
} foreign_pbo;

/* NULL for a NULL table or any missing part; nothing is retained then. */
FOREIGN_API foreign_pbo *foreign_import(const tm_pbo_ops *table, uint32_t buffer_id, size_t size) {
  if (!table || !table->state.ctx || !table->state.retain || !table->state.release || !table->map || !table->unmap)
    return NULL;
  foreign_pbo *pbo = calloc(1, sizeof *pbo);
  if (!pbo)
    return NULL;
  pbo->state = table->state;
  pbo->map = table->map;
  pbo->unmap = table->unmap;
  pbo->buffer_id = buffer_id;
  pbo->size = size;
  pbo->state.retain(pbo->state.ctx);
  return pbo;
}

/* Copies the first `len` bytes of the buffer out; returns the channel code,
 * or 2 when the mapping was shorter than the import's size. */
FOREIGN_API int foreign_read(const foreign_pbo *pbo, uint8_t *out, size_t len) {
  uint8_t *ptr = NULL;
  size_t mapped = 0;
  int rc = pbo->map(pbo->state.ctx, pbo->buffer_id, pbo->size, &ptr, &mapped);
  if (rc != TM_PBO_OK)
    return rc;
  if (!ptr || mapped < pbo->size || len > pbo->size) {
    pbo->unmap(pbo->state.ctx, pbo->buffer_id);
    return 2;
  }
  memcpy(out, ptr, len);
  return pbo->unmap(pbo->state.ctx, pbo->buffer_id);
}

FOREIGN_API int foreign_write(const foreign_pbo *pbo, const uint8_t *in, size_t len) {
  uint8_t *ptr = NULL;
  size_t mapped = 0;
  int rc = pbo->map(pbo->state.ctx, pbo->buffer_id, pbo->size, &ptr, &mapped);
  if (rc != TM_PBO_OK)
    return rc;
  if (!ptr || mapped < pbo->size || len > pbo->size) {
    pbo->unmap(pbo->state.ctx, pbo->buffer_id);
    return 2;
  }
  memcpy(ptr, in, len);
  return pbo->unmap(pbo->state.ctx, pbo->buffer_id);
}

FOREIGN_API void foreign_drop(foreign_pbo *pbo) {
  if (!pbo)
    return;
  pbo->state.release(pbo->state.ctx);
  free(pbo);
}

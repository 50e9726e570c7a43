// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: how a process-wide GstObject (the GL worker,
 * the D3D11 device) is shared between elements through a GstContext of its
 * own type. One implementation of the lookup order (neighbours, the
 * application, then a new object announced with have-context) for every
 * such object. Not installed. */
#pragma once

#include <gst/gst.h>

namespace gst_tensormem {

/* One kind of shared object: its context type, the structure field holding
 * it, its GType, and how a new one is made when nobody has one. */
struct SharedContextKind {
  const char *context_type;
  const char *field;
  GType (*get_type)();
  /* FALSE for an object of the type that cannot be used (not constructed). */
  gboolean (*usable)(GstObject *object);
  /* A new object (transfer full), or NULL with `error` set. */
  GstObject *(*make)(GError **error);
};

/* Stores `object` (or removes the field for NULL) in a writable context. */
void shared_context_set(const SharedContextKind &kind, GstContext *context, GstObject *object);

/* TRUE when `context` is of the kind's type and holds a usable object;
 * `*object` (when given) then receives a new reference. */
gboolean shared_context_get(const SharedContextKind &kind, GstContext *context, GstObject **object);

/* A new context of the kind holding `object`. */
GstContext *shared_context_new(const SharedContextKind &kind, GstObject *object, gboolean persistent);

/* An element's set_context: replaces `*slot` (guarded by the element's
 * object lock) when `context` carries an object. */
gboolean shared_context_handle_set(const SharedContextKind &kind, GstElement *element, GstContext *context,
                                   GstObject **slot);

/* An element's query handler: answers a context query of the kind with `*slot`. */
gboolean shared_context_handle_query(const SharedContextKind &kind, GstElement *element, GstQuery *query,
                                     GstObject **slot);

/* Fills `*slot` when empty: a neighbour's object (context query downstream,
 * then upstream), else the application's (need-context), else a new one
 * that is announced with have-context. FALSE with `error` set when none
 * could be made. */
gboolean shared_context_ensure(const SharedContextKind &kind, GstElement *element, GstObject **slot, GError **error);

} // namespace gst_tensormem

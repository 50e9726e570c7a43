// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensorcontextshare-private.h>

#include <cstring>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_context_share_debug);
#define GST_CAT_DEFAULT gst_tensor_context_share_debug

namespace gst_tensormem {

namespace {

void ensure_debug_category() {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    GST_DEBUG_CATEGORY_INIT(gst_tensor_context_share_debug, "tensormemcontext", 0,
                            "objects shared between elements through GstContext");
    g_once_init_leave(&done, 1);
  }
}

/* The element's current object (a new reference) or NULL; read under the
 * element's object lock, which guards `*slot`. */
GstObject *current_object(GstElement *element, GstObject **slot) {
  GST_OBJECT_LOCK(element);
  GstObject *object = *slot ? GST_OBJECT_CAST(gst_object_ref(*slot)) : nullptr;
  GST_OBJECT_UNLOCK(element);
  return object;
}

bool slot_filled(GstElement *element, GstObject **slot) {
  GST_OBJECT_LOCK(element);
  const bool set = *slot != nullptr;
  GST_OBJECT_UNLOCK(element);
  return set;
}

struct QueryRun {
  GstQuery *query;
  gboolean answered;
};

/* gst_iterator_fold callback: asks the peer of one pad; stops at the first answer. */
gboolean query_peer(const GValue *item, GValue *result, gpointer user_data) {
  auto *run = static_cast<QueryRun *>(user_data);
  auto *pad = static_cast<GstPad *>(g_value_get_object(item));
  if (gst_pad_peer_query(pad, run->query)) {
    run->answered = TRUE;
    g_value_set_boolean(result, TRUE);
    return FALSE;
  }
  return TRUE;
}

/* Runs `query` on the peers of the element's pads of `direction` (src: the
 * query travels downstream, sink: upstream). */
gboolean run_query(GstElement *element, GstQuery *query, GstPadDirection direction) {
  GstIterator *it =
      direction == GST_PAD_SRC ? gst_element_iterate_src_pads(element) : gst_element_iterate_sink_pads(element);
  QueryRun run{query, FALSE};
  GValue result = G_VALUE_INIT;
  g_value_init(&result, G_TYPE_BOOLEAN);
  for (;;) {
    const GstIteratorResult res = gst_iterator_fold(it, query_peer, &result, &run);
    if (res == GST_ITERATOR_RESYNC) {
      gst_iterator_resync(it);
      run.answered = FALSE;
      continue;
    }
    break;
  }
  g_value_unset(&result);
  gst_iterator_free(it);
  return run.answered;
}

} // namespace

/// \brief Stores `object` in the context's structure, or removes the field for NULL.
void shared_context_set(const SharedContextKind &kind, GstContext *context, GstObject *object) {
  GstStructure *s = gst_context_writable_structure(context);
  if (object)
    gst_structure_set(s, kind.field, kind.get_type(), object, nullptr);
  else
    gst_structure_remove_field(s, kind.field);
}

/// \brief The usable object a context of the kind's type carries, if any.
gboolean shared_context_get(const SharedContextKind &kind, GstContext *context, GstObject **object) {
  if (object)
    *object = nullptr;
  if (std::strcmp(gst_context_get_context_type(context), kind.context_type) != 0)
    return FALSE;
  const GstStructure *s = gst_context_get_structure(context);
  GstObject *found = nullptr;
  if (!gst_structure_get(s, kind.field, kind.get_type(), &found, nullptr) || !found)
    return FALSE;
  if (!kind.usable(found)) {
    gst_object_unref(found);
    return FALSE;
  }
  if (object)
    *object = found;
  else
    gst_object_unref(found);
  return TRUE;
}

/// \brief A new context of the kind's type holding `object`.
GstContext *shared_context_new(const SharedContextKind &kind, GstObject *object, gboolean persistent) {
  GstContext *context = gst_context_new(kind.context_type, persistent);
  shared_context_set(kind, context, object);
  return context;
}

/// \brief set_context: takes the object a context of the kind carries into `*slot`.
gboolean shared_context_handle_set(const SharedContextKind &kind, GstElement *element, GstContext *context,
                                   GstObject **slot) {
  ensure_debug_category();
  if (!context)
    return FALSE;
  GstObject *given = nullptr;
  if (!shared_context_get(kind, context, &given))
    return FALSE;
  GST_OBJECT_LOCK(element);
  GstObject *old = *slot;
  *slot = given;
  GST_OBJECT_UNLOCK(element);
  if (old != given)
    GST_DEBUG_OBJECT(element, "%s %" GST_PTR_FORMAT " (was %" GST_PTR_FORMAT ")", kind.context_type, given, old);
  if (old)
    gst_object_unref(old);
  return TRUE;
}

/// \brief Answers a context query of the kind's type with the element's object.
gboolean shared_context_handle_query(const SharedContextKind &kind, GstElement *element, GstQuery *query,
                                     GstObject **slot) {
  ensure_debug_category();
  if (GST_QUERY_TYPE(query) != GST_QUERY_CONTEXT)
    return FALSE;
  const gchar *type = nullptr;
  if (!gst_query_parse_context_type(query, &type) || !type || std::strcmp(type, kind.context_type) != 0)
    return FALSE;
  GstObject *ours = current_object(element, slot);
  if (!ours)
    return FALSE;
  GstContext *old = nullptr;
  gst_query_parse_context(query, &old);
  GstContext *context = old ? gst_context_copy(old) : gst_context_new(kind.context_type, FALSE);
  shared_context_set(kind, context, ours);
  gst_query_set_context(query, context);
  gst_context_unref(context);
  GST_LOG_OBJECT(element, "answered a %s query with %" GST_PTR_FORMAT, kind.context_type, ours);
  gst_object_unref(ours);
  return TRUE;
}

/// \brief Neighbours, then the application, then a new object announced to the pipeline.
gboolean shared_context_ensure(const SharedContextKind &kind, GstElement *element, GstObject **slot, GError **error) {
  ensure_debug_category();
  if (slot_filled(element, slot))
    return TRUE;

  GstQuery *query = gst_query_new_context(kind.context_type);
  if (run_query(element, query, GST_PAD_SRC) || run_query(element, query, GST_PAD_SINK)) {
    GstContext *context = nullptr;
    gst_query_parse_context(query, &context);
    if (context) {
      GST_DEBUG_OBJECT(element, "a neighbour shares its %s", kind.context_type);
      gst_element_set_context(element, context);
      // An element whose set_context does not fill the slot still gets the object.
      if (!slot_filled(element, slot))
        shared_context_handle_set(kind, element, context, slot);
    }
  }
  gst_query_unref(query);
  if (slot_filled(element, slot))
    return TRUE;

  GST_DEBUG_OBJECT(element, "posting need-context for %s", kind.context_type);
  gst_element_post_message(element, gst_message_new_need_context(GST_OBJECT_CAST(element), kind.context_type));
  if (slot_filled(element, slot))
    return TRUE;

  GstObject *made = kind.make(error);
  if (!made)
    return FALSE;
  GstContext *context = shared_context_new(kind, made, FALSE);
  gst_element_set_context(element, context);
  if (!slot_filled(element, slot))
    shared_context_handle_set(kind, element, context, slot);
  GST_INFO_OBJECT(element, "made %" GST_PTR_FORMAT " and shares it as %s", made, kind.context_type);
  gst_object_unref(made);
  gst_element_post_message(element, gst_message_new_have_context(GST_OBJECT_CAST(element), context));
  return TRUE;
}

} // namespace gst_tensormem

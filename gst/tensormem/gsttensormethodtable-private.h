// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: how the upload and download method tables are
 * walked. A method is a struct with accept(ctx, buffer) and
 * propose(ctx, query); the last method of a table accepts every buffer.
 * Not installed. */
#pragma once

#include <gst/gst.h>

#include <cstddef>

namespace gst_tensormem {

/* The first method of `methods` that accepts `in`, else the last. */
template <typename Method, typename Context, std::size_t N>
const Method &first_accepting(const Method (&methods)[N], const Context &ctx, GstBuffer *in) {
  for (const Method &method : methods) {
    if (method.accept(ctx, in))
      return method;
  }
  return methods[N - 1];
}

/* Every method's proposal for `query`; FALSE when none had one. */
template <typename Method, typename Context, std::size_t N>
gboolean propose_all(const Method (&methods)[N], const Context &ctx, GstQuery *query) {
  gboolean proposed = FALSE;
  for (const Method &method : methods)
    proposed |= method.propose(ctx, query);
  return proposed;
}

} // namespace gst_tensormem

// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: what other units of the library need of the
 * CUDA meta's private part. C++ only; not installed. */
#pragma once

#include <gst/gst.h>

/* Declared, not included: gsttensorcudameta.cpp includes this header, and
 * this header must not lead back to it (tests/gst/check_unit_includes.py). */
typedef struct _GstTensorMemCudaMeta GstTensorMemCudaMeta;

namespace gst_tensormem {

/* A CUDA meta on `to` giving CUDA the bytes `from` gives (its handle, offset
 * and size), with no map outstanding: a map belongs to the meta it was made
 * on. For a copy of a buffer that holds the very memories of `from`'s
 * (make_buffer_writable()). NULL when `to` cannot take it. */
GstTensorMemCudaMeta *copy_cuda_meta(GstTensorMemCudaMeta *from, GstBuffer *to);

} // namespace gst_tensormem

// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/gst.h>

/* The project builds with -fvisibility=hidden; every public symbol of
 * libgsttensormem-1.0 carries this macro. */
#ifdef BUILDING_GST_TENSORMEM
#define GST_TENSOR_MEM_API GST_API_EXPORT
#else
#define GST_TENSOR_MEM_API GST_API_IMPORT
#endif

// SPDX-License-Identifier: Apache-2.0
#pragma once

/* The C++ entry points of libgsttensormem, all of them: the calls that take
 * or return libtensormem objects (storages, timelines, CUDA handles,
 * tensors). Each family's are in its own companion header next to its C
 * header (gsttensordmabuf.hpp beside gsttensordmabuf.h, ...); this umbrella
 * is for applications and tests. No unit of the library includes it: a unit
 * includes the companions it uses. Not introspected: bindings use the C API. */

#include <gst/tensormem/tensormem.h>

#include <gst/tensormem/gsttensorcudameta.hpp>
#include <gst/tensormem/gsttensord3d11.hpp>
#include <gst/tensormem/gsttensord3d11device.hpp>
#include <gst/tensormem/gsttensordmabuf.hpp>
#include <gst/tensormem/gsttensorfencemeta.hpp>
#include <gst/tensormem/gsttensorformat.hpp>
#include <gst/tensormem/gsttensormemallocator.hpp>
#include <gst/tensormem/gsttensorreadcompletion.hpp>

#if GST_TENSOR_MEM_HAVE_GL
#include <gst/tensormem/gsttensorglcontext.hpp>
#include <gst/tensormem/gsttensorpbo.hpp>
#endif

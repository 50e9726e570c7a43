// SPDX-License-Identifier: Apache-2.0
#pragma once

// clang-format off: the configuration comes first, it decides what follows.
#include <gst/tensormem/gsttensormemconfig.h>
// clang-format on

#include <gst/tensormem/gsttensorbasememory.h>
#include <gst/tensormem/gsttensorbatchmeta.h>
#include <gst/tensormem/gsttensorbufferpool.h>
#include <gst/tensormem/gsttensorcudameta.h>
#include <gst/tensormem/gsttensord3d11.h>
#include <gst/tensormem/gsttensord3d11device.h>
#include <gst/tensormem/gsttensordlpack.h>
#include <gst/tensormem/gsttensordmabuf.h>
#include <gst/tensormem/gsttensorelements.h>
#include <gst/tensormem/gsttensorfencemeta.h>
#include <gst/tensormem/gsttensorformat.h>
#include <gst/tensormem/gsttensormem.h>
#include <gst/tensormem/gsttensormemallocator.h>
#include <gst/tensormem/gsttensormemory.h>
#include <gst/tensormem/gsttensormemresizemeta.h>
#include <gst/tensormem/gsttensormemvalidate.h>
#include <gst/tensormem/gsttensorreadcompletion.h>
#include <gst/tensormem/gsttensorstorage.h>
#include <gst/tensormem/gsttensorwritable.h>
#include <gst/tensormem/tensormem-prelude.h>

#if GST_TENSOR_MEM_HAVE_GL
#include <gst/tensormem/gsttensorglcontext.h>
#include <gst/tensormem/gsttensorgstgl.h>
#include <gst/tensormem/gsttensorpbo.h>
#endif

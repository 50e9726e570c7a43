// SPDX-License-Identifier: Apache-2.0
#include "gsttensorbatch.h"
#include "gsttensorconvert.h"
#include "gsttensorcudaimport.h"
#include "gsttensordownload.h"
#include "gsttensorinspect.h"
#include "gsttensorsync.h"
#include "gsttensorunbatch.h"
#include "gsttensorupload.h"

#include <gst/tensormem/gsttensorelements.h>
#include <gst/tensormem/gsttensormem.h>
#include <gst/tensormem/gsttensormemconfig.h>
#if GST_TENSOR_MEM_HAVE_ANALYTICS
#include "gsttensorresultmap.h"
#endif

gboolean gst_tensor_mem_register_elements(GstPlugin *plugin) {
  g_return_val_if_fail(GST_IS_PLUGIN(plugin), FALSE);
  gst_tensor_mem_init();
  return gst_element_register(plugin, "tensorupload", GST_RANK_NONE, GST_TYPE_TENSOR_UPLOAD) &&
         gst_element_register(plugin, "tensordownload", GST_RANK_NONE, GST_TYPE_TENSOR_DOWNLOAD) &&
         gst_element_register(plugin, "tensorcudaimport", GST_RANK_NONE, GST_TYPE_TENSOR_CUDA_IMPORT) &&
         gst_element_register(plugin, "tensorinspect", GST_RANK_NONE, GST_TYPE_TENSOR_INSPECT) &&
         gst_element_register(plugin, "tensorconvert", GST_RANK_NONE, GST_TYPE_TENSOR_CONVERT) &&
         gst_element_register(plugin, "tensorsync", GST_RANK_NONE, GST_TYPE_TENSOR_SYNC) &&
         gst_element_register(plugin, "tensorbatch", GST_RANK_NONE, GST_TYPE_TENSOR_BATCH) &&
         gst_element_register(plugin, "tensorunbatch", GST_RANK_NONE, GST_TYPE_TENSOR_UNBATCH)
#if GST_TENSOR_MEM_HAVE_ANALYTICS
         && gst_element_register(plugin, "tensorresultmap", GST_RANK_NONE, GST_TYPE_TENSOR_RESULT_MAP)
#endif
      ;
}

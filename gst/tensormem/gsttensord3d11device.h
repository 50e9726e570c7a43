// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/tensormem/tensormem-prelude.h>

G_BEGIN_DECLS

/**
 * GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE:
 *
 * The #GstContext type through which tensor elements share one
 * #GstTensorMemD3D11Device.
 *
 * Since: 0.1
 */
#define GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE "gst.tensormem.d3d11.device"

/**
 * GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_FIELD:
 *
 * The field of a %GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE context's structure
 * that holds the device.
 *
 * Since: 0.1
 */
#define GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_FIELD "device"

#define GST_TYPE_TENSOR_MEM_D3D11_DEVICE (gst_tensor_mem_d3d11_device_get_type())
#define GST_TENSOR_MEM_D3D11_DEVICE(obj)                                                                                   \
  (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_TENSOR_MEM_D3D11_DEVICE, GstTensorMemD3D11Device))
#define GST_IS_TENSOR_MEM_D3D11_DEVICE(obj) (G_TYPE_CHECK_INSTANCE_TYPE((obj), GST_TYPE_TENSOR_MEM_D3D11_DEVICE))

typedef struct _GstTensorMemD3D11Device GstTensorMemD3D11Device;
typedef struct _GstTensorMemD3D11DeviceClass GstTensorMemD3D11DeviceClass;
typedef struct _GstTensorMemD3D11DevicePrivate GstTensorMemD3D11DevicePrivate;

/**
 * GstTensorMemD3D11Device:
 *
 * The process Direct3D 11 device, its fence and the fence's counter
 * (tensormem::D3d11Context) as a #GstObject, so that elements can share it
 * through a #GstContext of type %GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE. On
 * Windows it is the real device; elsewhere only the software reference
 * device exists, and only when `TENSORMEM_D3D11_DEVICE=software` is set.
 *
 * Since: 0.1
 */
struct _GstTensorMemD3D11Device {
  GstObject parent;

  /*< private >*/
  GstTensorMemD3D11DevicePrivate *priv;
  gpointer _gst_reserved[GST_PADDING];
};

struct _GstTensorMemD3D11DeviceClass {
  GstObjectClass parent_class;

  /*< private >*/
  gpointer _gst_reserved[GST_PADDING];
};

GST_TENSOR_MEM_API
GType gst_tensor_mem_d3d11_device_get_type(void);

GST_TENSOR_MEM_API
GstTensorMemD3D11Device *gst_tensor_mem_d3d11_device_new(GError **error);

GST_TENSOR_MEM_API
const gchar *gst_tensor_mem_d3d11_device_get_name(GstTensorMemD3D11Device *device);

GST_TENSOR_MEM_API
GstContext *gst_context_new_tensor_mem_d3d11_device(GstTensorMemD3D11Device *device, gboolean persistent);

GST_TENSOR_MEM_API
gboolean gst_context_get_tensor_mem_d3d11_device(GstContext *context, GstTensorMemD3D11Device **device);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_d3d11_device_ensure(GstElement *element, GstTensorMemD3D11Device **device, GError **error);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_d3d11_device_handle_set_context(GstElement *element, GstContext *context,
                                                    GstTensorMemD3D11Device **device);

GST_TENSOR_MEM_API
gboolean gst_tensor_mem_d3d11_device_handle_context_query(GstElement *element, GstQuery *query,
                                                      GstTensorMemD3D11Device **device);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTensorMemD3D11Device, gst_object_unref)

G_END_DECLS


// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensord3d11device.h>

#include <gst/tensormem/gsttensorcontextshare-private.h>
#include <gst/tensormem/gsttensord3d11device.hpp>

#include <tensormem/d3d11_device.hpp>
#include <tensormem/d3d11_timeline.hpp>

#include <mutex>

#include <memory>
#include <new>
#include <utility>

GST_DEBUG_CATEGORY_STATIC(gst_tensor_mem_d3d11_device_debug);
#define GST_CAT_DEFAULT gst_tensor_mem_d3d11_device_debug

struct _GstTensorMemD3D11DevicePrivate {
  std::shared_ptr<tensormem::D3d11Context> context; // never empty after construction
  std::once_flag timeline_once;
  std::shared_ptr<tensormem::D3d11FenceTimeline> timeline; // made on first use; empty without a fence
};

G_DEFINE_TYPE_WITH_CODE(GstTensorMemD3D11Device, gst_tensor_mem_d3d11_device, GST_TYPE_OBJECT,
                        GST_DEBUG_CATEGORY_INIT(gst_tensor_mem_d3d11_device_debug, "tensormemd3d11device", 0,
                                                "the D3D11 device and its GstContext"))

static void gst_tensor_mem_d3d11_device_finalize(GObject *object) {
  auto *self = GST_TENSOR_MEM_D3D11_DEVICE(object);
  delete self->priv;
  self->priv = nullptr;
  G_OBJECT_CLASS(gst_tensor_mem_d3d11_device_parent_class)->finalize(object);
}

static void gst_tensor_mem_d3d11_device_class_init(GstTensorMemD3D11DeviceClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = gst_tensor_mem_d3d11_device_finalize;
}

static void gst_tensor_mem_d3d11_device_init(GstTensorMemD3D11Device *self) { self->priv = nullptr; }

namespace {

bool device_ok(GstTensorMemD3D11Device *device) {
  return GST_IS_TENSOR_MEM_D3D11_DEVICE(device) && device->priv != nullptr && device->priv->context != nullptr;
}

gboolean device_object_ok(GstObject *object) { return device_ok(GST_TENSOR_MEM_D3D11_DEVICE(object)); }

GstObject *make_device(GError **error) { return GST_OBJECT_CAST(gst_tensor_mem_d3d11_device_new(error)); }

const gst_tensormem::SharedContextKind kDeviceKind = {
    GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE, GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_FIELD,
    gst_tensor_mem_d3d11_device_get_type, device_object_ok, make_device};

GstObject **object_slot(GstTensorMemD3D11Device **slot) { return reinterpret_cast<GstObject **>(slot); }

} // namespace

/**
 * gst_tensor_mem_d3d11_device_new:
 * @error: (out) (optional): where to put the reason on failure
 *
 * The process D3D11 device (tensormem::D3d11Context::process()): on Windows
 * the hardware device, else WARP; elsewhere the software reference device
 * when the environment has `TENSORMEM_D3D11_DEVICE=software`, and no device
 * otherwise. Every call wraps the same process context.
 *
 * Returns: (transfer full) (nullable): the device, or %NULL with @error set
 * (%GST_RESOURCE_ERROR_NOT_FOUND, saying how to ask for the reference
 * device).
 *
 * Since: 0.1
 */
GstTensorMemD3D11Device *gst_tensor_mem_d3d11_device_new(GError **error) {
  auto context = tensormem::D3d11Context::process();
  if (!context) {
    g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND, "No Direct3D 11 device: %s",
                context.error().message().c_str());
    return nullptr;
  }
  return gst_tensor_mem_d3d11_device_new_wrapped(std::move(*context));
}

/**
 * gst_tensor_mem_d3d11_device_new_wrapped: (skip)
 * @context: a D3D11 context
 *
 * C++ only. Wraps an existing context (a test's own software device, or the
 * application's) so it can be handed to elements in a #GstContext.
 *
 * Returns: (transfer full) (nullable): the device; %NULL for an empty
 * @context or when out of memory.
 *
 * Since: 0.1
 */
GstTensorMemD3D11Device *gst_tensor_mem_d3d11_device_new_wrapped(std::shared_ptr<tensormem::D3d11Context> context) {
  g_return_val_if_fail(context != nullptr, nullptr);
  auto *priv = new (std::nothrow) GstTensorMemD3D11DevicePrivate();
  if (priv)
    priv->context = std::move(context);
  if (!priv)
    return nullptr;
  auto *self = static_cast<GstTensorMemD3D11Device *>(g_object_new(GST_TYPE_TENSOR_MEM_D3D11_DEVICE, nullptr));
  gst_object_ref_sink(self);
  self->priv = priv;
  GST_DEBUG_OBJECT(self, "wraps D3D11 device %s", priv->context->device().name());
  return self;
}

/**
 * gst_tensor_mem_d3d11_device_get_d3d11_context: (skip)
 * @device: a #GstTensorMemD3D11Device
 *
 * C++ only.
 *
 * Returns: the D3D11 context @device wraps (a new reference).
 *
 * Since: 0.1
 */
std::shared_ptr<tensormem::D3d11Context>
gst_tensor_mem_d3d11_device_get_d3d11_context(GstTensorMemD3D11Device *device) {
  g_return_val_if_fail(device_ok(device), nullptr);
  return device->priv->context;
}

/**
 * gst_tensor_mem_d3d11_device_get_fence_timeline: (skip)
 * @device: a #GstTensorMemD3D11Device
 *
 * C++ only. The process fence as a timeline, one per device object, made on
 * first use: what texture writes are fenced on.
 *
 * Returns: the timeline, or an empty pointer when the device has no fence.
 *
 * Since: 0.1
 */
std::shared_ptr<tensormem::D3d11FenceTimeline>
gst_tensor_mem_d3d11_device_get_fence_timeline(GstTensorMemD3D11Device *device) {
  g_return_val_if_fail(device_ok(device), nullptr);
  GstTensorMemD3D11DevicePrivate *priv = device->priv;
  std::call_once(priv->timeline_once, [&] {
    auto made = tensormem::D3d11FenceTimeline::create(priv->context, "D3D11 texture writes");
    if (made)
      priv->timeline = std::move(*made);
    else
      GST_WARNING_OBJECT(device, "no fence timeline: %s", made.error().message().c_str());
  });
  return priv->timeline;
}

/**
 * gst_tensor_mem_d3d11_device_get_name:
 * @device: a #GstTensorMemD3D11Device
 *
 * Returns: (transfer none): the name of the device behind @device (the
 * adapter, or the software reference device's name).
 *
 * Since: 0.1
 */
const gchar *gst_tensor_mem_d3d11_device_get_name(GstTensorMemD3D11Device *device) {
  g_return_val_if_fail(device_ok(device), nullptr);
  return device->priv->context->device().name();
}

/**
 * gst_context_new_tensor_mem_d3d11_device:
 * @device: the device to share
 * @persistent: whether the context survives the element's return to NULL
 *
 * Returns: (transfer full): a new %GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE
 * context holding @device, for gst_element_set_context() or an answer to
 * need-context.
 *
 * Since: 0.1
 */
GstContext *gst_context_new_tensor_mem_d3d11_device(GstTensorMemD3D11Device *device, gboolean persistent) {
  g_return_val_if_fail(device_ok(device), nullptr);
  return gst_tensormem::shared_context_new(kDeviceKind, GST_OBJECT_CAST(device), persistent);
}

/**
 * gst_context_get_tensor_mem_d3d11_device:
 * @context: a #GstContext
 * @device: (out) (optional) (transfer full): the device it holds
 *
 * Returns: %TRUE when @context is of type
 * %GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE and holds a device.
 *
 * Since: 0.1
 */
gboolean gst_context_get_tensor_mem_d3d11_device(GstContext *context, GstTensorMemD3D11Device **device) {
  g_return_val_if_fail(GST_IS_CONTEXT(context), FALSE);
  return gst_tensormem::shared_context_get(kDeviceKind, context, reinterpret_cast<GstObject **>(device));
}

/**
 * gst_tensor_mem_d3d11_device_handle_set_context:
 * @element: the element whose set_context is running
 * @context: the context it was given
 * @device: (inout) (transfer full) (nullable): the element's device slot,
 *   guarded by its object lock
 *
 * For an element's #GstElementClass.set_context: a context holding a device
 * replaces *@device. Chain up to the parent class as well.
 *
 * Returns: %TRUE when @context carried a device.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_d3d11_device_handle_set_context(GstElement *element, GstContext *context,
                                                        GstTensorMemD3D11Device **device) {
  g_return_val_if_fail(GST_IS_ELEMENT(element), FALSE);
  g_return_val_if_fail(device != nullptr, FALSE);
  return gst_tensormem::shared_context_handle_set(kDeviceKind, element, context, object_slot(device));
}

/**
 * gst_tensor_mem_d3d11_device_handle_context_query: (skip)
 * @element: the element answering
 * @query: a query
 * @device: the element's device slot, guarded by its object lock
 *
 * For an element's query handlers: answers a context query of type
 * %GST_TENSOR_MEM_D3D11_DEVICE_CONTEXT_TYPE with *@device when it has one.
 *
 * Not introspectable: @device is the address of the element's slot, read under
 * its object lock, which a binding cannot pass; elements in C call it.
 *
 * Returns: %TRUE when @query was answered.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_d3d11_device_handle_context_query(GstElement *element, GstQuery *query,
                                                          GstTensorMemD3D11Device **device) {
  g_return_val_if_fail(GST_IS_ELEMENT(element), FALSE);
  g_return_val_if_fail(GST_IS_QUERY(query), FALSE);
  g_return_val_if_fail(device != nullptr, FALSE);
  return gst_tensormem::shared_context_handle_query(kDeviceKind, element, query, object_slot(device));
}

/**
 * gst_tensor_mem_d3d11_device_ensure:
 * @element: the element that needs a device
 * @device: (inout) (transfer full) (nullable): its device slot, guarded by
 *   its object lock
 * @error: (out) (optional): where to put the reason on failure
 *
 * Fills *@device when it is empty, in the order GstGL uses: a linked
 * neighbour's device (context query downstream, then upstream), the
 * application's (need-context), else gst_tensor_mem_d3d11_device_new(),
 * announced with have-context so every later element shares it. The
 * element's set_context must call gst_tensor_mem_d3d11_device_handle_set_context()
 * on the same slot.
 *
 * Returns: %TRUE when *@device holds a device.
 *
 * Since: 0.1
 */
gboolean gst_tensor_mem_d3d11_device_ensure(GstElement *element, GstTensorMemD3D11Device **device, GError **error) {
  g_return_val_if_fail(GST_IS_ELEMENT(element), FALSE);
  g_return_val_if_fail(device != nullptr, FALSE);
  return gst_tensormem::shared_context_ensure(kDeviceKind, element, object_slot(device), error);
}

// SPDX-License-Identifier: Apache-2.0
#include "modelinfo.hpp"

#include <gst/tensormem/gsttensoranalytics-private.h>
#include <gst/tensormem/gsttensormodelinfo-private.h>

#include <glib.h>

#include <cstdint>
#include <cstdlib>

namespace gst_tensorinfer {

#if GST_TENSOR_MEM_HAVE_TENSOR_CAPS
/* GStreamer 1.28's reader; the file was checked to load. */
struct ModelInfo::Impl {
  GstAnalyticsModelInfo *info = nullptr;
  bool open(const std::string &model_path, const std::string &path, std::string *error);
  ~Impl() {
    if (info)
      gst_analytics_modelinfo_free(info);
  }
};

namespace {
bool data_type_named(const char *name, GstTensorDataType *out) {
  for (gint v = 0; v <= GST_TENSOR_DATA_TYPE_BFLOAT16; ++v) {
    const char *known = gst_tensormem::tensor_data_type_name(static_cast<GstTensorDataType>(v));
    if (known && g_strcmp0(known, name) == 0) {
      *out = static_cast<GstTensorDataType>(v);
      return true;
    }
  }
  return false;
}
} // namespace

bool ModelInfo::Impl::open(const std::string &model_path, const std::string &path, std::string *error) {
  info = gst_analytics_modelinfo_load(model_path.c_str());
  if (!info)
    *error = path + " is not a modelinfo file GStreamer reads (an ini file with a [modelinfo] group of version "
                    "1.x; GST_DEBUG=modelinfo:5 says more)";
  return info != nullptr;
}

std::string ModelInfo::group_id() const {
  gchar *id = gst_analytics_modelinfo_get_group_id(impl_->info);
  std::string s = id ? id : "";
  g_free(id);
  return s;
}

std::optional<ModelInfoTensor> ModelInfo::find(bool output, std::size_t index, const Port &port) const {
  GstTensorDataType type;
  if (!data_type_named(type_name(port.type), &type))
    return std::nullopt;
  std::vector<gsize> dims;
  for (std::int64_t d : port.shape)
    dims.push_back(d < 0 ? G_MAXSIZE : static_cast<gsize>(d));
  gchar *section = gst_analytics_modelinfo_find_tensor_name(
      impl_->info, output ? MODELINFO_DIRECTION_OUTPUT : MODELINFO_DIRECTION_INPUT, index, port.name.c_str(), type,
      dims.size(), dims.data());
  if (!section)
    return std::nullopt;
  ModelInfoTensor t;
  gchar *id = gst_analytics_modelinfo_get_id(impl_->info, section);
  t.id = id ? id : "";
  g_free(id);
  t.col_major = gst_analytics_modelinfo_get_dims_order(impl_->info, section) == GST_TENSOR_DIM_ORDER_COL_MAJOR;
  g_free(section);
  return t;
}

#else
/* The same format and rules, read here: GStreamer before 1.28 has no reader. */
struct ModelInfo::Impl {
  std::unique_ptr<gst_tensormem::ModelInfoFile> file;
  bool open(const std::string &model_path, const std::string &, std::string *error) {
    file = gst_tensormem::ModelInfoFile::load(model_path, error);
    return file != nullptr;
  }
};

std::string ModelInfo::group_id() const { return impl_->file->group_id(); }

std::optional<ModelInfoTensor> ModelInfo::find(bool output, std::size_t index, const Port &port) const {
  const gst_tensormem::ModelInfoSection *s = impl_->file->find(output, index, port.name, type_name(port.type), port.shape);
  if (!s)
    return std::nullopt;
  return ModelInfoTensor{s->id, s->col_major};
}
#endif

std::unique_ptr<ModelInfo> ModelInfo::load(const std::string &model_path, std::string *error) {
  error->clear();
  const std::string path = gst_tensormem::ModelInfoFile::path_for(model_path);
  if (path.empty())
    return nullptr;
  auto impl = std::make_unique<Impl>();
  if (!impl->open(model_path, path, error))
    return nullptr;
  return std::unique_ptr<ModelInfo>(new ModelInfo(path, std::move(impl)));
}

ModelInfo::ModelInfo(std::string path, std::unique_ptr<Impl> impl) : path_(std::move(path)), impl_(std::move(impl)) {}

ModelInfo::~ModelInfo() = default;

} // namespace gst_tensorinfer

// SPDX-License-Identifier: Apache-2.0
#include "modelinfo.hpp"

#include <gst/tensormem/gsttensoranalytics-private.h>

#include <glib.h>

#include <cstdint>
#include <cstdlib>

namespace gst_tensorinfer {

namespace {

[[maybe_unused]] constexpr const char *kSection = "modelinfo";

/* The model's modelinfo file, trying names in the order GStreamer 1.28
 * does; empty where there is none. */
std::string existing_file(const std::string &model_path) {
  std::vector<std::string> paths{model_path + ".modelinfo"};
  const std::size_t dot = model_path.rfind('.');
  const std::size_t slash = model_path.rfind('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash))
    paths.push_back(model_path.substr(0, dot) + ".modelinfo");
  for (const std::string &path : paths)
    if (g_file_test(path.c_str(), G_FILE_TEST_EXISTS))
      return path;
  return {};
}

[[maybe_unused]] std::string key_string(GKeyFile *kf, const char *group, const char *key) {
  gchar *value = g_key_file_get_string(kf, group, key, nullptr);
  std::string s = value ? value : "";
  g_free(value);
  return s;
}

/* "0.0,255.0;-1,1": (min, max) per channel; false for another form. */
[[maybe_unused]] bool parse_ranges(const std::string &text, std::vector<std::pair<double, double>> *out) {
  out->clear();
  if (text.empty())
    return true;
  gchar **pairs = g_strsplit(text.c_str(), ";", -1);
  bool ok = true;
  for (gchar **p = pairs; ok && *p; ++p) {
    gchar **two = g_strsplit(*p, ",", -1);
    ok = g_strv_length(two) == 2;
    if (ok) {
      gchar *end0 = nullptr, *end1 = nullptr;
      const double lo = g_ascii_strtod(two[0], &end0), hi = g_ascii_strtod(two[1], &end1);
      ok = end0 != two[0] && end1 != two[1];
      out->emplace_back(lo, hi);
    }
    g_strfreev(two);
  }
  g_strfreev(pairs);
  return ok;
}

} // namespace

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
  t.section = section;
  gchar *id = gst_analytics_modelinfo_get_id(impl_->info, section);
  t.id = id ? id : "";
  g_free(id);
  t.col_major = gst_analytics_modelinfo_get_dims_order(impl_->info, section) == GST_TENSOR_DIM_ORDER_COL_MAJOR;
  gsize n = 0;
  gdouble *mins = nullptr, *maxs = nullptr;
  if (gst_analytics_modelinfo_get_target_ranges(impl_->info, section, &n, &mins, &maxs))
    for (gsize i = 0; i < n; ++i)
      t.ranges.emplace_back(mins[i], maxs[i]);
  g_free(mins);
  g_free(maxs);
  g_free(section);
  return t;
}

#else
/* The same format and rules, read here: GStreamer before 1.28 has no reader. */
struct ModelInfo::Impl {
  GKeyFile *kf = g_key_file_new();
  ~Impl() { g_key_file_free(kf); }
  bool open(const std::string &model_path, const std::string &path, std::string *error);

  bool direction_fits(const char *group, bool output) const {
    const std::string dir = key_string(kf, group, "dir");
    return dir.empty() || dir == (output ? "output" : "input");
  }
  /* The group fits the tensor: type, direction and, where the file gives
   * them (or `need_dims`), the dims. */
  bool fits(const char *group, bool output, const Port &port, bool need_dims) const {
    if (g_strcmp0(group, kSection) == 0 || key_string(kf, group, "type") != type_name(port.type) ||
        !direction_fits(group, output))
      return false;
    if (!g_key_file_has_key(kf, group, "dims", nullptr))
      return !need_dims;
    gsize n = 0;
    gint *dims = g_key_file_get_integer_list(kf, group, "dims", &n, nullptr);
    bool ok = dims && n == port.shape.size();
    for (gsize i = 0; ok && i < n; ++i)
      ok = dims[i] < 0 || (port.shape[i] >= 0 && port.shape[i] == dims[i]);
    g_free(dims);
    return ok;
  }
};

bool ModelInfo::Impl::open(const std::string &, const std::string &path, std::string *error) {
  g_key_file_set_list_separator(kf, ',');
  GError *gerror = nullptr;
  if (!g_key_file_load_from_file(kf, path.c_str(), G_KEY_FILE_NONE, &gerror)) {
    *error = path + " is not an ini file: " + gerror->message;
    g_error_free(gerror);
    return false;
  }
  const std::string version = key_string(kf, kSection, "version");
  gchar **parts = g_strsplit(version.c_str(), ".", -1);
  const bool one_x =
      g_strv_length(parts) == 2 && g_strcmp0(parts[0], "1") == 0 && parts[1][0] && g_ascii_isdigit(parts[1][0]);
  g_strfreev(parts);
  if (!one_x)
    *error = path + " has " +
             (version.empty() ? std::string("no [modelinfo] version") : "[modelinfo] version " + version) +
             "; the format read here is version 1.x";
  return one_x;
}

std::string ModelInfo::group_id() const { return key_string(impl_->kf, kSection, "group-id"); }

std::optional<ModelInfoTensor> ModelInfo::find(bool output, std::size_t index, const Port &port) const {
  gsize n_groups = 0;
  gchar **groups = g_key_file_get_groups(impl_->kf, &n_groups);
  const char *found = nullptr;
  if (g_key_file_has_group(impl_->kf, port.name.c_str()) && impl_->fits(port.name.c_str(), output, port, false))
    found = port.name.c_str();
  std::size_t seen = 0;
  for (gsize g = 0; !found && g < n_groups; ++g) {
    if (g_strcmp0(groups[g], kSection) == 0 || !impl_->direction_fits(groups[g], output))
      continue;
    if (seen++ == index && impl_->fits(groups[g], output, port, false))
      found = groups[g];
  }
  for (gsize g = 0; !found && g < n_groups; ++g)
    if (impl_->fits(groups[g], output, port, true))
      found = groups[g];
  std::optional<ModelInfoTensor> result;
  if (found) {
    ModelInfoTensor t;
    t.section = found;
    t.id = key_string(impl_->kf, found, "id");
    t.col_major = key_string(impl_->kf, found, "dims-order") == "col-major";
    if (parse_ranges(key_string(impl_->kf, found, "ranges"), &t.ranges))
      result = std::move(t);
  }
  g_strfreev(groups);
  return result;
}
#endif

std::unique_ptr<ModelInfo> ModelInfo::load(const std::string &model_path, std::string *error) {
  error->clear();
  const std::string path = existing_file(model_path);
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

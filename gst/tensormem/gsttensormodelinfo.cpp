// SPDX-License-Identifier: Apache-2.0
#include <gst/tensormem/gsttensormodelinfo-private.h>

#include <gst/gst.h>

namespace gst_tensormem {

namespace {

constexpr const char *kSection = "modelinfo";

std::string key_string(GKeyFile *kf, const char *group, const char *key) {
  gchar *value = g_key_file_get_string(kf, group, key, nullptr);
  std::string s = value ? value : "";
  g_free(value);
  return s;
}

/* "0.0,255.0;-1,1": (min, max) per channel; false for another form. */
bool parse_ranges(const std::string &text, std::vector<std::pair<double, double>> *out) {
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

/* The format of a `caps` field ("video/x-raw, format=BGR"); empty where
 * it has none. */
std::string caps_format(const std::string &text) {
  if (text.empty())
    return {};
  GstCaps *caps = gst_caps_from_string(text.c_str());
  std::string format;
  if (caps && gst_caps_get_size(caps) == 1)
    if (const char *f = gst_structure_get_string(gst_caps_get_structure(caps, 0), "format"))
      format = f;
  if (caps)
    gst_caps_unref(caps);
  return format;
}

bool fits(const ModelInfoSection &s, bool output, const std::string &type, const std::vector<std::int64_t> &dims,
          bool need_dims) {
  if (s.type != type || (!s.dir.empty() && s.dir != (output ? "output" : "input")))
    return false;
  if (!s.has_dims)
    return !need_dims;
  if (s.dims.size() != dims.size())
    return false;
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (s.dims[i] >= 0 && s.dims[i] != dims[i])
      return false;
  return true;
}

} // namespace

std::string ModelInfoFile::path_for(const std::string &model_path) {
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

std::unique_ptr<ModelInfoFile> ModelInfoFile::load(const std::string &model_path, std::string *error) {
  error->clear();
  const std::string path = path_for(model_path);
  if (path.empty())
    return nullptr;
  GKeyFile *kf = g_key_file_new();
  g_key_file_set_list_separator(kf, ',');
  std::unique_ptr<ModelInfoFile> file(new ModelInfoFile());
  file->path_ = path;
  GError *gerror = nullptr;
  if (!g_key_file_load_from_file(kf, path.c_str(), G_KEY_FILE_NONE, &gerror)) {
    *error = path + " is not an ini file: " + gerror->message;
    g_error_free(gerror);
  }
  if (error->empty()) {
    const std::string version = key_string(kf, kSection, "version");
    gchar **parts = g_strsplit(version.c_str(), ".", -1);
    const bool one_x =
        g_strv_length(parts) == 2 && g_strcmp0(parts[0], "1") == 0 && parts[1][0] && g_ascii_isdigit(parts[1][0]);
    g_strfreev(parts);
    if (!one_x)
      *error = path + " has " +
               (version.empty() ? std::string("no [modelinfo] version") : "[modelinfo] version " + version) +
               "; the format read here is version 1.x";
    file->group_id_ = key_string(kf, kSection, "group-id");
  }
  gchar **groups = error->empty() ? g_key_file_get_groups(kf, nullptr) : nullptr;
  for (gchar **g = groups; g && *g && error->empty(); ++g) {
    if (g_strcmp0(*g, kSection) == 0)
      continue;
    ModelInfoSection s;
    s.name = *g;
    s.id = key_string(kf, *g, "id");
    s.dir = key_string(kf, *g, "dir");
    s.type = key_string(kf, *g, "type");
    s.col_major = key_string(kf, *g, "dims-order") == "col-major";
    s.has_dims = g_key_file_has_key(kf, *g, "dims", nullptr);
    if (s.has_dims) {
      gsize n = 0;
      gint *dims = g_key_file_get_integer_list(kf, *g, "dims", &n, nullptr);
      if (!dims)
        *error = path + ": [" + s.name + "] dims is not a list of integers";
      for (gsize i = 0; dims && i < n; ++i)
        s.dims.push_back(dims[i]);
      g_free(dims);
    }
    if (!parse_ranges(key_string(kf, *g, "ranges"), &s.ranges))
      *error = path + ": [" + s.name + "] ranges is not min,max pairs separated by ';'";
    s.format = caps_format(key_string(kf, *g, "caps"));
    file->sections_.push_back(std::move(s));
  }
  g_strfreev(groups);
  g_key_file_free(kf);
  if (!error->empty())
    return nullptr;
  return file;
}

const ModelInfoSection *ModelInfoFile::find(bool output, std::size_t index, const std::string &name,
                                            const std::string &type, const std::vector<std::int64_t> &dims) const {
  for (const ModelInfoSection &s : sections_)
    if (s.name == name && fits(s, output, type, dims, false))
      return &s;
  std::size_t seen = 0;
  for (const ModelInfoSection &s : sections_) {
    if (!s.dir.empty() && s.dir != (output ? "output" : "input"))
      continue;
    if (seen++ == index) {
      if (fits(s, output, type, dims, false))
        return &s;
      break;
    }
  }
  for (const ModelInfoSection &s : sections_)
    if (fits(s, output, type, dims, true))
      return &s;
  return nullptr;
}

const ModelInfoSection *ModelInfoFile::first_input() const {
  for (const ModelInfoSection &s : sections_)
    if (s.dir == "input")
      return &s;
  return nullptr;
}

} // namespace gst_tensormem

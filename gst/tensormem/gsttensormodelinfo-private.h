// SPDX-License-Identifier: Apache-2.0
/* A model's `.modelinfo` file, GStreamer 1.28's format (GstAnalyticsModelInfo),
 * read with GLib alone: an ini file beside the model with a [modelinfo]
 * group (version 1.x, group-id) and one group per tensor, named after the
 * tensor, with `dir`, `type` and `dims` to match it and `id`, `dims-order`,
 * `ranges` and (format 1.1) `caps` to describe it. A static library of its
 * own, linked into the plugins that read it (tensorconvert, tensorinfer),
 * so libgsttensormem exports nothing for it. C++ only; not installed. */
#pragma once

#include <glib.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gst_tensormem {

/* One tensor's group. */
struct ModelInfoSection {
  std::string name;                // the group's title: the tensor's name in the model
  std::string id;                  // empty where the file gives none
  std::string dir;                 // "input", "output" or empty
  std::string type;                // "float32", "uint8", ... (GstTensorDataType's names)
  bool has_dims = false;
  std::vector<std::int64_t> dims;  // -1: any
  bool col_major = false;          // dims-order
  std::vector<std::pair<double, double>> ranges; // per channel (min, max), or one for all; empty: none
  std::string format;              // the `caps` field's format ("RGB", "BGR", ...); empty where none
};

class ModelInfoFile {
public:
  /* The file GStreamer 1.28 would read for the model at `model_path`:
   * MODEL.modelinfo, else the model's name without its extension +
   * .modelinfo; empty where neither exists. */
  static std::string path_for(const std::string &model_path);
  /* Reads the file for `model_path`. nullptr with `*error` empty where
   * there is none; nullptr with `*error` naming the file and what is wrong
   * for one that is there but unusable (not an ini file, no [modelinfo]
   * version 1.x, dims or ranges that are not numbers). */
  static std::unique_ptr<ModelInfoFile> load(const std::string &model_path, std::string *error);

  const std::string &path() const { return path_; }
  const std::string &group_id() const { return group_id_; }
  const std::vector<ModelInfoSection> &sections() const { return sections_; }

  /* The section for a model's tensor, by GStreamer 1.28's rules: the one
   * named `name`, else the index-th of direction `output`, else the first
   * whose type and dims fit; each must fit `type`, the direction and, where
   * it gives them, `dims` (-1 on either side: any). nullptr where none does. */
  const ModelInfoSection *find(bool output, std::size_t index, const std::string &name, const std::string &type,
                               const std::vector<std::int64_t> &dims) const;
  /* The first input section; nullptr where there is none. */
  const ModelInfoSection *first_input() const;

private:
  std::string path_, group_id_;
  std::vector<ModelInfoSection> sections_;
};

} // namespace gst_tensormem

// SPDX-License-Identifier: Apache-2.0
/* A model's `.modelinfo` file (GStreamer 1.28's GstAnalyticsModelInfo
 * format): an ini file beside the model with a [modelinfo] group (version
 * 1.x, group-id) and one group per tensor, named after the tensor, with
 * `dir`, `type` and `dims` to match it and `id`, `dims-order` and `ranges`
 * to describe it. Read with GStreamer 1.28's own reader where the analytics
 * library has one, and with the same rules here elsewhere. */
#pragma once

#include "ort_model.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gst_tensorinfer {

/* What the file says of one tensor of the model, as tensorinfer uses it
 * (its input's ranges are tensorconvert model='s). */
struct ModelInfoTensor {
  std::string id; // empty where the file gives none
  bool col_major = false;
};

class ModelInfo {
public:
  /* The file for the model at `model_path`: MODEL.modelinfo, else the
   * model's name without its extension + .modelinfo. nullptr with `*error`
   * empty where there is none; nullptr with `*error` set for a file that is
   * there but cannot be used (not an ini file, no [modelinfo] group, a
   * version other than 1.x). */
  static std::unique_ptr<ModelInfo> load(const std::string &model_path, std::string *error);
  ~ModelInfo();
  ModelInfo(const ModelInfo &) = delete;
  ModelInfo &operator=(const ModelInfo &) = delete;

  const std::string &path() const { return path_; }
  /* [modelinfo] group-id; empty where the file gives none. */
  std::string group_id() const;
  /* The file's entry for `port`, the model's input (`output` false) or its
   * output number `index`: the group named like the tensor, else the
   * index-th group of that direction, else the first whose type and dims
   * fit; each must fit the tensor's type, direction and dims (-1 in the
   * file or the model: any). nullopt where none does. */
  std::optional<ModelInfoTensor> find(bool output, std::size_t index, const Port &port) const;

private:
  struct Impl;
  ModelInfo(std::string path, std::unique_ptr<Impl> impl);
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

} // namespace gst_tensorinfer

// SPDX-License-Identifier: Apache-2.0
/* One ONNX Runtime session and what tensorinfer needs of it: the model's
 * one input and its outputs, the check of a stream's tensor against that
 * input, and runs that read and write caller-owned memory. No GStreamer
 * here. ORT's C++ API throws Ort::Exception; every call into it is caught
 * in ort_model.cpp and comes back as a false return with ORT's text. */
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gst_tensorinfer {

enum class Provider { Cpu, Cuda, Auto };

/* A model input or output: its name, element type and shape (-1 where the
 * model leaves a dimension open). */
struct Port {
  std::string name;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<std::int64_t> shape;
};

/* Bytes per element of `type`; 0 for the types tensorinfer does not carry
 * (strings, 4-bit, complex). */
std::size_t element_size(ONNXTensorElementDataType type);
/* NNStreamer's name of `type` ("float32", "uint8", ...); "undefined" for
 * the others. */
const char *type_name(ONNXTensorElementDataType type);
/* "[1,3,224,224]", with "?" for an open dimension. */
std::string shape_text(const std::vector<std::int64_t> &shape);
/* Elements × element size, 0 on overflow or a dimension below 0. */
std::size_t tensor_bytes(ONNXTensorElementDataType type, const std::vector<std::int64_t> &shape);

class Model {
public:
  /* Loads `path` into a session on `provider` with `threads` intra-op
   * threads (0: ORT's default). nullptr with `*error` set when the file is
   * missing, ORT refuses it, the provider is not in this runtime, or the
   * model has other than one tensor input or a non-tensor output. `*note`
   * says which provider `auto` chose. */
  static std::unique_ptr<Model> load(const std::string &path, Provider provider, int threads, std::string *error,
                                     std::string *note);

  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  const Port &input() const { return input_; }
  const std::vector<Port> &outputs() const { return outputs_; }
  bool on_cpu() const { return on_cpu_; }

  /* Whether a tensor of `type` and `shape` fits the input: same element
   * type, same rank, every fixed dimension equal (open ones take the
   * stream's). False with `*why` naming the mismatch. */
  bool accepts(ONNXTensorElementDataType type, const std::vector<std::int64_t> &shape, std::string *why) const;

  /* The output shapes for an input of `shape`: one run over zeros, since
   * the model may leave output dimensions open. False with ORT's text. */
  bool output_shapes(const std::vector<std::int64_t> &shape, std::vector<std::vector<std::int64_t>> *shapes,
                     std::string *error);

  /* One run reading `input` (the input's type, `shape`) in place and
   * writing output i into `outputs[i]` (`output_shapes[i]`) in place. */
  bool run(const void *input, const std::vector<std::int64_t> &shape, const std::vector<void *> &outputs,
           const std::vector<std::vector<std::int64_t>> &output_shapes, std::string *error);

private:
  Model() = default;
  bool run_values(const Ort::Value &input, std::vector<Ort::Value> *outputs, std::string *error);

  Ort::Env env_{nullptr};
  Ort::Session session_{nullptr};
  Ort::MemoryInfo cpu_memory_{nullptr};
  Port input_;
  std::vector<Port> outputs_;
  std::vector<const char *> output_names_;
  bool on_cpu_ = true;
};

} // namespace gst_tensorinfer

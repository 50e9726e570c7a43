// SPDX-License-Identifier: Apache-2.0
/* One ONNX Runtime session and what tensorinfer needs of it: the model's
 * one input and its outputs, the check of a stream's tensor against that
 * input, and runs that read and write caller-owned memory. No GStreamer
 * here. ORT's C++ API throws Ort::Exception; every call into it is caught
 * in ort_model.cpp and comes back as a false return with ORT's text. */
#pragma once

#include "ort_runtime.hpp"

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

/* NNStreamer's name of `type` ("float32", "uint8", ...); "undefined" for
 * the others. */
const char *type_name(ONNXTensorElementDataType type);
/* "[1,3,224,224]", with "?" for an open dimension. */
std::string shape_text(const std::vector<std::int64_t> &shape);
/* Elements × element size, 0 on overflow or a dimension below 0. */
std::size_t tensor_bytes(ONNXTensorElementDataType type, const std::vector<std::int64_t> &shape);
/* The bytes a tensor of `port` needs at least, whatever its open
 * dimensions (taken as 1) become; SIZE_MAX when that overflows. */
std::size_t declared_min_bytes(const Port &port);

/* "1.21.0 (API 21) from libonnxruntime.so.1; providers: CPUExecutionProvider, ...",
 * opening the runtime if no model has yet; empty with `*error` set where
 * there is none. */
std::string runtime_description(std::string *error);

class Model {
public:
  /* Loads `path` into a session on `provider` with `threads` intra-op
   * threads (0: ORT's default). nullptr with `*error` set when the file is
   * missing, ORT refuses it, the provider is not in this runtime, or the
   * model has other than one tensor input or a non-tensor output. `*note`
   * says which provider `auto` chose. */
  static std::unique_ptr<Model> load(const std::string &path, Provider provider, int threads, bool spin, std::string *error,
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
   * the model may leave output dimensions open. An output whose size depends
   * on the data (NonZero, in-graph NMS) comes out at the zero run's size,
   * perhaps empty: run() finds out frame by frame. False with ORT's text. */
  bool output_shapes(const std::vector<std::int64_t> &shape, std::vector<std::vector<std::int64_t>> *shapes,
                     std::string *error);

  /* Where one output of run() goes, and what came of it. */
  struct Slot {
    /* In: a caller buffer of `shape` for ORT to write in place, or nullptr
     * for ORT to allocate the output itself. */
    void *data = nullptr;
    std::vector<std::int64_t> shape;
    /* Out: the output's real shape, its bytes and their size. `value` is
     * ORT's own tensor wherever the output is not in `data`: ORT allocated
     * it, or handed back memory it already had (an output that is the
     * model's input, or a constant) without writing `data`. */
    std::vector<std::int64_t> real_shape;
    const void *bytes = nullptr;
    std::size_t size = 0;
    Ort::Value value{nullptr};
    bool in_place() const { return data && bytes == data; }
  };

  /* One run reading `input` (the input's type, `shape`) in place. Output i
   * goes into `(*slots)[i]`; where a caller buffer's shape is not the one
   * ORT computes (an output of data-dependent size), the run is made once
   * more with ORT allocating every output, and `*reran` says so. False with
   * ORT's text. */
  bool run(const void *input, const std::vector<std::int64_t> &shape, std::vector<Slot> *slots, bool *reran,
           std::string *error);

private:
  Model() = default;
  bool run_values(const Ort::Value &input, std::vector<Ort::Value> *outputs, std::string *error);
  bool read_slots(std::vector<Slot> *slots, std::string *error) const;

  Ort::Env env_{nullptr};
  Ort::Session session_{nullptr};
  Ort::MemoryInfo cpu_memory_{nullptr};
  Port input_;
  std::vector<Port> outputs_;
  std::vector<const char *> output_names_;
  bool on_cpu_ = true;
};

} // namespace gst_tensorinfer

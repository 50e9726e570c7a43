// SPDX-License-Identifier: Apache-2.0
#include "ort_model.hpp"

#include <algorithm>
#include <exception>
#include <limits>
#include <sys/stat.h>

/* The runtime the project's scripts install where the system has none
 * (scripts/deps.sh --demo), set by meson; empty: none. */
#ifndef GST_TENSORINFER_BUNDLED_ORT
#define GST_TENSORINFER_BUNDLED_ORT ""
#endif

namespace gst_tensorinfer {

namespace {

constexpr const char *kCudaProvider = "CUDAExecutionProvider";

bool has_provider(const char *name) {
  const std::vector<std::string> providers = Ort::GetAvailableProviders();
  return std::find(providers.begin(), providers.end(), name) != providers.end();
}

std::string provider_list() {
  std::string list;
  for (const std::string &p : Ort::GetAvailableProviders())
    list += (list.empty() ? "" : ", ") + p;
  return list;
}

/* The port from a session's type info; false for a sequence, map or
 * optional, which tensorinfer cannot feed or hand on. */
bool port_of(const Ort::TypeInfo &info, std::string name, Port *port) {
  if (info.GetONNXType() != ONNX_TYPE_TENSOR)
    return false;
  const auto tensor = info.GetTensorTypeAndShapeInfo();
  port->name = std::move(name);
  port->type = tensor.GetElementType();
  port->shape = tensor.GetShape();
  return true;
}

} // namespace

const char *type_name(ONNXTensorElementDataType type) {
  switch (type) {
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return "int8";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return "uint8";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return "bool";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16: return "int16";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: return "uint16";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return "float16";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return "bfloat16";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return "int32";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32: return "uint32";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return "float32";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return "int64";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64: return "uint64";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return "float64";
  default: return "undefined";
  }
}

std::string shape_text(const std::vector<std::int64_t> &shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    // Piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false positive) on "," + std::string&&.
    text += i ? "," : "";
    text += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return text + "]";
}

std::size_t tensor_bytes(ONNXTensorElementDataType type, const std::vector<std::int64_t> &shape) {
  std::size_t bytes = element_size(type);
  for (std::int64_t d : shape) {
    if (d < 0 || (d > 0 && bytes > std::numeric_limits<std::size_t>::max() / static_cast<std::size_t>(d)))
      return 0;
    bytes *= static_cast<std::size_t>(d);
  }
  return bytes;
}

std::string runtime_description(std::string *error) {
  const Runtime *runtime = load_runtime(GST_TENSORINFER_BUNDLED_ORT, error);
  if (!runtime)
    return {};
  try {
    return runtime->version + " (API " + std::to_string(runtime->api) + ") from " + runtime->path +
           "; providers: " + provider_list();
  } catch (const Ort::Exception &e) {
    *error = e.what();
    return {};
  }
}

std::size_t declared_min_bytes(const Port &port) {
  std::size_t bytes = element_size(port.type);
  for (std::int64_t d : port.shape) {
    if (d <= 0)
      continue; // open: at least 1 (0 would make the tensor empty, not large)
    if (bytes > std::numeric_limits<std::size_t>::max() / static_cast<std::size_t>(d))
      return std::numeric_limits<std::size_t>::max();
    bytes *= static_cast<std::size_t>(d);
  }
  return bytes;
}

std::unique_ptr<Model> Model::load(const std::string &path, Provider provider, int threads, bool spin, std::string *error,
                                   std::string *note) {
  // ORT's own message for a missing file is a generic load failure; say it plainly.
  struct stat st;
  if (path.empty()) {
    *error = "no model: set the model property to an .onnx file";
    return nullptr;
  }
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *error = "model file '" + path + "' does not exist or is not a regular file";
    return nullptr;
  }
  const Runtime *runtime = load_runtime(GST_TENSORINFER_BUNDLED_ORT, error);
  if (!runtime)
    return nullptr;
  std::unique_ptr<Model> model(new Model());
  try {
    bool cuda = false;
    if (provider == Provider::Cuda) {
      if (!has_provider(kCudaProvider)) {
        *error = "execution-provider=cuda: this ONNX Runtime (" + runtime->version +
                 ") has no CUDA execution provider; it has " + provider_list();
        return nullptr;
      }
      cuda = true;
    } else if (provider == Provider::Auto) {
      cuda = has_provider(kCudaProvider);
      *note = cuda ? "execution-provider=auto: using CUDAExecutionProvider"
                   : "execution-provider=auto: this ONNX Runtime has no CUDA execution provider (it has " +
                         provider_list() + "); using the CPU";
    }
    model->env_ = Ort::Env(ORT_LOGGING_LEVEL_WARNING, "tensorinfer");
    Ort::SessionOptions options;
    if (threads > 0)
      options.SetIntraOpNumThreads(threads);
    if (!spin)
      options.AddConfigEntry("session.intra_op.allow_spinning", "0");
    if (cuda) {
      /* A runtime may list the CUDA provider and still fail to load it
       * (npm's linux x64 build lists it; its library and CUDA's are not
       * there): cuda says so, auto goes on on the CPU. */
      try {
        OrtCUDAProviderOptions cuda_options;
        options.AppendExecutionProvider_CUDA(cuda_options);
      } catch (const Ort::Exception &e) {
        const std::string why = std::string("this ONNX Runtime (") + runtime->version +
                                ") has no CUDA execution provider it can load (" + e.what() + ")";
        if (provider == Provider::Cuda) {
          *error = "execution-provider=cuda: " + why;
          return nullptr;
        }
        cuda = false;
        *note = "execution-provider=auto: " + why + "; using the CPU";
      }
    }
    model->on_cpu_ = !cuda;
    model->session_ = Ort::Session(model->env_, path.c_str(), options);
    model->cpu_memory_ = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);

    Ort::AllocatorWithDefaultOptions allocator;
    const std::size_t n_inputs = model->session_.GetInputCount();
    if (n_inputs != 1) {
      *error = "model '" + path + "' has " + std::to_string(n_inputs) + " inputs; tensorinfer feeds exactly one";
      return nullptr;
    }
    if (!port_of(model->session_.GetInputTypeInfo(0), model->session_.GetInputNameAllocated(0, allocator).get(),
                 &model->input_) ||
        element_size(model->input_.type) == 0) {
      *error = "model '" + path + "': its input is not a tensor of a numeric type tensorinfer carries";
      return nullptr;
    }
    const std::size_t n_outputs = model->session_.GetOutputCount();
    for (std::size_t i = 0; i < n_outputs; ++i) {
      Port port;
      std::string name = model->session_.GetOutputNameAllocated(i, allocator).get();
      if (!port_of(model->session_.GetOutputTypeInfo(i), name, &port) || element_size(port.type) == 0) {
        *error = "model '" + path + "': output '" + name + "' is not a tensor of a numeric type tensorinfer carries";
        return nullptr;
      }
      model->outputs_.push_back(std::move(port));
    }
    if (model->outputs_.empty()) {
      *error = "model '" + path + "' has no outputs";
      return nullptr;
    }
    for (const Port &port : model->outputs_)
      model->output_names_.push_back(port.name.c_str());
  } catch (const Ort::Exception &e) {
    *error = "ONNX Runtime refused model '" + path + "': " + e.what();
    return nullptr;
  } catch (const std::exception &e) {
    *error = "loading model '" + path + "' failed: " + e.what();
    return nullptr;
  }
  return model;
}

bool Model::accepts(ONNXTensorElementDataType type, const std::vector<std::int64_t> &shape, std::string *why) const {
  const std::string wants = "model input '" + input_.name + "' takes " + type_name(input_.type) + " " +
                            shape_text(input_.shape) + "; the stream's tensor is " + type_name(type) + " " +
                            shape_text(shape);
  if (type != input_.type) {
    *why = wants + " (element type differs)";
    return false;
  }
  if (shape.size() != input_.shape.size()) {
    *why = wants + " (" + std::to_string(input_.shape.size()) + " dimensions wanted, " + std::to_string(shape.size()) +
           " given)";
    return false;
  }
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (input_.shape[i] >= 0 && input_.shape[i] != shape[i]) {
      *why = wants + " (dimension " + std::to_string(i) + " differs)";
      return false;
    }
  }
  return true;
}

bool Model::run_values(const Ort::Value &input, std::vector<Ort::Value> *outputs, std::string *error) {
  const char *input_name = input_.name.c_str();
  try {
    if (outputs->empty()) {
      *outputs =
          session_.Run(Ort::RunOptions{nullptr}, &input_name, &input, 1, output_names_.data(), output_names_.size());
    } else {
      session_.Run(Ort::RunOptions{nullptr}, &input_name, &input, 1, output_names_.data(), outputs->data(),
                   outputs->size());
    }
  } catch (const Ort::Exception &e) {
    *error = e.what();
    return false;
  }
  return true;
}

bool Model::output_shapes(const std::vector<std::int64_t> &shape, std::vector<std::vector<std::int64_t>> *shapes,
                          std::string *error) {
  const std::size_t bytes = tensor_bytes(input_.type, shape);
  if (bytes == 0) {
    *error = "the input shape " + shape_text(shape) + " is empty or too large";
    return false;
  }
  // Zeros: a probe whose values nobody reads, but a model must not see uninitialised bytes.
  std::vector<unsigned char> zeros(bytes);
  std::vector<Ort::Value> results;
  try {
    Ort::Value input =
        Ort::Value::CreateTensor(cpu_memory_, zeros.data(), zeros.size(), shape.data(), shape.size(), input_.type);
    if (!run_values(input, &results, error))
      return false;
    shapes->clear();
    for (std::size_t i = 0; i < results.size(); ++i) {
      auto info = results[i].GetTensorTypeAndShapeInfo();
      if (info.GetElementType() != outputs_[i].type) {
        *error = "output '" + outputs_[i].name + "' came out as " + type_name(info.GetElementType()) +
                 ", the model declares " + type_name(outputs_[i].type);
        return false;
      }
      shapes->push_back(info.GetShape());
    }
  } catch (const Ort::Exception &e) {
    *error = e.what();
    return false;
  }
  return true;
}

bool Model::read_slots(std::vector<Slot> *slots, std::string *error) const {
  for (std::size_t i = 0; i < slots->size(); ++i) {
    Slot &slot = (*slots)[i];
    const auto info = slot.value.GetTensorTypeAndShapeInfo();
    if (info.GetElementType() != outputs_[i].type) {
      *error = "output '" + outputs_[i].name + "' came out as " + type_name(info.GetElementType()) +
               ", the model declares " + type_name(outputs_[i].type);
      return false;
    }
    slot.real_shape = info.GetShape();
    std::size_t elements = 1;
    for (std::int64_t d : slot.real_shape)
      elements *= static_cast<std::size_t>(d);
    slot.size = elements * element_size(outputs_[i].type);
    // An empty tensor may have no data at all.
    slot.bytes = slot.size ? slot.value.GetTensorRawData() : slot.data;
    if (slot.in_place())
      slot.value = Ort::Value{nullptr}; // only our wrapper of the caller's buffer
  }
  return true;
}

bool Model::run(const void *input, const std::vector<std::int64_t> &shape, std::vector<Slot> *slots, bool *reran,
                std::string *error) {
  *reran = false;
  try {
    // ORT reads an input tensor and never writes it: the const_cast only
    // meets CreateTensor's signature.
    Ort::Value in = Ort::Value::CreateTensor(cpu_memory_, const_cast<void *>(input), tensor_bytes(input_.type, shape),
                                             shape.data(), shape.size(), input_.type);
    std::vector<Ort::Value> out;
    out.reserve(slots->size());
    bool any_in_place = false;
    for (std::size_t i = 0; i < slots->size(); ++i) {
      Slot &slot = (*slots)[i];
      if (slot.data) {
        any_in_place = true;
        out.push_back(Ort::Value::CreateTensor(cpu_memory_, slot.data, tensor_bytes(outputs_[i].type, slot.shape),
                                               slot.shape.data(), slot.shape.size(), outputs_[i].type));
      } else {
        out.emplace_back(nullptr); // ORT allocates it
      }
    }
    if (!run_values(in, &out, error)) {
      /* ORT refuses a caller buffer whose shape is not the output's ("shape
       * verification failed"): an output of data-dependent size. Once more
       * with every output ORT's own; a failure then is the model's. */
      if (!any_in_place)
        return false;
      std::vector<Ort::Value> fresh;
      for (std::size_t i = 0; i < slots->size(); ++i)
        fresh.emplace_back(nullptr);
      std::string second;
      if (!run_values(in, &fresh, &second)) {
        *error = second;
        return false;
      }
      error->clear();
      out = std::move(fresh);
      *reran = true;
      for (Slot &slot : *slots)
        slot.data = nullptr;
    }
    for (std::size_t i = 0; i < slots->size(); ++i)
      (*slots)[i].value = std::move(out[i]);
    return read_slots(slots, error);
  } catch (const Ort::Exception &e) {
    *error = e.what();
    return false;
  }
}

} // namespace gst_tensorinfer

// SPDX-License-Identifier: Apache-2.0
/* The reference tensorinfer's outputs are compared with: a model run
 * through ONNX Runtime's own C++ API (a session, one Run), never through
 * the element or its Model class, on the very ONNX Runtime library the
 * element opens (the same search: TENSORMEM_ONNXRUNTIME, the system's, the
 * build's own), so a difference is the element's and never two runtimes'.
 *
 *   infer-reference MODEL INPUT float32 DIMS OUTDIR
 *
 * reads INPUT's raw float32 bytes as a tensor of DIMS (such as 1,3,16,16),
 * runs MODEL on the CPU and writes each output's raw bytes to
 * OUTDIR/NAME.bin and its shape to OUTDIR/NAME.shape ("1,2"). Exits 77
 * (skip) with the reason where no ONNX Runtime opens, 1 on any failure. */
#include "ort_runtime.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#ifndef GST_TENSORINFER_BUNDLED_ORT
#define GST_TENSORINFER_BUNDLED_ORT ""
#endif

namespace {

int run(const std::string &model, const std::string &input, const std::string &dims_text,
        const std::filesystem::path &outdir) {
  std::vector<std::int64_t> dims;
  std::stringstream list(dims_text);
  std::size_t count = 1;
  for (std::string d; std::getline(list, d, ',');) {
    dims.push_back(std::stoll(d));
    count *= static_cast<std::size_t>(dims.back());
  }
  std::ifstream file(input, std::ios::binary);
  std::vector<char> bytes{std::istreambuf_iterator<char>(file), {}};
  if (bytes.size() != count * sizeof(float)) {
    std::fprintf(stderr, "%s holds %zu bytes; float32 %s needs %zu\n", input.c_str(), bytes.size(), dims_text.c_str(),
                 count * sizeof(float));
    return 1;
  }
  Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "infer-reference");
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(1);
  Ort::Session session(env, model.c_str(), options);
  Ort::AllocatorWithDefaultOptions allocator;
  const Ort::AllocatedStringPtr input_name = session.GetInputNameAllocated(0, allocator);
  std::vector<Ort::AllocatedStringPtr> output_names;
  std::vector<const char *> outputs;
  for (std::size_t i = 0; i < session.GetOutputCount(); ++i) {
    output_names.push_back(session.GetOutputNameAllocated(i, allocator));
    outputs.push_back(output_names.back().get());
  }
  const Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  const Ort::Value tensor = Ort::Value::CreateTensor<float>(cpu, reinterpret_cast<float *>(bytes.data()), count,
                                                            dims.data(), dims.size());
  const char *inputs[] = {input_name.get()};
  std::vector<Ort::Value> results =
      session.Run(Ort::RunOptions{nullptr}, inputs, &tensor, 1, outputs.data(), outputs.size());
  std::filesystem::create_directories(outdir);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Ort::TensorTypeAndShapeInfo info = results[i].GetTensorTypeAndShapeInfo();
    const std::vector<std::int64_t> shape = info.GetShape();
    const std::size_t size = info.GetElementCount() * gst_tensorinfer::element_size(info.GetElementType());
    std::ofstream data(outdir / (std::string(outputs[i]) + ".bin"), std::ios::binary);
    data.write(static_cast<const char *>(results[i].GetTensorRawData()), static_cast<std::streamsize>(size));
    std::ofstream text(outdir / (std::string(outputs[i]) + ".shape"));
    for (std::size_t d = 0; d < shape.size(); ++d)
      text << (d ? "," : "") << shape[d];
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 6 || std::string(argv[3]) != "float32") {
    std::fprintf(stderr, "usage: %s MODEL INPUT float32 DIMS OUTDIR\n", argv[0]);
    return 2;
  }
  std::string error;
  const gst_tensorinfer::Runtime *runtime = gst_tensorinfer::load_runtime(GST_TENSORINFER_BUNDLED_ORT, &error);
  if (!runtime) {
    std::printf("%s\n", error.c_str());
    return 77;
  }
  try {
    return run(argv[1], argv[2], argv[4], argv[5]);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ONNX Runtime %s: %s\n", runtime->version.c_str(), e.what());
    return 1;
  }
}

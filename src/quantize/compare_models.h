// fp32 and int8 twins side by side: the same inputs through both, output agreement per
// output (max / mean absolute error, cosine similarity, top-1 agreement of classifier
// outputs) and the latency of each at a given thread count, runs alternating.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "onnxkit/quantize.h"

namespace onnxkit::quant {

struct CompareOptions {
  // Inputs: the source's samples, else `samples` generated ones (`dims`, `seed`).
  CalibrationSource source;
  size_t samples = 4;
  std::map<std::string, int64_t> dims;
  uint64_t seed = 1000;
  int threads = 1;
  int timed_runs = 10;  // per model, alternating; 0: no timing
};

struct OutputAgreement {
  std::string name;
  double max_abs_error = 0;
  double mean_abs_error = 0;
  double cosine = 1;
  // Rows whose argmax over the last axis agree, for class-score outputs: [batch, classes]
  // (rows = the inputs' leading dim, classes >= 2) made by Gemm, MatMul, Add or (Log)Softmax
  // (through reshapes); -1 otherwise (a feature vector such as BERT's pooler output).
  double top1_agreement = -1;
  int64_t rows = 0;
  // |reference - candidate| of up to kErrorSampleSize elements, spread evenly over the
  // output's elements from the first input sample on while there is room (all of them when
  // fewer): what the report's error histogram shows.
  std::vector<double> error_sample;
};

inline constexpr size_t kErrorSampleSize = 20000;

struct ModelComparison {
  std::vector<OutputAgreement> outputs;
  size_t samples = 0;
  double reference_ms = 0;  // median latency of the first model
  double candidate_ms = 0;
  std::vector<double> reference_runs_ms;  // each timed run, in order
  std::vector<double> candidate_runs_ms;
};

// Runs `reference` and `candidate` (same inputs and outputs by name) on the same inputs.
ModelComparison compare_models(const std::filesystem::path& reference,
                               const std::filesystem::path& candidate,
                               const CompareOptions& options);

}  // namespace onnxkit::quant

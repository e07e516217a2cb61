// The page of `onnxkit quantize --compare --report` and `onnxkit compare --report`: the fp32
// and int8 twins side by side — per output, the agreement table and a histogram of the
// absolute errors; file sizes and latencies as bars, each timed run of both in order; and, from
// quantize, what was quantized and how long each step took.
#pragma once

#include <cstdint>
#include <string>

#include "onnxkit/quantize.h"
#include "quantize/compare_models.h"

namespace onnxkit::report {

struct QuantizePageInput {
  std::string reference_path;    // the float model
  std::string candidate_path;    // the int8 model
  uint64_t reference_bytes = 0;  // on disk, external data included
  uint64_t candidate_bytes = 0;
  int threads = 1;  // of the timed runs
  const quant::ModelComparison* comparison = nullptr;
  const QuantizeReport* quantize_report = nullptr;  // null for `onnxkit compare`
};

std::string render_quantize_page(const QuantizePageInput& input);

}  // namespace onnxkit::report

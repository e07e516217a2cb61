#include "quantize/compare_models.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "core/status.h"
#include "ir/graph.h"
#include "ir/model.h"
#include "onnxkit/model_io.h"
#include "onnxkit/session.h"
#include "onnxkit/simplify.h"

namespace onnxkit::quant {
namespace {

struct Accumulator {
  double max_abs = 0, sum_abs = 0, dot = 0, norm_a = 0, norm_b = 0;
  int64_t count = 0, rows = 0, agree = 0;
  bool classifier = true;
  std::vector<double> error_sample;
};

// Outputs whose values are class scores: made by a linear layer (Gemm, MatMul, its bias
// Add) or a (Log)Softmax, seen through reshapes. A feature vector of the same shape (BERT's
// pooler output, a Tanh) has no meaningful argmax.
std::set<std::string> score_outputs(const Model& model) {
  static const std::set<std::string> scorers = {"Gemm", "MatMul", "Add", "Softmax", "LogSoftmax"};
  static const std::set<std::string> reshapes = {"Identity", "Reshape", "Flatten", "Squeeze"};
  std::set<std::string> names;
  for (const Value* output : model.graph().outputs()) {
    const Node* node = output->producer();
    while (node && reshapes.count(node->op_type()) && node->input(0)) {
      node = node->input(0)->producer();
    }
    if (node && node->domain().empty() && scorers.count(node->op_type())) {
      names.insert(output->name());
    }
  }
  return names;
}

// The leading dim of the sample's inputs (the batch), or -1 when they disagree or have none.
int64_t batch_of(const NamedValues& inputs) {
  int64_t batch = -1;
  for (const auto& [name, value] : inputs) {
    if (!value.is_tensor() || value.tensor().rank() == 0) return -1;
    const int64_t first = value.tensor().shape()[0];
    if (batch >= 0 && first != batch) return -1;
    batch = first;
  }
  return batch;
}

// `scores`: the output holds class scores (score_outputs) for a batch of `batch` rows.
void accumulate(Accumulator& acc, const Tensor& reference, const Tensor& candidate,
                const std::string& name, bool scores, int64_t batch) {
  if (reference.dtype() != DType::kFloat || candidate.dtype() != DType::kFloat) {
    fail("compare: output '{}' is not float in both models ({} and {})", name,
         dtype_name(reference.dtype()), dtype_name(candidate.dtype()));
  }
  if (reference.shape() != candidate.shape()) {
    fail("compare: output '{}' has shape {} in one model and {} in the other", name,
         shape_to_string(reference.shape()), shape_to_string(candidate.shape()));
  }
  const float* a = reference.data<float>();
  const float* b = candidate.data<float>();
  // The error sample takes evenly spread elements while it has room.
  const size_t room = kErrorSampleSize - std::min(kErrorSampleSize, acc.error_sample.size());
  const int64_t stride =
      std::max<int64_t>(1, reference.numel() / std::max<int64_t>(1, static_cast<int64_t>(room)));
  for (int64_t i = 0; i < reference.numel(); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (i % stride == 0 && acc.error_sample.size() < kErrorSampleSize) {
      acc.error_sample.push_back(d);
    }
    acc.max_abs = std::max(acc.max_abs, d);
    acc.sum_abs += d;
    acc.dot += double(a[i]) * b[i];
    acc.norm_a += double(a[i]) * a[i];
    acc.norm_b += double(b[i]) * b[i];
  }
  acc.count += reference.numel();
  const Shape& shape = reference.shape();
  acc.classifier =
      acc.classifier && scores && shape.size() == 2 && shape[0] == batch && shape[1] >= 2;
  if (!acc.classifier) return;
  const int64_t classes = shape[1];
  for (int64_t r = 0; r < shape[0]; ++r) {
    const float* ra = a + r * classes;
    const float* rb = b + r * classes;
    acc.agree +=
        (std::max_element(ra, ra + classes) - ra) == (std::max_element(rb, rb + classes) - rb);
    ++acc.rows;
  }
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

ModelComparison compare_models(const std::filesystem::path& reference,
                               const std::filesystem::path& candidate,
                               const CompareOptions& options) {
  auto reference_model = load_model(reference);
  if (!reference_model) fail("{}", reference_model.error());
  SessionOptions session_options;
  session_options.intra_op_threads = options.threads;
  std::vector<NamedValues> samples;
  for (size_t i = 0; i < options.samples; ++i) {
    if (options.source) {
      auto sample = options.source(i);
      if (!sample) break;
      samples.push_back(std::move(sample->inputs));
    } else {
      samples.push_back(
          make_check_inputs(reference_model.value(), options.dims, {}, options.seed + i));
    }
  }
  if (samples.empty()) fail("compare: no input sample");
  const std::set<std::string> scores = score_outputs(reference_model.value());
  auto a = Session::create(std::move(reference_model).value(), session_options);
  if (!a) fail("{}: {}", reference.string(), a.error());
  auto b = Session::load(candidate, session_options);
  if (!b) fail("{}", b.error());

  std::map<std::string, Accumulator> accumulators;
  std::vector<std::string> order;
  for (const NamedValues& inputs : samples) {
    const int64_t batch = batch_of(inputs);
    auto ra = a.value()->run(inputs);
    if (!ra) fail("{}: {}", reference.string(), ra.error());
    auto rb = b.value()->run(inputs);
    if (!rb) fail("{}: {}", candidate.string(), rb.error());
    for (const auto& [name, value] : ra.value()) {
      auto it = std::find_if(rb.value().begin(), rb.value().end(),
                             [&](const auto& entry) { return entry.first == name; });
      if (it == rb.value().end()) fail("compare: {} has no output '{}'", candidate.string(), name);
      if (!value.is_tensor() || !it->second.is_tensor()) continue;
      if (!accumulators.count(name)) order.push_back(name);
      accumulate(accumulators[name], value.tensor(), it->second.tensor(), name,
                 scores.count(name) > 0, batch);
    }
  }
  ModelComparison result;
  result.samples = samples.size();
  for (const std::string& name : order) {
    const Accumulator& acc = accumulators[name];
    OutputAgreement out;
    out.name = name;
    out.max_abs_error = acc.max_abs;
    out.mean_abs_error = acc.count ? acc.sum_abs / static_cast<double>(acc.count) : 0;
    const double norms = std::sqrt(acc.norm_a) * std::sqrt(acc.norm_b);
    out.cosine = norms > 0 ? acc.dot / norms : (acc.norm_a == acc.norm_b ? 1.0 : 0.0);
    if (acc.classifier && acc.rows > 0) {
      out.top1_agreement = static_cast<double>(acc.agree) / static_cast<double>(acc.rows);
      out.rows = acc.rows;
    }
    out.error_sample = acc.error_sample;
    result.outputs.push_back(out);
  }
  if (options.timed_runs > 0) {
    // One warm-up each, then alternating runs, so that a busy machine slows both alike.
    using Clock = std::chrono::steady_clock;
    const NamedValues& inputs = samples.front();
    (void)a.value()->run(inputs);
    (void)b.value()->run(inputs);
    std::vector<double> ta, tb;
    for (int i = 0; i < options.timed_runs; ++i) {
      auto t0 = Clock::now();
      (void)a.value()->run(inputs);
      auto t1 = Clock::now();
      (void)b.value()->run(inputs);
      auto t2 = Clock::now();
      ta.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      tb.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    }
    result.reference_ms = median(ta);
    result.candidate_ms = median(tb);
    result.reference_runs_ms = std::move(ta);
    result.candidate_runs_ms = std::move(tb);
  }
  return result;
}

}  // namespace onnxkit::quant

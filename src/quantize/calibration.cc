#include "quantize/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "core/status.h"
#include "ir/graph_clone.h"
#include "onnxkit/session.h"
#include "onnxkit/simplify.h"

namespace onnxkit::quant {
namespace {

// Counts `data` (|x| when `absolute`) into histogram's bins, dropping values outside them.
void count_into(Histogram& histogram, const float* data, size_t count, bool absolute) {
  const size_t n = histogram.counts.size();
  const double lo = histogram.lo, hi = histogram.hi();
  const double per_width = 1.0 / histogram.width;
  for (size_t i = 0; i < count; ++i) {
    double x = data[i];
    if (std::isnan(x)) continue;
    if (absolute) x = std::fabs(x);
    if (x < lo || x > hi) continue;
    size_t bin = static_cast<size_t>((x - lo) * per_width);
    if (bin >= n) bin = n - 1;
    ++histogram.counts[bin];
  }
}

// numpy.histogram(data, bins, range=(lo, hi)), with numpy's widening of an empty range.
Histogram make_histogram(double lo, double hi, size_t bins) {
  if (hi <= lo) {
    lo -= 0.5;
    hi += 0.5;
  }
  Histogram histogram;
  histogram.lo = lo;
  histogram.width = (hi - lo) / static_cast<double>(bins);
  histogram.counts.assign(bins, 0);
  return histogram;
}

// scipy.stats.entropy(p, q): KL divergence of the normalized distributions.
double kl_divergence(const std::vector<double>& p, const std::vector<double>& q) {
  const double sp = std::accumulate(p.begin(), p.end(), 0.0);
  const double sq = std::accumulate(q.begin(), q.end(), 0.0);
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double pi = p[i] / sp, qi = q[i] / sq;
    if (pi > 0) sum += pi * std::log(pi / qi);
  }
  return sum;
}

// quant_utils.smooth_distribution: zeros become eps, taken off the non-zero entries.
bool smooth(std::vector<double>& p, double eps = 0.0001) {
  size_t zeros = 0;
  for (double v : p) zeros += v == 0;
  const size_t nonzeros = p.size() - zeros;
  if (nonzeros == 0) return false;
  const double eps1 = eps * static_cast<double>(zeros) / static_cast<double>(nonzeros);
  for (double& v : p) v = v == 0 ? eps : v - eps1;
  return true;
}

void check_sample(const std::vector<ValueInfo>& inputs, const CalibrationSample& sample) {
  std::set<std::string> given;
  auto names = [&] {
    std::string text;
    for (const auto& input : inputs) text += (text.empty() ? "" : ", ") + input.name;
    return text;
  };
  for (const auto& [name, value] : sample.inputs) {
    auto it = std::find_if(inputs.begin(), inputs.end(),
                           [&](const ValueInfo& info) { return info.name == name; });
    if (it == inputs.end()) {
      fail("calibration sample {}: '{}' is not an input of the model (inputs: {})", sample.label,
           name, names());
    }
    given.insert(name);
    if (!value.is_tensor() || !it->is_tensor) continue;
    const Tensor& tensor = value.tensor();
    if (it->dtype != DType::kUndefined && tensor.dtype() != it->dtype) {
      fail("calibration sample {}: input '{}' is {}, the model takes {}", sample.label, name,
           dtype_name(tensor.dtype()), it->type);
    }
    if (!it->shape) continue;
    bool fits = it->shape->size() == tensor.rank();
    for (size_t d = 0; fits && d < tensor.rank(); ++d) {
      const Dim& dim = (*it->shape)[d];
      fits = !dim.is_known() || dim.value == tensor.shape()[d];
    }
    if (!fits) {
      fail("calibration sample {}: input '{}' has shape {}, the model takes {}", sample.label, name,
           shape_to_string(tensor.shape()), it->type);
    }
  }
  for (const auto& input : inputs) {
    if (!given.count(input.name)) {
      fail("calibration sample {}: input '{}' is missing (the model takes {})", sample.label,
           input.name, names());
    }
  }
}

}  // namespace

RangeCollector::RangeCollector(CalibrationMethod method, int bins, int entropy_quantized_bins,
                               double percentile)
    : method_(method),
      bins_(bins > 0 ? bins : (method == CalibrationMethod::kEntropy ? 128 : 2048)),
      entropy_quantized_bins_(entropy_quantized_bins),
      percentile_(percentile) {}

void RangeCollector::add(const float* data, size_t count) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  float alo = lo, ahi = 0;
  for (size_t i = 0; i < count; ++i) {
    const float x = data[i];
    if (std::isnan(x)) continue;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    alo = std::min(alo, std::fabs(x));
    ahi = std::max(ahi, std::fabs(x));
  }
  if (lo > hi) lo = hi = alo = ahi = 0;  // empty or all NaN: numpy's 0 range
  min_ = seen_ ? std::min(min_, lo) : lo;
  max_ = seen_ ? std::max(max_, hi) : hi;
  if (method_ == CalibrationMethod::kPercentile) {
    add_absolute(data, count, alo, ahi);
  } else if (method_ == CalibrationMethod::kEntropy) {
    add_values(data, count, std::max(std::fabs(lo), std::fabs(hi)));
  }
  seen_ = true;
}

// collect_absolute_value: bins over [min |x|, max |x|] of the first run; later runs with
// larger values append bins of the same width.
void RangeCollector::add_absolute(const float* data, size_t count, float amin, float amax) {
  if (!seen_) {
    histogram_ = make_histogram(amin, amax, static_cast<size_t>(bins_));
  } else if (amax > histogram_.hi()) {
    const auto extra = static_cast<size_t>(std::ceil((amax - histogram_.hi()) / histogram_.width));
    histogram_.counts.resize(histogram_.counts.size() + std::max<size_t>(extra, 1), 0);
  }
  count_into(histogram_, data, count, true);
}

// collect_value / merge_histogram: bins over [-t, t] for the largest |x| seen so far; a run
// with larger values widens the histogram by whole bins on both sides.
void RangeCollector::add_values(const float* data, size_t count, float threshold) {
  if (!seen_) {
    threshold_ = threshold;
    histogram_ = make_histogram(-threshold, threshold, static_cast<size_t>(bins_));
  } else if (threshold > threshold_) {
    const std::vector<int64_t> old = histogram_.counts;
    if (threshold_ == 0) {
      threshold_ = threshold;
      histogram_ = make_histogram(-threshold, threshold, old.size());
      for (size_t i = 0; i < old.size(); ++i) histogram_.counts[i] += old[i];
    } else {
      const double stride = 2 * threshold_ / static_cast<double>(old.size());
      const auto half = static_cast<size_t>(std::floor((threshold - threshold_) / stride) + 1);
      threshold_ = static_cast<double>(half) * stride + threshold_;
      histogram_ = make_histogram(-threshold_, threshold_, old.size() + 2 * half);
      for (size_t i = 0; i < old.size(); ++i) histogram_.counts[half + i] += old[i];
    }
  }
  count_into(histogram_, data, count, false);
}

TensorRange entropy_range(const Histogram& histogram, int quantized_bins, float min, float max) {
  const std::vector<int64_t>& hist = histogram.counts;
  const size_t num_bins = hist.size();
  const size_t zero_bin = num_bins / 2;
  const size_t half_quantized = static_cast<size_t>(quantized_bins) / 2;
  const size_t nq = static_cast<size_t>(quantized_bins);
  std::vector<int64_t> prefix(num_bins + 1, 0);
  for (size_t i = 0; i < num_bins; ++i) prefix[i + 1] = prefix[i] + hist[i];
  double best = std::numeric_limits<double>::infinity();
  TensorRange range{static_cast<float>(histogram.edge(0)), static_cast<float>(histogram.hi())};
  bool found = false;
  for (size_t i = half_quantized; i <= zero_bin; ++i) {
    const size_t start = zero_bin - i;
    const size_t end = std::min(zero_bin + i + 1, num_bins);
    const size_t size = end - start;
    std::vector<double> p(hist.begin() + start, hist.begin() + end);
    p.front() += static_cast<double>(prefix[start]);
    p.back() += static_cast<double>(prefix[num_bins] - prefix[end]);
    const size_t merged = size / nq;
    std::vector<int64_t> quantized(nq, 0);
    for (size_t b = 0; b < nq; ++b) {
      quantized[b] = prefix[start + (b + 1) * merged] - prefix[start + b * merged];
    }
    quantized.back() += prefix[end] - prefix[start + nq * merged];
    // ONNX Runtime's q is an int64 array: each expanded bin is the merged count divided by
    // its non-zero bins, truncated.
    std::vector<double> q(size, 0);
    for (size_t b = 0; b < nq; ++b) {
      const size_t from = b * merged, to = from + merged;
      size_t norm = 0;
      for (size_t j = from; j < to; ++j) norm += p[j] != 0;
      if (norm == 0) continue;
      const double value = std::trunc(static_cast<double>(quantized[b]) / double(norm));
      for (size_t j = from; j < to; ++j) q[j] = value;
    }
    double divergence = std::numeric_limits<double>::infinity();
    if (smooth(p) && smooth(q)) divergence = kl_divergence(p, q);
    if (!found || divergence < best) {
      best = divergence;
      range = {static_cast<float>(histogram.edge(start)), static_cast<float>(histogram.edge(end))};
      found = true;
    }
  }
  range.rmin = std::max(range.rmin, min);
  range.rmax = std::min(range.rmax, max);
  return range;
}

TensorRange RangeCollector::range() const {
  if (!seen_) return {};
  switch (method_) {
    case CalibrationMethod::kMinMax:
      return {min_, max_};
    case CalibrationMethod::kEntropy:
      return entropy_range(histogram_, entropy_quantized_bins_, min_, max_);
    case CalibrationMethod::kPercentile: {
      const auto& hist = histogram_.counts;
      const double total = std::accumulate(hist.begin(), hist.end(), 0.0);
      const double target = percentile_ / 100.0;
      size_t index = hist.size();
      double cdf = 0;
      for (size_t i = 0; i < hist.size(); ++i) {
        cdf += static_cast<double>(hist[i]) / total;
        if (cdf >= target) {
          index = i;
          break;
        }
      }
      const auto edge = static_cast<float>(histogram_.edge(index));
      return {std::max(-edge, min_), std::min(edge, max_)};
    }
  }
  return {min_, max_};
}

std::map<std::string, TensorRange> calibrate(const Model& model,
                                             const std::vector<std::string>& tensors,
                                             const QuantizeOptions& options, size_t& samples_run) {
  Model augmented = clone_model(model);
  Graph& graph = augmented.graph();
  for (const std::string& name : tensors) {
    Value* value = graph.find_value(name);
    if (!value) fail("calibration: no value '{}' in the model", name);
    if (!graph.is_output(value)) graph.add_output(value);
  }
  SessionOptions session_options;
  session_options.level = OptimizationLevel::kNone;
  session_options.intra_op_threads = options.calibration_threads;
  session_options.kernels = options.calibration_kernels;
  session_options.validate_inputs = true;
  session_options.release_weights_after_use = true;
  auto session = Session::create(std::move(augmented), session_options);
  if (!session) fail("calibration: {}", session.error());
  const std::vector<ValueInfo> inputs = session.value()->inputs();

  std::map<std::string, RangeCollector> collectors;
  for (const std::string& name : tensors) {
    collectors.emplace(name, RangeCollector(options.calibration_method, options.histogram_bins,
                                            options.entropy_quantized_bins, options.percentile));
  }
  samples_run = 0;
  for (size_t index = 0; index < options.calibration_samples; ++index) {
    std::optional<CalibrationSample> sample;
    if (options.calibration_source) {
      sample = options.calibration_source(index);
      if (!sample) break;
    } else {
      sample = CalibrationSample{
          make_check_inputs(model, options.calibration_dims, {}, options.seed + index),
          fmt::format("{} (generated)", index)};
    }
    check_sample(inputs, *sample);
    auto outputs = session.value()->run(sample->inputs);
    if (!outputs) fail("calibration sample {}: {}", sample->label, outputs.error());
    for (auto& [name, value] : outputs.value()) {
      auto it = collectors.find(name);
      if (it == collectors.end() || !value.is_tensor()) continue;
      const Tensor& tensor = value.tensor();
      if (tensor.dtype() != DType::kFloat) continue;
      it->second.add(tensor.data<float>(), static_cast<size_t>(tensor.numel()));
    }
    ++samples_run;
  }
  if (samples_run == 0) fail("calibration: the calibration data holds no sample");
  std::map<std::string, TensorRange> ranges;
  for (const auto& [name, collector] : collectors) {
    if (collector.seen()) ranges[name] = collector.range();
  }
  return ranges;
}

}  // namespace onnxkit::quant

// Calibration: the range of each activation a static model quantizes, from running the
// float model on sample inputs. Statistics stream: each run's values are folded into a
// min/max pair or a histogram per tensor and dropped, so memory does not grow with the
// number of samples. The histograms and the thresholds taken from them follow ONNX
// Runtime's HistogramCollector (calibrate.py): entropy over a value histogram that widens
// as larger values arrive, percentile over a histogram of |x|.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/model.h"
#include "onnxkit/quantize.h"
#include "onnxkit/tensor.h"

namespace onnxkit::quant {

struct TensorRange {
  float rmin = 0;
  float rmax = 0;
};

// Counts over equal-width bins [lo + i * width, lo + (i + 1) * width); numpy.histogram's
// rule: values outside [lo, hi] are dropped, the last bin holds hi.
struct Histogram {
  double lo = 0;
  double width = 0;
  std::vector<int64_t> counts;
  double edge(size_t i) const { return lo + width * static_cast<double>(i); }
  double hi() const { return edge(counts.size()); }
};

// The statistics of one tensor across calibration runs.
class RangeCollector {
 public:
  RangeCollector(CalibrationMethod method, int bins, int entropy_quantized_bins, double percentile);
  // Folds one run's values in (NaN ignored).
  void add(const float* data, size_t count);
  TensorRange range() const;
  // False until a float value arrived.
  bool seen() const { return seen_; }
  const Histogram& histogram() const { return histogram_; }

 private:
  void add_absolute(const float* data, size_t count, float amin, float amax);
  void add_values(const float* data, size_t count, float threshold);

  CalibrationMethod method_;
  int bins_;
  int entropy_quantized_bins_;
  double percentile_;
  bool seen_ = false;
  float min_ = 0, max_ = 0;
  double threshold_ = 0;  // the value histogram's half width
  Histogram histogram_;
};

// The threshold pair that minimizes the KL divergence between a histogram's values and
// their quantization into `quantized_bins` levels (the symmetric value histogram).
TensorRange entropy_range(const Histogram& histogram, int quantized_bins, float min, float max);

// The calibrated range of each of `tensors` (float values of `model`), from
// options.calibration_source's samples or generated ones. `samples_run` receives the
// number of runs.
std::map<std::string, TensorRange> calibrate(const Model& model,
                                             const std::vector<std::string>& tensors,
                                             const QuantizeOptions& options, size_t& samples_run);

}  // namespace onnxkit::quant

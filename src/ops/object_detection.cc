// Op family: object detection (NonMaxSuppression, RoiAlign).
//
// NonMaxSuppression is the greedy algorithm: per batch and class, boxes above the score
// threshold are visited best score first (ties: lower box index first) and kept unless
// their IoU with an already kept box exceeds the threshold. RoiAlign averages (or takes
// the maximum of) bilinear samples on a regular grid inside each output bin; the sample
// positions and weights depend only on the RoI, so they are computed once per RoI and
// applied to every channel.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/resource_limits.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// ---------------------------------------------------------------------------------------
// NonMaxSuppression

// A box as its min/max corners.
struct Corners {
  float y_min, x_min, y_max, x_max;
};

Corners box_corners(const float* b, bool center_point) {
  if (center_point) {  // [x_center, y_center, width, height]
    const float half_w = b[2] / 2, half_h = b[3] / 2;
    return {b[1] - half_h, b[0] - half_w, b[1] + half_h, b[0] + half_w};
  }
  // [y1, x1, y2, x2]: any diagonal pair of corners.
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// True when the boxes overlap by more than `threshold` IoU (degenerate boxes never do).
bool overlaps_too_much(const Corners& a, const Corners& b, float threshold) {
  const float ix_min = std::max(a.x_min, b.x_min), ix_max = std::min(a.x_max, b.x_max);
  const float iy_min = std::max(a.y_min, b.y_min), iy_max = std::min(a.y_max, b.y_max);
  if (ix_max <= ix_min || iy_max <= iy_min) return false;
  const float intersection = (ix_max - ix_min) * (iy_max - iy_min);
  const float area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  const float area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  const float union_area = area_a + area_b - intersection;
  if (area_a <= 0 || area_b <= 0 || union_area <= 0) return false;
  return intersection / union_area > threshold;
}

class NonMaxSuppressionKernel : public OpKernel {
 public:
  explicit NonMaxSuppressionKernel(const KernelCreateContext& context)
      : center_point_box_(context.attr_int("center_point_box", 0)) {
    if (center_point_box_ != 0 && center_point_box_ != 1) {
      context.fail("center_point_box is {}, must be 0 (corners) or 1 (center and size)",
                   center_point_box_);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& boxes = context.input(0);
    const Tensor& scores = context.input(1);
    if (boxes.dtype() != DType::kFloat || scores.dtype() != DType::kFloat) {
      context.fail("boxes and scores must be float, got {} and {}", dtype_name(boxes.dtype()),
                   dtype_name(scores.dtype()));
    }
    if (boxes.rank() != 3 || boxes.shape()[2] != 4) {
      context.fail("boxes must have shape [num_batches, num_boxes, 4], got {}",
                   shape_to_string(boxes.shape()));
    }
    if (scores.rank() != 3) {
      context.fail("scores must have shape [num_batches, num_classes, num_boxes], got {}",
                   shape_to_string(scores.shape()));
    }
    const int64_t batches = boxes.shape()[0], num_boxes = boxes.shape()[1];
    const int64_t classes = scores.shape()[1];
    if (scores.shape()[0] != batches || scores.shape()[2] != num_boxes) {
      context.fail("scores shape {} does not match boxes shape {}", shape_to_string(scores.shape()),
                   shape_to_string(boxes.shape()));
    }
    int64_t max_per_class = 0;
    if (context.has_input(2) && context.input(2).numel() > 0) {
      max_per_class = read_int64s(context.input(2), "max_output_boxes_per_class")[0];
    }
    float iou_threshold = 0;
    if (context.has_input(3) && context.input(3).numel() > 0) {
      iou_threshold = static_cast<float>(read_scalar(context.input(3), "iou_threshold"));
    }
    const bool has_score_threshold = context.has_input(4) && context.input(4).numel() > 0;
    const float score_threshold =
        has_score_threshold ? static_cast<float>(read_scalar(context.input(4), "score_threshold"))
                            : 0.0f;

    std::vector<int64_t> selected;  // triples (batch, class, box)
    if (max_per_class > 0 && num_boxes > 0) {
      const float* pb = boxes.data<float>();
      const float* ps = scores.data<float>();
      std::vector<Corners> corners(static_cast<size_t>(num_boxes));
      std::vector<int64_t> order;
      std::vector<Corners> kept;
      for (int64_t b = 0; b < batches; ++b) {
        for (int64_t i = 0; i < num_boxes; ++i) {
          corners[i] = box_corners(pb + (b * num_boxes + i) * 4, center_point_box_ == 1);
        }
        for (int64_t c = 0; c < classes; ++c) {
          const float* s = ps + (b * classes + c) * num_boxes;
          order.clear();
          for (int64_t i = 0; i < num_boxes; ++i) {
            if (!has_score_threshold || s[i] > score_threshold) order.push_back(i);
          }
          // Best score first; stable keeps the lower index first among equal scores.
          std::stable_sort(order.begin(), order.end(),
                           [&](int64_t l, int64_t r) { return s[l] > s[r]; });
          kept.clear();
          for (int64_t i : order) {
            if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
            const Corners& box = corners[i];
            const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](const Corners& k) {
              return overlaps_too_much(k, box, iou_threshold);
            });
            if (suppressed) continue;
            kept.push_back(box);
            selected.insert(selected.end(), {b, c, i});
          }
        }
      }
    }
    const int64_t count = static_cast<int64_t>(selected.size() / 3);
    Tensor& out = context.allocate_output(0, DType::kInt64, {count, 3});
    std::copy(selected.begin(), selected.end(), out.mutable_data<int64_t>());
  }

 private:
  int64_t center_point_box_;
};

// ---------------------------------------------------------------------------------------
// RoiAlign

// One bilinear sample: four input offsets (within a channel plane) and their weights.
struct Sample {
  int64_t pos[4];
  double weight[4];
};

// Bilinear sample at (y, x) of an h x w plane; positions far outside weigh nothing.
Sample bilinear_sample(double y, double x, int64_t h, int64_t w) {
  Sample s{{0, 0, 0, 0}, {0, 0, 0, 0}};
  if (h <= 0 || w <= 0) return s;
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
  int64_t y_high = y_low + 1, x_high = x_low + 1;
  if (y_low >= h - 1) {
    y_low = y_high = h - 1;
    y = static_cast<double>(y_low);
  }
  if (x_low >= w - 1) {
    x_low = x_high = w - 1;
    x = static_cast<double>(x_low);
  }
  const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
  const double hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y_low * w + x_low;
  s.pos[1] = y_low * w + x_high;
  s.pos[2] = y_high * w + x_low;
  s.pos[3] = y_high * w + x_high;
  s.weight[0] = hy * hx;
  s.weight[1] = hy * lx;
  s.weight[2] = ly * hx;
  s.weight[3] = ly * lx;
  return s;
}

class RoiAlignKernel : public OpKernel {
 public:
  explicit RoiAlignKernel(const KernelCreateContext& context)
      : output_height_(context.attr_int("output_height", 1)),
        output_width_(context.attr_int("output_width", 1)),
        sampling_ratio_(context.attr_int("sampling_ratio", 0)),
        spatial_scale_(context.attr_float("spatial_scale", 1.0f)) {
    const std::string mode = context.attr_string("mode", "avg");
    if (mode != "avg" && mode != "max") {
      context.fail("mode is '{}', must be 'avg' or 'max'", mode);
    }
    max_mode_ = mode == "max";
    // Opset 10 had no pixel shift (what opset 16 calls output_half_pixel).
    const std::string transform =
        context.opset() >= 16 ? context.attr_string("coordinate_transformation_mode", "half_pixel")
                              : "output_half_pixel";
    if (transform != "half_pixel" && transform != "output_half_pixel") {
      context.fail(
          "coordinate_transformation_mode is '{}', must be 'half_pixel' or 'output_half_pixel'",
          transform);
    }
    half_pixel_ = transform == "half_pixel";
    if (output_height_ <= 0 || output_width_ <= 0) {
      context.fail("output_height {} and output_width {} must be positive", output_height_,
                   output_width_);
    }
    if (sampling_ratio_ < 0) {
      context.fail("sampling_ratio is {}, must be >= 0 (0 = adaptive)", sampling_ratio_);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& rois = context.input(1);
    const Tensor& batch_indices = context.input(2);
    if (x.rank() != 4)
      context.fail("X must be 4-D (N, C, H, W), got {}", shape_to_string(x.shape()));
    if (rois.rank() != 2 || rois.shape()[1] != 4) {
      context.fail("rois must have shape [num_rois, 4], got {}", shape_to_string(rois.shape()));
    }
    if (rois.dtype() != x.dtype()) {
      context.fail("rois type {} differs from X type {}", dtype_name(rois.dtype()),
                   dtype_name(x.dtype()));
    }
    const int64_t num_rois = rois.shape()[0];
    if (batch_indices.rank() != 1 || batch_indices.shape()[0] != num_rois) {
      context.fail("batch_indices must have shape [{}], got {}", num_rois,
                   shape_to_string(batch_indices.shape()));
    }
    const std::vector<int64_t> batch = read_int64s(batch_indices, "batch_indices");
    const int64_t n = x.shape()[0], channels = x.shape()[1];
    const int64_t h = x.shape()[2], w = x.shape()[3];
    for (int64_t r = 0; r < num_rois; ++r) {
      if (batch[r] < 0 || batch[r] >= n) {
        context.fail("batch_indices value {} (roi {}) is out of range for batch size {}", batch[r],
                     r, n);
      }
    }
    Tensor& y =
        context.allocate_output(0, x.dtype(), {num_rois, channels, output_height_, output_width_});
    if (y.numel() == 0) return;
    dispatch_float(x.dtype(), "RoiAlign", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      const T* pr = rois.data<T>();
      T* py = y.mutable_data<T>();
      const int64_t plane = h * w, bins = output_height_ * output_width_;
      std::vector<Sample> samples;
      for (int64_t r = 0; r < num_rois; ++r) {
        plan_roi(context, r, pr + r * 4, h, w, samples);
        const size_t per_bin = samples.size() / static_cast<size_t>(bins);
        const double count = static_cast<double>(std::max<size_t>(per_bin, 1));
        for (int64_t c = 0; c < channels; ++c) {
          const T* xc = px + (batch[r] * channels + c) * plane;
          T* yc = py + (r * channels + c) * bins;
          for (int64_t bin = 0; bin < bins; ++bin) {
            const Sample* s = samples.data() + static_cast<size_t>(bin) * per_bin;
            double value = 0;
            for (size_t k = 0; k < per_bin; ++k) {
              double terms[4];
              for (int t = 0; t < 4; ++t) {
                terms[t] = s[k].weight[t] * static_cast<double>(xc[s[k].pos[t]]);
              }
              if (max_mode_) {
                // The largest weighted corner, as the reference implementations take it.
                const double m = std::max({terms[0], terms[1], terms[2], terms[3]});
                value = k == 0 ? m : std::max(value, m);
              } else {
                value += terms[0] + terms[1] + terms[2] + terms[3];
              }
            }
            yc[bin] = static_cast<T>(max_mode_ ? value : value / count);
          }
        }
      }
    });
  }

 private:
  // Fills `samples` with the bilinear samples of every output bin of one RoI, bin by bin
  // (the same number per bin).
  template <typename T>
  void plan_roi(const KernelContext& context, int64_t r, const T* roi, int64_t h, int64_t w,
                std::vector<Sample>& samples) const {
    const double offset = half_pixel_ ? 0.5 : 0.0;
    const double scale = spatial_scale_;
    const double x1 = static_cast<double>(roi[0]) * scale - offset;
    const double y1 = static_cast<double>(roi[1]) * scale - offset;
    const double x2 = static_cast<double>(roi[2]) * scale - offset;
    const double y2 = static_cast<double>(roi[3]) * scale - offset;
    double roi_w = x2 - x1, roi_h = y2 - y1;
    if (!half_pixel_) {  // the legacy mode forces malformed RoIs to 1 x 1
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(output_height_);
    const double bin_w = roi_w / static_cast<double>(output_width_);
    if (!std::isfinite(bin_h) || !std::isfinite(bin_w)) {
      context.fail("roi {} has a non-finite size ({} x {} after spatial_scale)", r, roi_h, roi_w);
    }
    // The adaptive grid is ceil(bin) samples a side; past 2^40 no image has the pixels and the
    // allocation check below refuses it anyway.
    const auto adaptive = [](double bin) {
      return static_cast<int64_t>(std::ceil(std::clamp(bin, 0.0, 0x1p40)));
    };
    const int64_t grid_h = sampling_ratio_ > 0 ? sampling_ratio_ : adaptive(bin_h);
    const int64_t grid_w = sampling_ratio_ > 0 ? sampling_ratio_ : adaptive(bin_w);
    samples.clear();
    if (grid_h <= 0 || grid_w <= 0) return;
    constexpr std::string_view what = "RoiAlign's sampling points";
    const int64_t count =
        checked_mul(checked_mul(output_height_ * output_width_, grid_h, what), grid_w, what);
    check_allocation(
        static_cast<size_t>(checked_mul(count, static_cast<int64_t>(sizeof(Sample)), what)));
    samples.reserve(static_cast<size_t>(count));
    for (int64_t ph = 0; ph < output_height_; ++ph) {
      for (int64_t pw = 0; pw < output_width_; ++pw) {
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const double yy = y1 + static_cast<double>(ph) * bin_h +
                            (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const double xx = x1 + static_cast<double>(pw) * bin_w +
                              (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
            samples.push_back(bilinear_sample(yy, xx, h, w));
          }
        }
      }
    }
  }

  int64_t output_height_;
  int64_t output_width_;
  int64_t sampling_ratio_;
  double spatial_scale_;
  bool max_mode_ = false;
  bool half_pixel_ = true;
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// NonMaxSuppression: int64 [selected, 3], the count known only when running.
void infer_non_max_suppression(TypeInferenceContext& context) {
  context.set_output(0, tensor_type(DType::kInt64, std::vector<Dim>{Dim{}, Dim::known(3)}));
}

// RoiAlign: [num_rois, C, output_height, output_width] of X's dtype.
void infer_roi_align(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const KernelCreateContext attributes = attribute_reader(context);
  const std::vector<Dim>* x = input_dims(context, 0);
  const std::vector<Dim>* rois = input_dims(context, 1);
  Dim count = rois && !rois->empty() ? (*rois)[0] : Dim{};
  if (const std::vector<Dim>* batch_indices = input_dims(context, 2);
      !count.is_known() && batch_indices && batch_indices->size() == 1) {
    count = (*batch_indices)[0];
  }
  context.set_output(
      0, tensor_type(dtype, std::vector<Dim>{count, x && x->size() == 4 ? (*x)[1] : Dim{},
                                             Dim::known(attributes.attr_int("output_height", 1)),
                                             Dim::known(attributes.attr_int("output_width", 1))}));
}

}  // namespace

void register_object_detection_ops(OpRegistry& registry) {
  registry.add("NonMaxSuppression", {10, 11}, kernel_factory<NonMaxSuppressionKernel>());
  registry.add("RoiAlign", {10, 16, 22}, kernel_factory<RoiAlignKernel>());

  // Type inference, every version.
  registry.set_type_rule("", "NonMaxSuppression", infer_non_max_suppression);
  registry.set_type_rule("", "RoiAlign", infer_roi_align);
}

}  // namespace onnxkit

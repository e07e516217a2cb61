// Unit tests of the object detection op family: NonMaxSuppression and RoiAlign.
// Expected values are worked out by hand (RoiAlign on a linear ramp, where bilinear
// interpolation is exact: X[r][c] = 4r + c reads 4y + x at any (y, x) inside).
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// ---- NonMaxSuppression ----

// Six boxes in [y1, x1, y2, x2] form: three near the origin, two near x = 10, one far.
Tensor six_boxes() {
  return floats({1, 6, 4}, {0, 0,  1, 1,  0, 0.1f,  1, 1.1f,  0, -0.1f, 1, 0.9f,
                            0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100,   1, 101});
}
Tensor six_scores() {
  return floats({1, 1, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f});
}

TEST(NonMaxSuppression, GreedyByScoreWithLimit) {
  Tensor out = run_one("NonMaxSuppression",
                       {six_boxes(), six_scores(), int64s({1}, {10}), floats({1}, {0.5f})}, 11);
  EXPECT_EQ(out.shape(), (Shape{3, 3}));
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
  out = run_one("NonMaxSuppression",
                {six_boxes(), six_scores(), int64s({1}, {2}), floats({1}, {0.5f})}, 10);
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{0, 0, 3, 0, 0, 0}));
}

TEST(NonMaxSuppression, OmittedMaxOutputSelectsNothing) {
  Tensor out = run_one("NonMaxSuppression", {six_boxes(), six_scores()}, 11);
  EXPECT_EQ(out.shape(), (Shape{0, 3}));
  out = run_one("NonMaxSuppression", {six_boxes(), six_scores(), int64s({1}, {0})}, 11);
  EXPECT_EQ(out.shape(), (Shape{0, 3}));
  // The largest int64 means "no limit".
  out = run_one("NonMaxSuppression",
                {six_boxes(), six_scores(), int64s({1}, {std::numeric_limits<int64_t>::max()}),
                 floats({1}, {0.5f})},
                11);
  EXPECT_EQ(out.shape(), (Shape{3, 3}));
}

TEST(NonMaxSuppression, IouThresholdIsStrictAndDefaultsToZero) {
  // IoU of the two boxes is exactly 1 / 2.
  Tensor boxes = floats({1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 2});
  Tensor scores = floats({1, 1, 2}, {0.5f, 0.9f});
  Tensor out =
      run_one("NonMaxSuppression", {boxes, scores, int64s({}, {5}), floats({}, {0.5f})}, 11);
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{0, 0, 1, 0, 0, 0}));
  out = run_one("NonMaxSuppression", {boxes, scores, int64s({}, {5}), floats({}, {0.49f})}, 11);
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{0, 0, 1}));
  // No iou_threshold: 0, so any overlap suppresses; disjoint boxes survive.
  Tensor apart = floats({1, 2, 4}, {0, 0, 1, 1, 2, 2, 3, 3});
  out = run_one("NonMaxSuppression", {apart, scores, int64s({}, {5})}, 11);
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{0, 0, 1, 0, 0, 0}));
  out = run_one("NonMaxSuppression", {boxes, scores, int64s({}, {5})}, 11);
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{0, 0, 1}));
}

TEST(NonMaxSuppression, ScoreThresholdIsStrictAndTiesKeepIndexOrder) {
  Tensor boxes = floats({1, 3, 4}, {0, 0, 1, 1, 5, 5, 6, 6, 10, 10, 11, 11});
  Tensor scores = floats({1, 1, 3}, {0.4f, 0.7f, 0.7f});
  Tensor out =
      run_one("NonMaxSuppression",
              {boxes, scores, int64s({1}, {3}), floats({1}, {0.5f}), floats({1}, {0.4f})}, 11);
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
}

TEST(NonMaxSuppression, CenterPointBoxesAndBatchClassOrder) {
  // [x_center, y_center, width, height]: boxes 0 and 1 overlap heavily, box 2 is apart.
  Tensor boxes = floats({2, 3, 4}, {0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 5, 5, 1, 1,
                                    0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 5, 5, 1, 1});
  Tensor scores = floats({2, 2, 3}, {0.9f, 0.8f, 0.1f, 0.1f, 0.2f, 0.3f,  //
                                     0.1f, 0.9f, 0.8f, 0.5f, 0.6f, 0.7f});
  Tensor out = run_one("NonMaxSuppression", {boxes, scores, int64s({1}, {2}), floats({1}, {0.5f})},
                       11, [](Node* n) { set_int(n, "center_point_box", 1); });
  EXPECT_EQ(out.shape(), (Shape{8, 3}));
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{0, 0, 0, 0, 0, 2, 0, 1, 2, 0, 1, 1,
                                                           1, 0, 1, 1, 0, 2, 1, 1, 2, 1, 1, 1}));
}

TEST(NonMaxSuppression, ErrorsNameTheProblem) {
  std::string message = error_of([] {
    run_one("NonMaxSuppression", {floats({1, 2, 3}, std::vector<float>(6)), six_scores()}, 11);
  });
  EXPECT_NE(message.find("[num_batches, num_boxes, 4]"), std::string::npos) << message;
  message = error_of([] {
    run_one("NonMaxSuppression", {six_boxes(), floats({1, 1, 5}, std::vector<float>(5))}, 11);
  });
  EXPECT_NE(message.find("does not match"), std::string::npos) << message;
  message = error_of([] {
    run_one("NonMaxSuppression", {six_boxes(), six_scores()}, 11,
            [](Node* n) { set_int(n, "center_point_box", 2); });
  });
  EXPECT_NE(message.find("center_point_box is 2"), std::string::npos) << message;
}

// ---- RoiAlign ----

Tensor ramp_image() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
  return floats({1, 1, 4, 4}, v);
}

TEST(RoiAlign, PixelShiftDependsOnOpsetAndMode) {
  auto one_bin = [](Node* n) { set_int(n, "sampling_ratio", 1); };
  // Opset 10 (no shift): the single sample is at (1.5, 1.5) -> 4 * 1.5 + 1.5.
  Tensor out = run_one("RoiAlign", {ramp_image(), floats({1, 4}, {0, 0, 3, 3}), int64s({1}, {0})},
                       10, one_bin);
  EXPECT_EQ(out.shape(), (Shape{1, 1, 1, 1}));
  EXPECT_NEAR(out.data<float>()[0], 7.5f, 1e-5);
  // Opset 16 default half_pixel shifts by -0.5: the sample is at (1, 1).
  out = run_one("RoiAlign", {ramp_image(), floats({1, 4}, {0, 0, 3, 3}), int64s({1}, {0})}, 16,
                one_bin);
  EXPECT_NEAR(out.data<float>()[0], 5.0f, 1e-5);
  out = run_one("RoiAlign", {ramp_image(), floats({1, 4}, {0, 0, 3, 3}), int64s({1}, {0})}, 16,
                [](Node* n) {
                  set_int(n, "sampling_ratio", 1);
                  set_string(n, "coordinate_transformation_mode", "output_half_pixel");
                });
  EXPECT_NEAR(out.data<float>()[0], 7.5f, 1e-5);
}

TEST(RoiAlign, BinsScaleAndAdaptiveSampling) {
  // spatial_scale 0.5 maps [0, 0, 6, 6] to [0, 0, 3, 3]; 3 x 3 bins of size 1 with the
  // adaptive grid (1 sample each, at the bin centres 0.5, 1.5, 2.5).
  Tensor out = run_one("RoiAlign", {ramp_image(), floats({1, 4}, {0, 0, 6, 6}), int64s({1}, {0})},
                       10, [](Node* n) {
                         set_float(n, "spatial_scale", 0.5f);
                         set_int(n, "output_height", 3);
                         set_int(n, "output_width", 3);
                       });
  EXPECT_EQ(out.shape(), (Shape{1, 1, 3, 3}));
  const std::vector<float> expected{2.5f, 3.5f, 4.5f, 6.5f, 7.5f, 8.5f, 10.5f, 11.5f, 12.5f};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(out.data<float>()[i], expected[i], 1e-5);
}

TEST(RoiAlign, MaxModeTakesLargestWeightedCorner) {
  // Samples at 0.75 and 2.25 on both axes; the largest weighted corner of the sample at
  // (2.25, 2.25) is 0.5625 * X[2][2] = 5.625. The average mode gives the centre value.
  auto attrs = [](const std::string& mode) {
    return [mode](Node* n) {
      set_int(n, "sampling_ratio", 2);
      set_string(n, "mode", mode);
    };
  };
  std::vector<Tensor> inputs{ramp_image(), floats({1, 4}, {0, 0, 3, 3}), int64s({1}, {0})};
  EXPECT_NEAR(run_one("RoiAlign", inputs, 10, attrs("max")).data<float>()[0], 5.625f, 1e-5);
  EXPECT_NEAR(run_one("RoiAlign", inputs, 10, attrs("avg")).data<float>()[0], 7.5f, 1e-5);
}

TEST(RoiAlign, BatchIndicesDoubleAndFloat16) {
  std::vector<double> image(32);
  for (int i = 0; i < 32; ++i) image[i] = i;  // batch 1 is batch 0 + 16
  Tensor x = Tensor::from_vector<double>(DType::kDouble, {2, 1, 4, 4}, image);
  Tensor rois = Tensor::from_vector<double>(DType::kDouble, {2, 4}, {0, 0, 3, 3, 0, 0, 3, 3});
  Tensor out = run_one("RoiAlign", {x, rois, int64s({2}, {1, 0})}, 10,
                       [](Node* n) { set_int(n, "sampling_ratio", 1); });
  EXPECT_EQ(out.dtype(), DType::kDouble);
  EXPECT_EQ(values_of<double>(out), (std::vector<double>{23.5, 7.5}));

  std::vector<Float16> half(16);
  for (int i = 0; i < 16; ++i) half[i] = Float16(static_cast<float>(i));
  Tensor xh = Tensor::from_vector<Float16>(DType::kFloat16, {1, 1, 4, 4}, half);
  Tensor rh = Tensor::from_vector<Float16>(DType::kFloat16, {1, 4},
                                           {Float16(0), Float16(0), Float16(3), Float16(3)});
  out = run_one("RoiAlign", {xh, rh, int64s({1}, {0})}, 16,
                [](Node* n) { set_int(n, "sampling_ratio", 1); });
  EXPECT_EQ(out.dtype(), DType::kFloat16);
  EXPECT_FLOAT_EQ(static_cast<float>(out.data<Float16>()[0]), 5.0f);
}

TEST(RoiAlign, NoRoisGivesEmptyOutput) {
  Tensor out = run_one("RoiAlign", {ramp_image(), floats({0, 4}, {}), int64s({0}, {})}, 16,
                       [](Node* n) { set_int(n, "output_height", 2); });
  EXPECT_EQ(out.shape(), (Shape{0, 1, 2, 1}));
}

TEST(RoiAlign, ErrorsNameTheProblem) {
  std::string message = error_of([] {
    run_one("RoiAlign", {ramp_image(), floats({1, 4}, {0, 0, 3, 3}), int64s({1}, {2})}, 16);
  });
  EXPECT_NE(message.find("batch_indices value 2 (roi 0) is out of range for batch size 1"),
            std::string::npos)
      << message;
  message = error_of([] {
    run_one("RoiAlign", {ramp_image(), floats({1, 3}, {0, 0, 3}), int64s({1}, {0})}, 16);
  });
  EXPECT_NE(message.find("[num_rois, 4]"), std::string::npos) << message;
  message = error_of([] {
    run_one("RoiAlign", {ramp_image(), floats({1, 4}, {0, 0, 3, 3}), int64s({1}, {0})}, 16,
            [](Node* n) { set_string(n, "mode", "sum"); });
  });
  EXPECT_NE(message.find("mode is 'sum'"), std::string::npos) << message;
}

}  // namespace
}  // namespace onnxkit

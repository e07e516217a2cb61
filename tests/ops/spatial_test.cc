// Unit tests of the spatial op family: Pad, Resize, Upsample, DepthToSpace, SpaceToDepth,
// GridSample, AffineGrid, CenterCropPad.
// Expected values are worked out by hand or with numpy / the ONNX reference resize.
#include <gtest/gtest.h>

#include <complex>
#include <functional>

#include "core/half.h"
#include "onnxkit/session.h"
#include "op_test_util.h"
#include "type_rule_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

void expect_near(const Tensor& t, const std::vector<double>& expected, double tolerance = 1e-4) {
  ASSERT_EQ(t.dtype(), DType::kFloat);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(t.data<float>()[i], expected[i], tolerance) << "element " << i;
  }
}

// ---- Pad ----

TEST(Pad, ConstantInt32WithCropAndValue) {
  // [[1,2,3],[4,5,6]], pads begin (1,-1) end (0,2): crop first column, pad after.
  Tensor data = Tensor::from_vector<int32_t>(DType::kInt32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor value = Tensor::from_vector<int32_t>(DType::kInt32, {}, {9});
  Tensor out = run_one("Pad", {data, int64s({4}, {1, -1, 0, 2}), value}, 13);
  EXPECT_EQ(out.shape(), (Shape{3, 4}));
  EXPECT_EQ(values_of<int32_t>(out), (std::vector<int32_t>{9, 9, 9, 9, 2, 3, 9, 9, 5, 6, 9, 9}));
}

TEST(Pad, ReflectBeyondTheSizeRepeatsLikeNumpy) {
  // np.pad([1,2,3], (4,0), 'reflect') == [1,2,3,2,1,2,3]
  Tensor out = run_one("Pad", {floats({3}, {1, 2, 3}), int64s({2}, {4, 0})}, 11,
                       [](Node* n) { set_string(n, "mode", "reflect"); });
  expect_near(out, {1, 2, 3, 2, 1, 2, 3});
}

TEST(Pad, EdgeTwoAxes) {
  Tensor out = run_one("Pad", {floats({2, 2}, {1, 2, 3, 4}), int64s({4}, {0, 2, 1, 0})}, 13,
                       [](Node* n) { set_string(n, "mode", "edge"); });
  EXPECT_EQ(out.shape(), (Shape{3, 4}));
  expect_near(out, {1, 1, 1, 2, 3, 3, 3, 4, 3, 3, 3, 4});
}

TEST(Pad, ReflectAfterCrop) {
  // Crop 1 from the start of [1,2,3,4] -> [2,3,4], then reflect 2 at the end -> 3, 2.
  Tensor out = run_one("Pad", {floats({4}, {1, 2, 3, 4}), int64s({2}, {-1, 2})}, 13,
                       [](Node* n) { set_string(n, "mode", "reflect"); });
  expect_near(out, {2, 3, 4, 3, 2});
}

TEST(Pad, OpsetTwoAttributes) {
  Tensor out = run_one("Pad", {floats({1, 2}, {1, 2})}, 2, [](Node* n) {
    set_ints(n, "pads", {0, 1, 1, 0});
    set_float(n, "value", 7.5f);
  });
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  expect_near(out, {7.5, 1, 2, 7.5, 7.5, 7.5});
}

TEST(Pad, StringsAndBoolsDefaultToEmptyAndFalse) {
  Tensor s = Tensor::from_strings({2}, {"a", "b"});
  Tensor out = run_one("Pad", {s, int64s({2}, {1, 1})}, 13);
  EXPECT_EQ(out.strings(), (std::vector<std::string>{"", "a", "b", ""}));
  Tensor fill = Tensor::from_strings({}, {"z"});
  out = run_one("Pad", {s, int64s({2}, {0, 2}), fill}, 13);
  EXPECT_EQ(out.strings(), (std::vector<std::string>{"a", "b", "z", "z"}));
  Tensor b = Tensor::from_vector<uint8_t>(DType::kBool, {1}, {1});
  out = run_one("Pad", {b, int64s({2}, {1, 0})}, 13);
  EXPECT_EQ(values_of<bool>(out), (std::vector<bool>{false, true}));
}

TEST(Pad, EmptyInputConstantAndErrors) {
  Tensor empty(DType::kFloat, {0, 2});
  Tensor value = floats({}, {3});
  Tensor out = run_one("Pad", {empty, int64s({4}, {1, 0, 0, 1}), value}, 13);
  EXPECT_EQ(out.shape(), (Shape{1, 3}));
  expect_near(out, {3, 3, 3});
  expect_error(
      [&] {
        run_one("Pad", {empty, int64s({4}, {1, 0, 0, 0})}, 13,
                [](Node* n) { set_string(n, "mode", "edge"); });
      },
      "edge mode cannot pad dim 0");
  expect_error(
      [&] {
        run_one("Pad", {floats({2}, {1, 2}), int64s({3}, {1, 0, 0})}, 13);
      },
      "pads has 3 values, expected 2 * rank = 2");
  expect_error(
      [&] {
        run_one("Pad", {floats({2}, {1, 2}), int64s({2}, {-3, 1})}, 13);
      },
      "crop more than dim 0 of size 2");
}

TEST(Pad, Complex64CopiesBothParts) {
  // complex64 [1+2i], constant_value 3+4i, pads (1, 0).
  Tensor data = Tensor::from_vector<std::complex<float>>(DType::kComplex64, {1}, {{1, 2}});
  Tensor value = Tensor::from_vector<std::complex<float>>(DType::kComplex64, {}, {{3, 4}});
  Tensor out = run_one("Pad", {data, int64s({2}, {1, 0}), value}, 13);
  ASSERT_EQ(out.dtype(), DType::kComplex64);
  EXPECT_EQ(std::vector<float>(out.data<float>(), out.data<float>() + 4),
            (std::vector<float>{3, 4, 1, 2}));
}

// ---- DepthToSpace / SpaceToDepth ----

TEST(DepthToSpace, DcrAndCrd) {
  // 1x4x1x1 channels [0,1,2,3], blocksize 2 -> 1x1x2x2; DCR gives 0 1 / 2 3. With 8 channels
  // (C' = 2), DCR channel k*2+c and CRD channel c*4+k feed block position k of output c.
  std::vector<int64_t> v(8);
  for (int i = 0; i < 8; ++i) v[i] = i;
  Tensor x = int64s({1, 8, 1, 1}, v);
  Tensor dcr = run_one("DepthToSpace", {x}, 13, [](Node* n) { set_int(n, "blocksize", 2); });
  EXPECT_EQ(dcr.shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(values_of<int64_t>(dcr), (std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7}));
  Tensor crd = run_one("DepthToSpace", {x}, 13, [](Node* n) {
    set_int(n, "blocksize", 2);
    set_string(n, "mode", "CRD");
  });
  EXPECT_EQ(values_of<int64_t>(crd), v);
}

TEST(SpaceToDepth, InvertsDepthToSpaceDcr) {
  std::vector<std::string> v;
  for (int i = 0; i < 2 * 4 * 6; ++i) v.push_back(std::to_string(i));
  Tensor x = Tensor::from_strings({1, 2, 4, 6}, v);
  Tensor packed = run_one("SpaceToDepth", {x}, 13, [](Node* n) { set_int(n, "blocksize", 2); });
  EXPECT_EQ(packed.shape(), (Shape{1, 8, 2, 3}));
  // Channel 1 = block offset (0,0) of input channel 1: its first element is x[0,1,0,0] = 24.
  EXPECT_EQ(packed.strings()[6], "24");
  Tensor back = run_one("DepthToSpace", {packed}, 11, [](Node* n) { set_int(n, "blocksize", 2); });
  EXPECT_EQ(back.strings(), v);
  expect_error(
      [&] { run_one("SpaceToDepth", {x}, 13, [](Node* n) { set_int(n, "blocksize", 4); }); },
      "not divisible by blocksize 4");
}

// ---- Resize / Upsample ----

TEST(Resize, LinearThreeAxesMatchesReference) {
  // x = arange(24).reshape(2,3,4) ** 1.5 resized to (3,5,3), half_pixel (ONNX reference).
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[i] = std::pow(static_cast<float>(i), 1.5f);
  Tensor out = run_one("Resize", {floats({2, 3, 4}, x), Tensor(), Tensor(), int64s({3}, {3, 5, 3})},
                       13, [](Node* n) { set_string(n, "mode", "linear"); });
  EXPECT_EQ(out.shape(), (Shape{3, 5, 3}));
  const std::vector<double> expected = {
      0.16666667,  1.91421354,  4.80153131,  3.51202273,  6.32398367,  10.03413486, 8.53005695,
      12.93863964, 17.88303947, 17.42573166, 22.76228905, 28.55693054, 23.35618019, 29.31138802,
      35.67285538, 21.30985451, 25.77094841, 30.97217941, 27.49501801, 32.69633102, 38.50867844,
      36.7727623,  43.08440018, 49.81343079, 48.88834381, 55.94066238, 63.36271667, 56.96539688,
      64.51150513, 72.39557648, 42.45304489, 49.62768555, 57.14282608, 51.47801208, 59.06867599,
      66.98322296, 65.01546478, 73.23016357, 81.74382019, 80.35095215, 89.11903381, 98.1685028,
      90.57461548, 99.71161652, 109.11829376};
  expect_near(out, expected);
}

TEST(Resize, CubicExcludeOutsideAndAlignCorners) {
  Tensor x = floats({5}, {1, 4, 2, 8, 5});
  Tensor out = run_one("Resize", {x, Tensor(), floats({1}, {1.6f})}, 13, [](Node* n) {
    set_string(n, "mode", "cubic");
    set_float(n, "cubic_coeff_a", -0.5f);
    set_int(n, "exclude_outside", 1);
  });
  expect_near(out, {0.78413284, 2.28507821, 3.99768066, 2.20202637, 3.58630371, 7.85754395,
                    6.48647106, 4.78413284});
  // Scales give a fractional resized length (5 * 0.7 = 3.5) that align_corners divides by.
  out = run_one("Resize", {x, Tensor(), floats({1}, {0.7f})}, 13, [](Node* n) {
    set_string(n, "mode", "cubic");
    set_string(n, "coordinate_transformation_mode", "align_corners");
  });
  expect_near(out, {1.0, 2.34399987, 8.04799988});
}

TEST(Resize, TfCropAndResizeExtrapolates) {
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = static_cast<float>(i);
  Tensor roi = floats({4}, {0.5f, -0.5f, 1.5f, 0.5f});
  Tensor out =
      run_one("Resize", {floats({3, 4}, v), roi, Tensor(), int64s({2}, {2, 2})}, 13, [](Node* n) {
        set_string(n, "mode", "linear");
        set_string(n, "coordinate_transformation_mode", "tf_crop_and_resize");
        set_float(n, "extrapolation_value", -1.0f);
      });
  expect_near(out, {-1, 5.5, -1, -1});
  // Nearest on int32 (1.5 rounds down under round_prefer_floor).
  Tensor xi =
      Tensor::from_vector<int32_t>(DType::kInt32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  out = run_one("Resize", {xi, roi, Tensor(), int64s({2}, {2, 2})}, 13, [](Node* n) {
    set_string(n, "coordinate_transformation_mode", "tf_crop_and_resize");
    set_float(n, "extrapolation_value", -1.0f);
  });
  EXPECT_EQ(values_of<int32_t>(out), (std::vector<int32_t>{-1, 5, -1, -1}));
}

TEST(Resize, NearestModesOnUint8) {
  // asymmetric, scale 2 from sizes: x = o / 2, ties at .5.
  Tensor x = Tensor::from_vector<uint8_t>(DType::kUInt8, {3}, {10, 20, 30});
  auto run_mode = [&](const std::string& mode) {
    return values_of<uint8_t>(
        run_one("Resize", {x, Tensor(), Tensor(), int64s({1}, {6})}, 13, [&](Node* n) {
          set_string(n, "coordinate_transformation_mode", "asymmetric");
          set_string(n, "nearest_mode", mode);
        }));
  };
  EXPECT_EQ(run_mode("round_prefer_floor"), (std::vector<uint8_t>{10, 10, 20, 20, 30, 30}));
  EXPECT_EQ(run_mode("round_prefer_ceil"), (std::vector<uint8_t>{10, 20, 20, 30, 30, 30}));
  EXPECT_EQ(run_mode("floor"), (std::vector<uint8_t>{10, 10, 20, 20, 30, 30}));
  EXPECT_EQ(run_mode("ceil"), (std::vector<uint8_t>{10, 20, 20, 30, 30, 30}));
}

TEST(Resize, LinearOnIntegersRounds) {
  Tensor x = Tensor::from_vector<int32_t>(DType::kInt32, {2}, {0, 3});
  Tensor out = run_one("Resize", {x, Tensor(), Tensor(), int64s({1}, {4})}, 13, [](Node* n) {
    set_string(n, "mode", "linear");
    set_string(n, "coordinate_transformation_mode", "align_corners");
  });
  EXPECT_EQ(values_of<int32_t>(out), (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(Resize, OpsetTenNearestCeilsWhenDownsampling) {
  // Resize-10: asymmetric; downsampling axes round up (1 / 0.6 = 1.67 -> 2).
  Tensor x = floats({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor out = run_one("Resize", {x, floats({4}, {1, 1, 0.6f, 0.6f})}, 10);
  EXPECT_EQ(out.shape(), (Shape{1, 1, 1, 2}));
  expect_near(out, {1, 3});
  out = run_one("Resize", {x, floats({4}, {1, 1, 1, 0.5f})}, 10,
                [](Node* n) { set_string(n, "mode", "linear"); });
  expect_near(out, {1, 3, 5, 7});
}

TEST(Resize, LinearFloat16) {
  std::vector<Float16> v = {Float16(1.0f), Float16(2.0f)};
  Tensor x = Tensor::from_vector<Float16>(DType::kFloat16, {2}, v);
  Tensor out = run_one("Resize", {x, Tensor(), floats({1}, {2})}, 13,
                       [](Node* n) { set_string(n, "mode", "linear"); });
  ASSERT_EQ(out.dtype(), DType::kFloat16);
  // half_pixel: x = -0.25, 0.25, 0.75, 1.25 -> 1, 1.25, 1.75, 2 (edges clamp).
  std::vector<float> got;
  for (int64_t i = 0; i < out.numel(); ++i) got.push_back(out.data<Float16>()[i]);
  EXPECT_EQ(got, (std::vector<float>{1, 1.25f, 1.75f, 2}));
}

TEST(Resize, ScalesAndSizesErrors) {
  Tensor x = floats({2}, {1, 2});
  expect_error(
      [&] {
        run_one("Resize", {x, Tensor(), floats({1}, {2}), int64s({1}, {4})}, 13);
      },
      "scales and sizes are both given");
  expect_error(
      [&] {
        run_one("Resize", {x, Tensor(), Tensor(), Tensor()}, 13);
      },
      "one of scales and sizes must be given");
  expect_error(
      [&] {
        run_one("Resize", {x, Tensor(), floats({2}, {1, 2})}, 13);
      },
      "scales has 2 values, expected one per axis of the rank-1 input");
  expect_error(
      [&] {
        run_one("Resize", {x, Tensor(), floats({1}, {-1})}, 13);
      },
      "must be a positive number");
  Tensor s = Tensor::from_strings({2}, {"a", "b"});
  expect_error(
      [&] {
        run_one("Resize", {s, Tensor(), floats({1}, {2})}, 13,
                [](Node* n) { set_string(n, "mode", "linear"); });
      },
      "linear mode needs a numeric input, got string");
  Tensor strings = run_one("Resize", {s, Tensor(), floats({1}, {2})}, 13);
  EXPECT_EQ(strings.strings(), (std::vector<std::string>{"a", "a", "b", "b"}));
}

TEST(Upsample, AttributeScalesLinearAndInputScalesNearest) {
  // Upsample-7, linear, asymmetric: x = o / 2 -> 1, 1.5, 2, 2 (clamped at the edge).
  Tensor out = run_one("Upsample", {floats({1, 2}, {1, 2})}, 7, [](Node* n) {
    set_string(n, "mode", "linear");
    set_floats(n, "scales", {1.0f, 2.0f});
  });
  EXPECT_EQ(out.shape(), (Shape{1, 4}));
  expect_near(out, {1, 1.5, 2, 2});
  Tensor b = Tensor::from_vector<uint8_t>(DType::kBool, {2, 1}, {1, 0});
  out = run_one("Upsample", {b, floats({2}, {1.5f, 3})}, 9);
  EXPECT_EQ(out.shape(), (Shape{3, 3}));
  EXPECT_EQ(values_of<bool>(out),
            (std::vector<bool>{true, true, true, true, true, true, false, false, false}));
  expect_error(
      [&] {
        run_one("Upsample", {floats({2}, {1, 2}), floats({1}, {0.5f})}, 9);
      },
      "is below 1");
}

TEST(Upsample, Version1HeightWidthScalesAndVersion10) {
  // The schema's example: nearest, both scales 2.
  Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  const std::vector<double> expected{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  Tensor out = run_one("Upsample", {x}, 1, [](Node* n) {
    set_float(n, "height_scale", 2.0f);
    set_float(n, "width_scale", 2.0f);
  });
  EXPECT_EQ(out.shape(), (Shape{1, 1, 4, 4}));
  expect_near(out, expected);
  // bilinear is Upsample-7's linear along H and W.
  out = run_one("Upsample", {floats({1, 1, 1, 2}, {1, 3})}, 1, [](Node* n) {
    set_string(n, "mode", "bilinear");
    set_float(n, "height_scale", 1.0f);
    set_float(n, "width_scale", 2.0f);
  });
  EXPECT_EQ(out.shape(), (Shape{1, 1, 1, 4}));
  expect_near(out, {1, 2, 3, 3});
  expect_error(
      [&] {
        run_one("Upsample", {x}, 1, [](Node* n) {
          set_string(n, "mode", "linear");
          set_float(n, "height_scale", 2.0f);
          set_float(n, "width_scale", 2.0f);
        });
      },
      "not one of nearest, bilinear");
  expect_error(
      [&] { run_one("Upsample", {x}, 1, [](Node* n) { set_float(n, "height_scale", 2); }); },
      "width_scale");
  // Version 10 only deprecated the op: scales are input 1, as at 9.
  expect_near(run_one("Upsample", {x, floats({4}, {1, 1, 2, 2})}, 10), expected);
  // The type rule reads version 1's scales.
  const ValueType x_type = ValueType::tensor(DType::kFloat, dims({1, 3, 2, 5}));
  EXPECT_EQ(type_text(infer_op_type("Upsample", {x_type}, 1,
                                    [](Node* n) {
                                      set_float(n, "height_scale", 2.0f);
                                      set_float(n, "width_scale", 1.5f);
                                    })),
            "float[1,3,4,7]");
}

// ---- GridSample ----

Tensor ramp2x2() {
  return floats({1, 1, 2, 2}, {0, 10, 20, 30});
}
Tensor grid(Shape shape, std::vector<float> values) {
  return floats(std::move(shape), values);
}
SetAttributes grid_attrs(std::string mode, std::string padding, int64_t align) {
  return [=](Node* n) {
    set_string(n, "mode", mode);
    set_string(n, "padding_mode", padding);
    set_int(n, "align_corners", align);
  };
}

TEST(GridSample, BilinearPaddingAndAlignCorners) {
  // Grid (0, 0) is the image centre; (1, 1) is the far corner: with align_corners 0 it
  // lies half a pixel outside, so zeros padding keeps a quarter of X[1][1].
  Tensor g = grid({1, 1, 2, 2}, {0, 0, 1, 1});
  Tensor out = run_one("GridSample", {ramp2x2(), g}, 16);
  EXPECT_EQ(out.shape(), (Shape{1, 1, 1, 2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{15, 7.5f}));
  out = run_one("GridSample", {ramp2x2(), g}, 16, grid_attrs("bilinear", "border", 0));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{15, 30}));
  out = run_one("GridSample", {ramp2x2(), g}, 16, grid_attrs("bilinear", "zeros", 1));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{15, 30}));
}

TEST(GridSample, ReflectionMirrorsAtTheBounds) {
  Tensor x = floats({1, 1, 1, 3}, {0, 10, 20});
  Tensor g = grid({1, 1, 2, 2}, {1.5f, 0, -1.5f, 0});
  // align_corners 1: bounds [0, 2]; x = 2.5 -> 1.5 and x = -0.5 -> 0.5.
  Tensor out = run_one("GridSample", {x, g}, 16, grid_attrs("bilinear", "reflection", 1));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{15, 5}));
  // align_corners 0: bounds [-0.5, 2.5]; x = 3.25 -> 1.75 and x = -1.25 -> 0.25.
  out = run_one("GridSample", {x, g}, 16, grid_attrs("bilinear", "reflection", 0));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{17.5f, 2.5f}));
}

TEST(GridSample, NearestCopiesAnyTypeIncludingStrings) {
  Tensor x = Tensor::from_strings({1, 1, 2, 2}, {"a", "b", "c", "d"});
  Tensor g = grid({1, 1, 3, 2}, {-1, -1, 3, 3, 0.2f, -0.2f});
  Tensor out = run_one("GridSample", {x, g}, 16, grid_attrs("nearest", "border", 0));
  EXPECT_EQ(out.strings(), (std::vector<std::string>{"a", "d", "b"}));
  out = run_one("GridSample", {x, g}, 16, grid_attrs("nearest", "zeros", 0));
  EXPECT_EQ(out.strings(), (std::vector<std::string>{"a", "", "b"}));
}

TEST(GridSample, IntegerInputsRoundAndHalfGrid) {
  Tensor x = Tensor::from_vector<int32_t>(DType::kInt32, {1, 1, 2, 2}, {0, 10, 20, 31});
  Tensor g = grid({1, 1, 1, 2}, {0, 0});
  Tensor out = run_one("GridSample", {x, g}, 16);
  EXPECT_EQ(out.dtype(), DType::kInt32);
  EXPECT_EQ(values_of<int32_t>(out), (std::vector<int32_t>{15}));  // 15.25 rounds to 15
  Tensor xh = Tensor::from_vector<Float16>(DType::kFloat16, {1, 1, 2, 2},
                                           {Float16(0), Float16(10), Float16(20), Float16(30)});
  Tensor gd = Tensor::from_vector<double>(DType::kDouble, {1, 1, 1, 2}, {0, 0});
  out = run_one("GridSample", {xh, gd}, 16);
  EXPECT_EQ(out.dtype(), DType::kFloat16);
  EXPECT_EQ(static_cast<float>(out.data<Float16>()[0]), 15.0f);
}

TEST(GridSample, BicubicKeepsConstantsWithBorderPadding) {
  Tensor x = floats({1, 2, 3, 3}, std::vector<float>(18, 2.0f));
  Tensor g = grid({1, 2, 1, 2}, {0.1f, -0.2f, 0.9f, 0.95f});
  Tensor out = run_one("GridSample", {x, g}, 16, grid_attrs("bicubic", "border", 1));
  EXPECT_EQ(out.shape(), (Shape{1, 2, 2, 1}));
  for (float v : values_of<float>(out)) EXPECT_NEAR(v, 2.0f, 1e-6);
}

TEST(GridSample, FarOutsideReadsZerosOrBorder) {
  Tensor g = grid({1, 1, 2, 2}, {1e30f, -1e30f, -3e20f, 0});
  Tensor out = run_one("GridSample", {ramp2x2(), g}, 16);
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{0, 0}));
  out = run_one("GridSample", {ramp2x2(), g}, 16, grid_attrs("bicubic", "zeros", 0));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{0, 0}));
  out = run_one("GridSample", {ramp2x2(), g}, 16, grid_attrs("nearest", "border", 1));
  EXPECT_EQ(values_of<float>(out),
            (std::vector<float>{10, 0}));  // (x 1, y 0) and (x 0, y 0.5 -> 0)
}

TEST(GridSample, EmptyGridAndErrors) {
  Tensor out = run_one("GridSample", {ramp2x2(), grid({1, 0, 2, 2}, {})}, 16);
  EXPECT_EQ(out.shape(), (Shape{1, 1, 0, 2}));
  std::string message = error_of([] {
    run_one("GridSample", {ramp2x2(), grid({1, 1, 1, 3}, {0, 0, 0})}, 16);
  });
  EXPECT_NE(message.find("grid must have shape [1, H_out, W_out, 2]"), std::string::npos)
      << message;
  message = error_of([] {
    run_one("GridSample", {ramp2x2(), grid({1, 1, 1, 2}, {0, 0})}, 16,
            grid_attrs("linear", "zeros", 0));
  });
  EXPECT_NE(message.find("mode is 'linear'"), std::string::npos) << message;
  message = error_of([] {
    run_one("GridSample", {ramp2x2(), grid({1, 1, 1, 2}, {0, 0})}, 16,
            grid_attrs("bilinear", "wrap", 0));
  });
  EXPECT_NE(message.find("padding_mode is 'wrap'"), std::string::npos) << message;
  message = error_of([] {
    run_one("GridSample", {Tensor::from_strings({1, 1, 1, 1}, {"a"}), grid({1, 1, 1, 2}, {0, 0})},
            16);
  });
  EXPECT_NE(message.find("bilinear mode needs a real number type"), std::string::npos) << message;
}

// ---- opset 18-28 additions ----

TEST(Pad, AxesInputPadsOnlyTheNamedAxes) {
  // Pad-18: pads [begin..., end...] for axes (-1) only.
  Tensor axes = int64s({1}, {-1});
  Tensor out =
      run_one("Pad", {floats({2, 2}, {1, 2, 3, 4}), int64s({2}, {1, 2}), Tensor(), axes}, 18);
  EXPECT_EQ(out.shape(), (Shape{2, 5}));
  expect_near(out, {0, 1, 2, 0, 0, 0, 3, 4, 0, 0});
  EXPECT_NE(run_error("Pad",
                      {floats({2, 2}, {1, 2, 3, 4}), int64s({4}, {1, 2, 0, 0}), Tensor(), axes}, 18)
                .find("pads has 4 values, expected 2 * 1"),
            std::string::npos);
}

TEST(Pad, WrapFromOpset19) {
  // The spec's example: pads [2, 1, 1, 1] wrap around like a torus.
  Tensor data = floats({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  Tensor out = run_one("Pad", {data, int64s({4}, {2, 1, 1, 1})}, 19, with_string("mode", "wrap"));
  EXPECT_EQ(out.shape(), (Shape{6, 4}));
  expect_near(out, {3.4, 2.3, 3.4, 2.3, 5.7, 4.5, 5.7, 4.5, 1.2, 1.0, 1.2, 1.0,
                    3.4, 2.3, 3.4, 2.3, 5.7, 4.5, 5.7, 4.5, 1.2, 1.0, 1.2, 1.0});
  EXPECT_NE(run_error("Pad", {data, int64s({4}, {2, 1, 1, 1})}, 18, with_string("mode", "wrap"))
                .find("mode 'wrap' is not one of constant, reflect, edge"),
            std::string::npos);
}

TEST(SpaceToDepth, CrdModeFromOpset28) {
  Tensor x = Tensor::from_vector<float>(DType::kFloat, {1, 2, 4, 4}, [] {
    std::vector<float> v(32);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
    return v;
  }());
  Tensor out =
      run_one("SpaceToDepth", {x}, 28, with_int("blocksize", 2, with_string("mode", "CRD")));
  EXPECT_EQ(out.shape(), (Shape{1, 8, 2, 2}));
  expect_near(out, {0,  2,  8,  10, 1,  3,  9,  11, 4,  6,  12, 14, 5,  7,  13, 15,
                    16, 18, 24, 26, 17, 19, 25, 27, 20, 22, 28, 30, 21, 23, 29, 31});
  // Before 28 there is no mode: always DCR (channel blocks outermost).
  Tensor dcr = run_one("SpaceToDepth", {x}, 13, with_int("blocksize", 2));
  EXPECT_EQ(dcr.data<float>()[4], 16.0f);
}

Tensor ramp4x4() {
  std::vector<float> v(16);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return floats({1, 1, 4, 4}, v);
}

TEST(Resize, AntialiasWidensTheFilterWhenDownsampling) {
  // Values from the ONNX reference (onnx 1.23, op_resize.py).
  Tensor none = floats({0}, {});
  Tensor out = run_one("Resize", {ramp4x4(), none, floats({4}, {1, 1, 0.6f, 0.6f})}, 18,
                       with_string("mode", "linear", with_int("antialias", 1)));
  EXPECT_EQ(out.shape(), (Shape{1, 1, 2, 2}));
  expect_near(out, {2.875, 4.5, 9.375, 11.0});
  out = run_one("Resize", {ramp4x4(), none, floats({4}, {1, 1, 0.5f, 0.5f})}, 18,
                with_string("mode", "cubic", with_int("antialias", 1)));
  expect_near(out, {3.451171875, 5.470703125, 11.529296875, 13.548828125});
  // Without antialias (or before 18) linear reads only the two neighbours.
  out = run_one("Resize", {ramp4x4(), none, floats({4}, {1, 1, 0.6f, 0.6f})}, 13,
                with_string("mode", "linear", with_int("antialias", 1)));
  EXPECT_NE(out.data<float>()[0], 2.875f);
}

TEST(Resize, HalfPixelSymmetricFromOpset19) {
  Tensor none = floats({0}, {});
  Tensor out =
      run_one("Resize", {ramp4x4(), none, floats({4}, {1, 1, 1, 0.6f})}, 19,
              with_string("mode", "linear",
                          with_string("coordinate_transformation_mode", "half_pixel_symmetric")));
  EXPECT_EQ(out.shape(), (Shape{1, 1, 4, 2}));
  expect_near(
      out, {1.6666667, 3.3333333, 5.6666665, 7.3333335, 9.666667, 11.333333, 13.666667, 15.333333});
  EXPECT_NE(run_error("Resize", {ramp4x4(), none, floats({4}, {1, 1, 1, 0.6f})}, 18,
                      with_string("coordinate_transformation_mode", "half_pixel_symmetric"))
                .find("'half_pixel_symmetric' is not supported"),
            std::string::npos);
}

TEST(Resize, AxesAndKeepAspectRatioPolicy) {
  Tensor none = floats({0}, {});
  // sizes (3, 7) for axes (2, 3), not_larger: scale min(3/4, 7/4) = 0.75 on both -> 3x3.
  Tensor out =
      run_one("Resize", {ramp4x4(), none, none, int64s({2}, {3, 7})}, 18,
              with_ints("axes", {2, 3}, with_string("keep_aspect_ratio_policy", "not_larger")));
  EXPECT_EQ(out.shape(), (Shape{1, 1, 3, 3}));
  expect_near(out, {1, 2, 4, 5, 6, 8, 13, 14, 16});
  out = run_one("Resize", {ramp4x4(), none, none, int64s({2}, {3, 7})}, 18,
                with_ints("axes", {3, 2}, with_string("keep_aspect_ratio_policy", "not_smaller")));
  EXPECT_EQ(out.shape(), (Shape{1, 1, 7, 7}));
  // scales for axes (3): only the last axis doubles.
  out = run_one("Resize", {ramp4x4(), none, floats({1}, {2})}, 18, with_ints("axes", {-1}));
  EXPECT_EQ(out.shape(), (Shape{1, 1, 4, 8}));
  EXPECT_NE(
      run_error("Resize", {ramp4x4(), none, floats({2}, {1, 2})}, 18, with_ints("axes", {1, 1}))
          .find("axes names axis 1 twice"),
      std::string::npos);
}

TEST(GridSample, VolumetricModesMatchTheReference) {
  // X [1, 1, 2, 3, 4] = 0..23; grid points (x, y, z); values from the ONNX reference.
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  Tensor x = floats({1, 1, 2, 3, 4}, v);
  Tensor g = floats({1, 1, 2, 2, 3}, {-1, -1, -1, 0.5, 0.2, -0.3, 1, 1, 1, 0.1, -0.9, 0.7});
  auto attrs = [](std::string mode, std::string padding, int64_t align) {
    return with_string("mode", mode,
                       with_string("padding_mode", padding, with_int("align_corners", align)));
  };
  Tensor out = run_one("GridSample", {x, g}, 20, attrs("linear", "zeros", 0));
  EXPECT_EQ(out.shape(), (Shape{1, 1, 1, 2, 2}));
  expect_near(out, {0.0, 10.1, 2.875, 7.124}, 1e-4f);
  expect_near(run_one("GridSample", {x, g}, 20, attrs("linear", "zeros", 1)),
              {0, 11.25, 23, 12.25});
  expect_near(run_one("GridSample", {x, g}, 20, attrs("nearest", "zeros", 0)), {0, 6, 0, 14});
  expect_near(run_one("GridSample", {x, g}, 22, attrs("cubic", "border", 0)),
              {-1.59375, 10.262749, 24.59375, 14.36639}, 1e-4f);
  // Opset 20 renamed the modes; opset 16 takes only 4-D X.
  EXPECT_NE(run_error("GridSample", {x, g}, 20, attrs("bilinear", "zeros", 0))
                .find("mode is 'bilinear', must be 'linear', 'nearest' or 'cubic'"),
            std::string::npos);
  EXPECT_NE(run_error("GridSample", {x, g}, 16).find("X must be 4-D"), std::string::npos);
}

TEST(AffineGrid, TwoAndThreeSpatialDims) {
  Tensor theta = floats({1, 2, 3}, {1, 0.5, 0.1, -0.2, 0.9, 0.3});
  Tensor out = run_one("AffineGrid", {theta, int64s({4}, {1, 1, 2, 3})}, 20);
  EXPECT_EQ(out.shape(), (Shape{1, 2, 3, 2}));
  expect_near(out, {-0.8166667, -0.0166666, -0.15, -0.15, 0.5166667, -0.2833333, -0.3166667,
                    0.8833333, 0.35, 0.75, 1.0166667, 0.6166667});
  out = run_one("AffineGrid", {theta, int64s({4}, {1, 1, 2, 3})}, 20, with_int("align_corners", 1));
  expect_near(out, {-1.4, -0.4, -0.4, -0.6, 0.6, -0.8, -0.4, 1.4, 0.6, 1.2, 1.6, 1.0});
  Tensor theta3 = floats({1, 3, 4}, {1, 0.5, 0.1, 0.2, -0.2, 0.9, 0.3, 0, 0.1, 0.2, 0.3, 0.4});
  out = run_one("AffineGrid", {theta3, int64s({5}, {1, 1, 2, 2, 3})}, 20);
  EXPECT_EQ(out.shape(), (Shape{1, 2, 2, 3, 3}));
  EXPECT_NEAR(out.data<float>()[0], -0.7666667f, 1e-5f);
  EXPECT_NEAR(out.data<float>()[35], 0.7166667f, 1e-5f);
  EXPECT_NE(run_error("AffineGrid", {theta, int64s({5}, {1, 1, 2, 2, 3})}, 20)
                .find("theta must have shape [1, 3, 4]"),
            std::string::npos);
}

TEST(CenterCropPad, CropsAndPadsAroundTheCentre) {
  std::vector<float> v(20);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  Tensor x = floats({4, 5}, v);
  Tensor out = run_one("CenterCropPad", {x, int64s({2}, {3, 8})}, 18);
  EXPECT_EQ(out.shape(), (Shape{3, 8}));
  expect_near(out, {0, 0, 1, 2, 3, 4, 0, 0, 0, 5, 6, 7, 8, 9, 0, 0, 0, 10, 11, 12, 13, 14, 0, 0});
  out = run_one("CenterCropPad", {x, int64s({1}, {2})}, 18, with_ints("axes", {-1}));
  EXPECT_EQ(out.shape(), (Shape{4, 2}));
  expect_near(out, {1, 2, 6, 7, 11, 12, 16, 17});
  EXPECT_NE(run_error("CenterCropPad", {x, int64s({1}, {2})}, 18).find("shape has 1 values"),
            std::string::npos);
}

TEST(TypeRules, AffineGridAndCenterCropPad) {
  const ValueType theta = ValueType::tensor(DType::kFloat, dims({2, 2, 3}));
  EXPECT_EQ(type_text(infer_op_type("AffineGrid", {theta, int64s({4}, {2, 3, 5, 7})}, 20)),
            "float[2,5,7,2]");
  // Without a constant size the rank still follows from theta.
  const ValueType size = ValueType::tensor(DType::kInt64, dims({4}));
  EXPECT_EQ(type_text(infer_op_type("AffineGrid", {theta, size}, 20)), "float[2,?,?,2]");
  const ValueType x = ValueType::tensor(DType::kUInt8, dims({10, 20, 3}));
  EXPECT_EQ(type_text(infer_op_type("CenterCropPad", {x, int64s({2}, {8, 24})}, 18,
                                    [](Node* n) {
                                      set_ints(n, "axes", {0, -2});
                                    })),
            "uint8[8,24,3]");
  EXPECT_EQ(type_text(infer_op_type("CenterCropPad", {x, size}, 18)), "uint8[?,?,?]");
  EXPECT_NE(error_of([&] {
              infer_op_type("CenterCropPad", {x, int64s({1}, {8})}, 18);
            }).find("shape has 1 values, expected one per axis (3)"),
            std::string::npos);
}

}  // namespace
}  // namespace onnxkit

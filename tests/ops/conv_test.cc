// Conv and ConvTranspose through a Session, checked against direct (non-GEMM) loops over
// strides, dilations, asymmetric pads, groups, auto_pad modes and 1-D to 3-D images.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/half.h"
#include "op_test_util.h"
#include "type_rule_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// Deterministic, irregular values in [-1, 1).
Tensor pattern(Shape shape, int seed) {
  std::vector<float> values(static_cast<size_t>(shape_numel(shape)));
  uint32_t state = 2654435761u * static_cast<uint32_t>(seed + 1);
  for (float& v : values) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return Tensor::from_vector<float>(DType::kFloat, std::move(shape), values);
}

std::vector<int64_t> unravel(int64_t index, const Shape& dims) {
  std::vector<int64_t> out(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    out[d] = index % dims[d];
    index /= dims[d];
  }
  return out;
}
int64_t ravel(const std::vector<int64_t>& index, const Shape& dims) {
  int64_t flat = 0;
  for (size_t d = 0; d < dims.size(); ++d) flat = flat * dims[d] + index[d];
  return flat;
}

struct Params {
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;  // empty: defaults
};

// Direct convolution with explicit pads; `out_spatial` is the expected output size.
std::vector<float> direct_conv(const Tensor& x, const Tensor& w, const float* bias, const Params& p,
                               const Shape& out_spatial) {
  const size_t rank = x.rank() - 2;
  const Shape in(x.shape().begin() + 2, x.shape().end());
  const Shape kernel(w.shape().begin() + 2, w.shape().end());
  const int64_t batch = x.shape()[0], channels = x.shape()[1], maps = w.shape()[0];
  const int64_t cg = channels / p.group, mg = maps / p.group;
  const int64_t out_size = shape_numel(out_spatial), k_size = shape_numel(kernel);
  const int64_t in_size = shape_numel(in);
  std::vector<float> y(static_cast<size_t>(batch * maps * out_size));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t m = 0; m < maps; ++m) {
      const int64_t g = m / mg;
      for (int64_t o = 0; o < out_size; ++o) {
        const auto opos = unravel(o, out_spatial);
        double sum = bias ? bias[m] : 0.0;
        for (int64_t c = 0; c < cg; ++c) {
          for (int64_t k = 0; k < k_size; ++k) {
            const auto kpos = unravel(k, kernel);
            std::vector<int64_t> ipos(rank);
            bool inside = true;
            for (size_t d = 0; d < rank; ++d) {
              const int64_t s = p.strides.empty() ? 1 : p.strides[d];
              const int64_t dl = p.dilations.empty() ? 1 : p.dilations[d];
              const int64_t pad = p.pads.empty() ? 0 : p.pads[d];
              ipos[d] = opos[d] * s - pad + kpos[d] * dl;
              inside = inside && ipos[d] >= 0 && ipos[d] < in[d];
            }
            if (!inside) continue;
            const float xv =
                x.data<float>()[(n * channels + g * cg + c) * in_size + ravel(ipos, in)];
            const float wv = w.data<float>()[(m * cg + c) * k_size + k];
            sum += static_cast<double>(xv) * wv;
          }
        }
        y[static_cast<size_t>((n * maps + m) * out_size + o)] = static_cast<float>(sum);
      }
    }
  }
  return y;
}

// Direct transposed convolution (scatter), explicit pads, output size given.
std::vector<float> direct_conv_transpose(const Tensor& x, const Tensor& w, const float* bias,
                                         const Params& p, const Shape& out_spatial) {
  const size_t rank = x.rank() - 2;
  const Shape in(x.shape().begin() + 2, x.shape().end());
  const Shape kernel(w.shape().begin() + 2, w.shape().end());
  const int64_t batch = x.shape()[0], channels = x.shape()[1];
  const int64_t mg = w.shape()[1], maps = mg * p.group, cg = channels / p.group;
  const int64_t out_size = shape_numel(out_spatial), k_size = shape_numel(kernel);
  const int64_t in_size = shape_numel(in);
  std::vector<double> y(static_cast<size_t>(batch * maps * out_size));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t m = 0; m < maps; ++m) {
      for (int64_t o = 0; o < out_size; ++o) {
        y[static_cast<size_t>((n * maps + m) * out_size + o)] = bias ? bias[m] : 0.0;
      }
    }
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t g = c / cg;
      for (int64_t i = 0; i < in_size; ++i) {
        const auto ipos = unravel(i, in);
        const float xv = x.data<float>()[(n * channels + c) * in_size + i];
        for (int64_t m = 0; m < mg; ++m) {
          for (int64_t k = 0; k < k_size; ++k) {
            const auto kpos = unravel(k, kernel);
            std::vector<int64_t> opos(rank);
            bool inside = true;
            for (size_t d = 0; d < rank; ++d) {
              const int64_t s = p.strides.empty() ? 1 : p.strides[d];
              const int64_t dl = p.dilations.empty() ? 1 : p.dilations[d];
              const int64_t pad = p.pads.empty() ? 0 : p.pads[d];
              opos[d] = ipos[d] * s - pad + kpos[d] * dl;
              inside = inside && opos[d] >= 0 && opos[d] < out_spatial[d];
            }
            if (!inside) continue;
            const float wv = w.data<float>()[(c * mg + m) * k_size + k];
            y[static_cast<size_t>((n * maps + g * mg + m) * out_size + ravel(opos, out_spatial))] +=
                static_cast<double>(xv) * wv;
          }
        }
      }
    }
  }
  return std::vector<float>(y.begin(), y.end());
}

void expect_near(const Tensor& got, const Shape& shape, const std::vector<float>& expected) {
  ASSERT_EQ(got.shape(), shape);
  ASSERT_EQ(got.numel(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(got.data<float>()[i], expected[i], 1e-4f) << "element " << i;
  }
}

SetAttributes attrs(const Params& p, SetAttributes more = {}) {
  return [p, more](Node* n) {
    if (p.group != 1) set_int(n, "group", p.group);
    if (!p.strides.empty()) set_ints(n, "strides", p.strides);
    if (!p.dilations.empty()) set_ints(n, "dilations", p.dilations);
    if (!p.pads.empty()) set_ints(n, "pads", p.pads);
    if (more) more(n);
  };
}

Shape concat(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Runs Conv with `p` and compares against the direct loop.
void check_conv(const Shape& x_shape, const Shape& w_shape, const Params& p,
                const Shape& out_spatial, bool with_bias) {
  const Tensor x = pattern(x_shape, 1);
  const Tensor w = pattern(w_shape, 2);
  const Tensor b = pattern({w_shape[0]}, 3);
  std::vector<Tensor> inputs{x, w};
  if (with_bias) inputs.push_back(b);
  const Tensor out = run_one("Conv", inputs, 11, attrs(p));
  expect_near(out, concat({x_shape[0], w_shape[0]}, out_spatial),
              direct_conv(x, w, with_bias ? b.data<float>() : nullptr, p, out_spatial));
}

TEST(Conv, TwoDimensionalStridesDilationsAsymmetricPadsGroups) {
  Params p;
  p.group = 2;
  p.strides = {2, 1};
  p.dilations = {1, 2};
  p.pads = {1, 0, 2, 1};
  // H: (7 + 3 - 3) / 2 + 1 = 4; W: (6 + 1 - 5) / 1 + 1 = 3.
  check_conv({2, 4, 7, 6}, {6, 2, 3, 3}, p, {4, 3}, true);
}

TEST(Conv, OneAndThreeDimensional) {
  Params p1;
  p1.strides = {3};
  p1.pads = {2, 1};
  check_conv({1, 3, 11}, {2, 3, 4}, p1, {4}, true);  // (11 + 3 - 4) / 3 + 1 = 4
  Params p3;
  p3.strides = {1, 2, 1};
  p3.dilations = {2, 1, 1};
  p3.pads = {1, 1, 0, 0, 1, 1};
  check_conv({1, 2, 5, 4, 3}, {3, 2, 2, 3, 2}, p3, {4, 2, 3}, false);
}

TEST(Conv, PointwiseAndDepthwise) {
  Params pointwise;
  pointwise.group = 2;
  check_conv({2, 4, 3, 5}, {6, 2, 1, 1}, pointwise, {3, 5}, true);
  Params depthwise;
  depthwise.group = 3;
  depthwise.pads = {1, 1, 1, 1};
  check_conv({1, 3, 4, 4}, {3, 1, 3, 3}, depthwise, {4, 4}, true);
}

TEST(Conv, LargeImageIsDoneInChunks) {
  Params p;
  p.pads = {1, 1, 1, 1};
  // 72 rows x 40,000 columns exceeds one column buffer.
  check_conv({1, 8, 200, 200}, {3, 8, 3, 3}, p, {200, 200}, true);
}

TEST(Conv, AutoPadModes) {
  const Tensor x = pattern({1, 1, 5, 4}, 4);
  const Tensor w = pattern({1, 1, 2, 3}, 5);
  auto run = [&](const std::string& mode) {
    return run_one("Conv", {x, w}, 11, [&](Node* n) {
      set_string(n, "auto_pad", mode);
      set_ints(n, "strides", {2, 1});
    });
  };
  // H: out = ceil(5 / 2) = 3, total = (3 - 1) * 2 + 2 - 5 = 1; W: out 4, total 2.
  Params upper;
  upper.strides = {2, 1};
  upper.pads = {0, 1, 1, 1};
  expect_near(run("SAME_UPPER"), {1, 1, 3, 4}, direct_conv(x, w, nullptr, upper, {3, 4}));
  Params lower = upper;
  lower.pads = {1, 1, 0, 1};
  expect_near(run("SAME_LOWER"), {1, 1, 3, 4}, direct_conv(x, w, nullptr, lower, {3, 4}));
  Params valid;
  valid.strides = {2, 1};
  expect_near(run("VALID"), {1, 1, 2, 2}, direct_conv(x, w, nullptr, valid, {2, 2}));
}

TEST(Conv, KernelLargerThanInputWithPadding) {
  Params p;
  p.pads = {2, 2};
  check_conv({1, 2, 1}, {2, 2, 5}, p, {1}, true);
}

TEST(Conv, DoubleAndFloat16) {
  const Tensor x = Tensor::from_vector<double>(DType::kDouble, {1, 1, 3}, {1, 2, 3});
  const Tensor w = Tensor::from_vector<double>(DType::kDouble, {1, 1, 2}, {0.5, -1});
  const Tensor b = Tensor::from_vector<double>(DType::kDouble, {1}, {0.25});
  const Tensor out = run_one("Conv", {x, w, b}, 11);
  ASSERT_EQ(out.dtype(), DType::kDouble);
  EXPECT_EQ(std::vector<double>(out.data<double>(), out.data<double>() + 2),
            (std::vector<double>{-1.25, -1.75}));

  std::vector<Float16> hx{Float16(1.0f), Float16(2.0f), Float16(3.0f)};
  std::vector<Float16> hw{Float16(0.5f), Float16(-1.0f)};
  const Tensor hout = run_one("Conv",
                              {Tensor::from_vector<Float16>(DType::kFloat16, {1, 1, 3}, hx),
                               Tensor::from_vector<Float16>(DType::kFloat16, {1, 1, 2}, hw)},
                              1);
  ASSERT_EQ(hout.dtype(), DType::kFloat16);
  EXPECT_EQ(static_cast<float>(hout.data<Float16>()[0]), -1.5f);
  EXPECT_EQ(static_cast<float>(hout.data<Float16>()[1]), -2.0f);
}

TEST(Conv, EmptyBatch) {
  const Tensor out = run_one("Conv", {pattern({0, 2, 4, 4}, 1), pattern({3, 2, 3, 3}, 2)}, 11);
  EXPECT_EQ(out.shape(), (Shape{0, 3, 2, 2}));
}

std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Conv, Errors) {
  EXPECT_NE(error_of([] {
              run_one("Conv", {pattern({1, 3, 4, 4}, 1), pattern({2, 2, 3, 3}, 2)}, 11);
            }).find("X has 3 channels but W expects 2 per group x group 1 = 2"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run_one("Conv", {pattern({1, 2, 4, 4}, 1), pattern({2, 2, 3, 3}, 2)}, 11,
                      [](Node* n) {
                        set_ints(n, "kernel_shape", {2, 2});
                      });
            }).find("kernel_shape [2,2] does not match W's spatial dims [3,3]"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run_one("Conv", {pattern({1, 1, 2}, 1), pattern({1, 1, 3}, 2)}, 11);
            }).find("kernel extent 3 on spatial axis 0 exceeds the padded input size 2"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run_one("Conv", {pattern({1, 1, 4}, 1), pattern({1, 1, 3}, 2)}, 11,
                      [](Node* n) { set_ints(n, "pads", {1}); });
            }).find("pads has 1 values but X has 1 spatial dims (needs 2)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run_one("Conv", {pattern({1, 1, 4}, 1), pattern({1, 1, 3}, 2), pattern({2}, 3)}, 11);
            }).find("B must have shape [1]"),
            std::string::npos);
}

// ---------------------------------------------------------------------------- ConvTranspose

void check_conv_transpose(const Shape& x_shape, const Shape& w_shape, const Params& p,
                          const Shape& out_spatial, int64_t opset, SetAttributes more = {},
                          Params reference = {}) {
  const Tensor x = pattern(x_shape, 6);
  const Tensor w = pattern(w_shape, 7);
  const Tensor b = pattern({w_shape[1] * p.group}, 8);
  const Tensor out = run_one("ConvTranspose", {x, w, b}, opset, attrs(p, more));
  if (reference.strides.empty() && reference.pads.empty()) reference = p;
  reference.group = p.group;
  expect_near(out, concat({x_shape[0], w_shape[1] * p.group}, out_spatial),
              direct_conv_transpose(x, w, b.data<float>(), reference, out_spatial));
}

TEST(ConvTranspose, TwoDimensionalWithEverything) {
  Params p;
  p.group = 2;
  p.strides = {2, 3};
  p.dilations = {2, 1};
  p.pads = {1, 0, 0, 2};
  // H: 2 * (3 - 1) + 1 + (2 * 2 + 1) - 1 - 0 = 9; W: 3 * (4 - 1) + 0 + 2 - 0 - 2 = 9.
  check_conv_transpose({2, 4, 3, 4}, {4, 3, 3, 2}, p, {9, 9}, 11, [](Node* n) {
    set_ints(n, "output_padding", {1, 0});
  });
}

TEST(ConvTranspose, OneAndThreeDimensional) {
  Params p1;
  p1.strides = {2};
  check_conv_transpose({1, 2, 5}, {2, 3, 3}, p1, {11}, 11);
  Params p3;
  p3.strides = {1, 2, 2};
  p3.pads = {0, 1, 0, 1, 0, 1};
  check_conv_transpose({1, 1, 2, 3, 2}, {1, 2, 2, 2, 3}, p3, {2, 5, 4}, 11);
}

TEST(ConvTranspose, OutputShapeOddPaddingSideDependsOnOpset) {
  // full = 2 * (3 - 1) + 3 = 7, output_shape 6: one unit of padding.
  Params p;
  p.strides = {2};
  auto shape = [](Node* n) { set_ints(n, "output_shape", {6}); };
  Params at_begin;
  at_begin.strides = {2};
  at_begin.pads = {1, 0};
  check_conv_transpose({1, 1, 3}, {1, 1, 3}, p, {6}, 11, shape, at_begin);
  Params at_end;
  at_end.strides = {2};
  at_end.pads = {0, 1};
  check_conv_transpose({1, 1, 3}, {1, 1, 3}, p, {6}, 1, shape, at_end);
  // The (N, C, spatial...) spelling of output_shape is accepted too.
  check_conv_transpose(
      {1, 1, 3}, {1, 1, 3}, p, {6}, 11,
      [](Node* n) {
        set_ints(n, "output_shape", {1, 1, 6});
      },
      at_begin);
}

TEST(ConvTranspose, AutoPadSame) {
  // out = 3 * 2 = 6, full = 7: total 1, the odd unit at the end for SAME_UPPER.
  Params p;
  p.strides = {2};
  Params upper;
  upper.strides = {2};
  upper.pads = {0, 1};
  check_conv_transpose(
      {1, 2, 3}, {2, 1, 3}, p, {6}, 11, [](Node* n) { set_string(n, "auto_pad", "SAME_UPPER"); },
      upper);
  Params lower;
  lower.strides = {2};
  lower.pads = {1, 0};
  check_conv_transpose(
      {1, 2, 3}, {2, 1, 3}, p, {6}, 11, [](Node* n) { set_string(n, "auto_pad", "SAME_LOWER"); },
      lower);
}

TEST(ConvTranspose, LargeImageIsDoneInChunks) {
  Params p;
  p.strides = {2, 2};
  p.pads = {1, 1, 1, 1};
  // rows = 2 * 16 = 32, input 300 x 300: more columns than one buffer holds.
  check_conv_transpose({1, 2, 300, 300}, {2, 2, 4, 4}, p, {600, 600}, 11);
}

TEST(ConvTranspose, Errors) {
  EXPECT_NE(error_of([] {
              run_one("ConvTranspose", {pattern({1, 3, 4}, 1), pattern({2, 2, 3}, 2)}, 11);
            }).find("W has 2 input channels but X has 3"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run_one("ConvTranspose", {pattern({1, 1, 2}, 1), pattern({1, 1, 2}, 2)}, 11,
                      [](Node* n) {
                        set_ints(n, "pads", {2, 2});
                      });
            }).find("output size on spatial axis 0 would be -1"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run_one("ConvTranspose", {pattern({1, 1, 2}, 1), pattern({1, 1, 2}, 2)}, 11,
                      [](Node* n) { set_string(n, "auto_pad", "SAME"); });
            }).find("auto_pad 'SAME' is not one of"),
            std::string::npos);
  // Dilations and strides past int64 are an error, not a wrapped output size (fuzz:
  // conv_transpose_extent_overflow).
  EXPECT_NE(error_of([] {
              run_one(
                  "ConvTranspose", {pattern({1, 1, 2}, 1), pattern({1, 1, 2}, 2)}, 11,
                  [](Node* n) { set_ints(n, "dilations", {std::numeric_limits<int64_t>::max()}); });
            }).find("overflows int64"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run_one(
                  "ConvTranspose", {pattern({1, 1, 3}, 1), pattern({1, 1, 2}, 2)}, 11,
                  [](Node* n) { set_ints(n, "strides", {std::numeric_limits<int64_t>::max()}); });
            }).find("overflows int64"),
            std::string::npos);
}

// ---- Col2Im and DeformConv (values from the ONNX reference, onnx 1.23) ----

TEST(Col2Im, SumsOverlappingBlocks) {
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  // 2x2 blocks over a 3x4 image: 2x3 sliding blocks.
  Tensor out =
      run_one("Col2Im", {floats({1, 4, 6}, v), int64s({2}, {3, 4}), int64s({2}, {2, 2})}, 18);
  EXPECT_EQ(out.shape(), (Shape{1, 1, 3, 4}));
  expect_near(out, {1, 1, 3, 4}, {1, 9, 11, 9, 17, 48, 52, 33, 16, 39, 41, 24});
  // Pads and strides: blocks falling in the padding are dropped.
  out = run_one(
      "Col2Im",
      {floats({1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), int64s({2}, {2, 3}), int64s({2}, {1, 2})}, 18,
      with_ints("pads", {0, 1, 0, 1}, with_ints("strides", {2, 1})));
  EXPECT_EQ(out.shape(), (Shape{1, 1, 2, 3}));
  expect_near(out, {1, 1, 2, 3}, {7, 9, 11, 0, 0, 0});
  EXPECT_NE(
      run_error(
          "Col2Im",
          {floats({1, 4, 5}, std::vector<float>(20)), int64s({2}, {3, 4}), int64s({2}, {2, 2})}, 18)
          .find("input dim 2 is 5, but image_shape [3,4] has 6 sliding blocks"),
      std::string::npos);
}

TEST(DeformConv, OffsetsMoveTheTapsAndMaskScalesThem) {
  std::vector<float> v(9);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  Tensor x = floats({1, 1, 3, 3}, v);
  Tensor w = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  std::vector<float> offsets(32, 0.0f);
  offsets[0] = 0.5f;    // tap (0, 0) at output (0, 0): down half a row
  offsets[4] = -0.25f;  // and left a quarter column
  offsets[31] = 1.5f;   // tap (1, 1) at output (1, 1): right 1.5 columns, partly outside
  offsets[10] = -2.0f;  // tap (0, 1) at output (1, 0): up 2 rows, outside
  Tensor offset = floats({1, 8, 2, 2}, offsets);
  // Zero offsets are a plain convolution.
  Tensor plain = run_one("DeformConv", {x, w, floats({1, 8, 2, 2}, std::vector<float>(32))}, 19);
  expect_near(plain, {1, 1, 2, 2}, {37, 47, 67, 77});
  expect_near(run_one("DeformConv", {x, w, offset}, 19), {1, 1, 2, 2}, {37.875, 47, 57, 41});
  std::vector<float> mask;
  for (int i = 0; i < 4; ++i) mask.insert(mask.end(), {0.5f, 1, 1, 0.25f});
  expect_near(
      run_one("DeformConv", {x, w, offset, floats({1}, {0.5f}), floats({1, 4, 2, 2}, mask)}, 22),
      {1, 1, 2, 2}, {19.4375, 47.5, 57.5, 10.75});
  EXPECT_NE(run_error("DeformConv", {x, w, floats({1, 4, 2, 2}, std::vector<float>(16))}, 19)
                .find("offset has shape [1,4,2,2], expected [1,8,2,2]"),
            std::string::npos);
}

TEST(TypeRules, Col2ImAndDeformConv) {
  const ValueType cols = ValueType::tensor(DType::kFloat, dims({2, 12, 6}));
  EXPECT_EQ(
      type_text(infer_op_type("Col2Im", {cols, int64s({2}, {3, 4}), int64s({2}, {2, 2})}, 18)),
      "float[2,3,3,4]");
  const ValueType x = ValueType::tensor(DType::kFloat, dims({1, 4, 9, 9}));
  const ValueType w = ValueType::tensor(DType::kFloat, dims({8, 4, 3, 3}));
  const ValueType offset = ValueType::tensor(DType::kFloat, dims({1, 18, 7, 7}));
  EXPECT_EQ(type_text(infer_op_type("DeformConv", {x, w, offset}, 22)), "float[1,8,7,7]");
}

// Values from the ONNX reference (onnx 1.23).
TEST(CausalConvWithState, PastStateBiasAndSilu) {
  Tensor x = floats({1, 2, 4}, {1, 2, 3, 4, 0.5, -1, 2, 0});
  Tensor w = floats({2, 1, 3}, {1, 0.5, -1, 2, 1, 0.25});
  std::vector<Tensor> out = run_op("CausalConvWithState", {x, w}, 27, {}, 2);
  expect_near(out[0], {1, 2, 4}, {-1, -1.5, -1, -0.5, 0.125, 0.25, 0.5, 0});
  expect_near(out[1], {1, 2, 2}, {3, 4, 2, 0});  // the last k - 1 inputs
  out = run_op("CausalConvWithState",
               {x, w, floats({2}, {0.1f, -0.2f}), floats({1, 2, 2}, {3, -2, 1, 1})}, 27,
               with_string("activation", "silu"), 2);
  expect_near(out[0], {1, 2, 4},
              {0.82528615, -0.10980457, -0.26014543, -0.16052495, 2.7760255, 1.8161925, 0.17233276,
               -0.09003320});
  EXPECT_NE(
      run_error("CausalConvWithState",
                {x, floats({2, 1, 3}, std::vector<float>(6)), Tensor(), floats({1, 2, 1}, {0, 0})},
                27, {}, 2)
          .find("past_state must have shape [1,2,2]"),
      std::string::npos);
}

}  // namespace
}  // namespace onnxkit

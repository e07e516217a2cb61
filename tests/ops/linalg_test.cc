// MatMul, Gemm and Einsum through a Session: broadcasting corners, 1-D operands, integer
// and half types, empty tensors, opset differences and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/half.h"
#include "onnxkit/session.h"
#include "op_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// Values start, start + step, ... filling `shape`.
Tensor ramp(Shape shape, float start = 0, float step = 1) {
  std::vector<float> values(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = start + step * static_cast<float>(i);
  return floats(std::move(shape), values);
}
void expect_floats(const Tensor& t, const Shape& shape, const std::vector<float>& expected,
                   float tolerance = 1e-5f) {
  ASSERT_EQ(t.dtype(), DType::kFloat);
  ASSERT_EQ(t.shape(), shape);
  const auto got = values_of<float>(t);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tolerance) << i;
}

// ---------------------------------------------------------------------------- MatMul

TEST(MatMul, TwoByThreeTimesThreeByTwo) {
  const Tensor out = run_one("MatMul", {ramp({2, 3}), ramp({3, 2})}, 13);
  expect_floats(out, {2, 2}, {10, 13, 28, 40});
}

TEST(MatMul, VectorsArePromotedAndSqueezed) {
  // 1-D x 1-D: dot product, a scalar.
  expect_floats(run_one("MatMul", {ramp({3}), ramp({3}, 1)}, 13), {}, {8});
  // 1-D x 3-D: [3] x [2, 3, 2] -> [2, 2].
  expect_floats(run_one("MatMul", {ramp({3}), ramp({2, 3, 2})}, 13), {2, 2}, {10, 13, 28, 31});
  // 3-D x 1-D: [2, 2, 3] x [3] -> [2, 2].
  expect_floats(run_one("MatMul", {ramp({2, 2, 3}), floats({3}, {1, 0, -1})}, 13), {2, 2},
                {-2, -2, -2, -2});
}

TEST(MatMul, BatchDimsBroadcast) {
  // [2, 1, 2, 3] x [3, 3, 2] -> [2, 3, 2, 2]; checked against a direct loop.
  const Tensor a = ramp({2, 1, 2, 3}, -3, 0.5f);
  const Tensor b = ramp({3, 3, 2}, 1, -0.25f);
  const Tensor out = run_one("MatMul", {a, b}, 13);
  ASSERT_EQ(out.shape(), (Shape{2, 3, 2, 2}));
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  const float* po = out.data<float>();
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int r = 0; r < 2; ++r) {
        for (int c = 0; c < 2; ++c) {
          float sum = 0;
          for (int k = 0; k < 3; ++k) sum += pa[i * 6 + r * 3 + k] * pb[j * 6 + k * 2 + c];
          EXPECT_NEAR(po[((i * 3 + j) * 2 + r) * 2 + c], sum, 1e-5f);
        }
      }
    }
  }
}

TEST(MatMul, SharedRightMatrixFoldsBatches) {
  // B without batch dims: [2, 2, 2] x [2, 1].
  expect_floats(run_one("MatMul", {ramp({2, 2, 2}), floats({2, 1}, {1, -1})}, 13), {2, 2, 1},
                {-1, -1, -1, -1});
  // A broadcast over B's batches: [2, 2] x [3, 2, 1].
  expect_floats(run_one("MatMul", {ramp({2, 2}), ramp({3, 2, 1})}, 13), {3, 2, 1},
                {1, 3, 3, 13, 5, 23});
}

TEST(MatMul, IntegerTypes) {
  const Tensor a = Tensor::from_vector<int32_t>(DType::kInt32, {2, 2}, {1, -2, 3, 4});
  const Tensor b = Tensor::from_vector<int32_t>(DType::kInt32, {2, 2}, {5, 6, -7, 8});
  const Tensor out = run_one("MatMul", {a, b}, 13);
  ASSERT_EQ(out.dtype(), DType::kInt32);
  EXPECT_EQ(values_of<int32_t>(out), (std::vector<int32_t>{19, -10, -13, 50}));

  const Tensor c = Tensor::from_vector<int64_t>(DType::kInt64, {1, 2}, {int64_t{1} << 40, 3});
  const Tensor d = Tensor::from_vector<int64_t>(DType::kInt64, {2, 1}, {4, -5});
  EXPECT_EQ(values_of<int64_t>(run_one("MatMul", {c, d}, 13)),
            (std::vector<int64_t>{(int64_t{1} << 42) - 15}));

  const Tensor e = Tensor::from_vector<uint64_t>(DType::kUInt64, {2}, {7, 9});
  EXPECT_EQ(values_of<uint64_t>(run_one("MatMul", {e, e}, 13)), (std::vector<uint64_t>{130}));
  const Tensor f = Tensor::from_vector<uint32_t>(DType::kUInt32, {1, 1}, {4000000000u});
  const Tensor g = Tensor::from_vector<uint32_t>(DType::kUInt32, {1, 1}, {2});
  EXPECT_EQ(values_of<uint32_t>(run_one("MatMul", {f, g}, 13)),
            (std::vector<uint32_t>{3705032704u}));  // wraps modulo 2^32
}

TEST(MatMul, HalfTypesComputeInFloat) {
  std::vector<Float16> ha, hb;
  for (float v : {1.5f, -2.0f, 0.25f, 4.0f}) ha.emplace_back(v);
  for (float v : {2.0f, 1.0f, -1.0f, 0.5f}) hb.emplace_back(v);
  const Tensor out = run_one("MatMul",
                             {Tensor::from_vector<Float16>(DType::kFloat16, {2, 2}, ha),
                              Tensor::from_vector<Float16>(DType::kFloat16, {2, 2}, hb)},
                             13);
  ASSERT_EQ(out.dtype(), DType::kFloat16);
  const auto got = values_of<Float16>(out);
  EXPECT_EQ(static_cast<float>(got[0]), 5.0f);
  EXPECT_EQ(static_cast<float>(got[1]), 0.5f);
  EXPECT_EQ(static_cast<float>(got[2]), -3.5f);
  EXPECT_EQ(static_cast<float>(got[3]), 2.25f);

  std::vector<BFloat16> ba{BFloat16(3.0f), BFloat16(-1.0f)};
  const Tensor bout = run_one("MatMul",
                              {Tensor::from_vector<BFloat16>(DType::kBFloat16, {1, 2}, ba),
                               Tensor::from_vector<BFloat16>(DType::kBFloat16, {2, 1}, ba)},
                              13);
  ASSERT_EQ(bout.dtype(), DType::kBFloat16);
  EXPECT_EQ(static_cast<float>(values_of<BFloat16>(bout)[0]), 10.0f);
}

TEST(MatMul, EmptyDims) {
  // K = 0: the product is all zeros.
  expect_floats(run_one("MatMul", {ramp({2, 0}), ramp({0, 3})}, 13), {2, 3}, {0, 0, 0, 0, 0, 0});
  // M = 0 and a zero batch: empty outputs with the right shapes.
  EXPECT_EQ(run_one("MatMul", {ramp({0, 2}), ramp({2, 3})}, 13).shape(), (Shape{0, 3}));
  EXPECT_EQ(run_one("MatMul", {ramp({0, 2, 2}), ramp({2, 3})}, 13).shape(), (Shape{0, 2, 3}));
}

TEST(MatMul, Errors) {
  EXPECT_NE(error_of([] {
              run_one("MatMul", {ramp({2, 3}), ramp({2, 3})}, 13);
            }).find("inner dimensions differ: A has shape [2,3] and B has shape [2,3] (3 vs 2)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run_one("MatMul", {ramp({2, 1, 2}), ramp({3, 2, 1})}, 13);
            }).find("do not broadcast"),
            std::string::npos);
  const Tensor b = Tensor::from_vector<int8_t>(DType::kInt8, {1, 1}, {1});
  EXPECT_NE(error_of([&] {
              run_one("MatMul", {b, b}, 13);
            }).find("type int8 is not supported"),
            std::string::npos);
}

// ---------------------------------------------------------------------------- Gemm

TEST(Gemm, AllAttributesWithRowBias) {
  // A^T is [[0, 2], [1, 3]]... A = [[0, 1], [2, 3]] stored [2, 2]; transA makes [[0, 2], [1, 3]].
  const Tensor a = ramp({2, 2});
  const Tensor b = ramp({3, 2});  // transB -> [[0, 2, 4], [1, 3, 5]]
  const Tensor c = floats({3}, {1, 2, 3});
  const Tensor out = run_one("Gemm", {a, b, c}, 13, [](Node* n) {
    set_int(n, "transA", 1);
    set_int(n, "transB", 1);
    set_float(n, "alpha", 0.5f);
    set_float(n, "beta", 2.0f);
  });
  // A^T B^T = [[2, 6, 10], [3, 11, 19]]; * 0.5 + 2 * [1, 2, 3].
  expect_floats(out, {2, 3}, {3, 7, 11, 3.5f, 9.5f, 15.5f});
}

TEST(Gemm, BiasBroadcastsFromColumnAndScalar) {
  const Tensor a = ramp({2, 2});
  const Tensor b = floats({2, 2}, {1, 0, 0, 1});
  expect_floats(run_one("Gemm", {a, b, floats({2, 1}, {10, 20})}, 13), {2, 2}, {10, 11, 22, 23});
  expect_floats(run_one("Gemm", {a, b, floats({}, {5})}, 13), {2, 2}, {5, 6, 7, 8});
  expect_floats(run_one("Gemm", {a, b, floats({1, 1}, {-1})}, 7), {2, 2}, {-1, 0, 1, 2});
}

TEST(Gemm, CIsOptionalFromOpset11Only) {
  const Tensor a = ramp({1, 2});
  const Tensor b = ramp({2, 1}, 1);
  expect_floats(run_one("Gemm", {a, b}, 11), {1, 1}, {2});
  EXPECT_NE(error_of([&] {
              run_one("Gemm", {a, b}, 9);
            }).find("input C is required"),
            std::string::npos);
}

TEST(Gemm, Opset6BroadcastAttribute) {
  const Tensor a = ramp({2, 2});
  const Tensor b = floats({2, 2}, {1, 0, 0, 1});
  const Tensor c = floats({2}, {1, 2});
  expect_floats(run_one("Gemm", {a, b, c}, 6, [](Node* n) { set_int(n, "broadcast", 1); }), {2, 2},
                {1, 3, 3, 5});
  EXPECT_NE(error_of([&] {
              run_one("Gemm", {a, b, c}, 6);
            }).find("broadcast=0"),
            std::string::npos);
}

TEST(Gemm, BadShapes) {
  EXPECT_NE(error_of([] {
              run_one("Gemm", {ramp({2, 3}), ramp({2, 3}), ramp({3})}, 13);
            }).find("inner dimensions differ"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run_one("Gemm", {ramp({2, 3}), ramp({3, 4}), ramp({3})}, 13);
            }).find("C of shape [3] does not broadcast to the output shape [2,4]"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run_one("Gemm", {ramp({2, 3, 1}), ramp({3, 4})}, 13);
            }).find("A and B must be 2-D"),
            std::string::npos);
}

TEST(Gemm, IntegerAndDoubleTypes) {
  const Tensor a = Tensor::from_vector<int64_t>(DType::kInt64, {1, 2}, {3, -4});
  const Tensor b = Tensor::from_vector<int64_t>(DType::kInt64, {2, 1}, {5, 6});
  const Tensor c = Tensor::from_vector<int64_t>(DType::kInt64, {1}, {100});
  EXPECT_EQ(values_of<int64_t>(run_one("Gemm", {a, b, c}, 13,
                                       [](Node* n) {
                                         set_float(n, "alpha", 2.0f);
                                         set_float(n, "beta", -1.0f);
                                       })),
            (std::vector<int64_t>{-118}));
  // A fractional alpha on integers goes through double and truncates.
  EXPECT_EQ(values_of<int64_t>(
                run_one("Gemm", {a, b, c}, 13, [](Node* n) { set_float(n, "alpha", 0.5f); })),
            (std::vector<int64_t>{95}));
  const Tensor d = Tensor::from_vector<double>(DType::kDouble, {1, 1}, {1.5});
  const Tensor out = run_one("Gemm", {d, d, d}, 13);
  EXPECT_EQ(values_of<double>(out), (std::vector<double>{3.75}));
}

// ---------------------------------------------------------------------------- Einsum

Tensor einsum(const std::string& equation, std::vector<Tensor> inputs) {
  return run_one("Einsum", std::move(inputs), 12,
                 [&](Node* n) { set_string(n, "equation", equation); });
}

TEST(Einsum, DiagonalAndTrace) {
  expect_floats(einsum("ii->i", {ramp({3, 3})}), {3}, {0, 4, 8});
  expect_floats(einsum("ii", {ramp({3, 3})}), {}, {12});
}

TEST(Einsum, ImplicitOutputIsSortedSingletons) {
  const Tensor x = ramp({2, 3}, -2);
  const Tensor y = ramp({3, 4}, 0, 0.5f);
  expect_floats(einsum("ij,jk", {x, y}), {2, 4}, {-2, -3.5f, -5, -6.5f, 16, 19, 22, 25});
  expect_floats(einsum("ji", {x}), {3, 2}, {-2, 1, -1, 2, 0, 3});
  expect_floats(einsum("i,j", {floats({2}, {1, 2}), floats({3}, {3, 4, 5})}), {2, 3},
                {3, 4, 5, 6, 8, 10});
  // Upper case labels sort before lower case ones, as numpy does.
  expect_floats(einsum("Ab,bA->A", {ramp({2, 2}), ramp({2, 2})}), {2}, {2, 11});
}

TEST(Einsum, SumsAndSpaces) {
  const Tensor x = ramp({2, 3}, -2);
  expect_floats(einsum("ij->", {x}), {}, {3});
  expect_floats(einsum(" i j -> j ", {x}), {3}, {-1, 1, 3});
}

TEST(Einsum, EllipsisBroadcastsAcrossRanks) {
  const Tensor p = ramp({2, 2, 3}, -5);
  const Tensor q = ramp({3, 2});
  const std::vector<float> expected{-20, -32, -2, -5, 16, 22, 34, 49};
  expect_floats(einsum("...ij,...jk->...ik", {p, q}), {2, 2, 2}, expected);
  expect_floats(einsum("...ij,...jk", {p, q}), {2, 2, 2}, expected);
  // An ellipsis dim of size 1 broadcasts against 2.
  expect_floats(einsum("...i,...i->...", {ramp({1, 3}), ramp({2, 3})}), {2}, {5, 14});
}

TEST(Einsum, ChainOfThreeAndDiagonalsWithContraction) {
  expect_floats(einsum("ij,jk,kl->il", {ramp({2, 3}), ramp({3, 4}, -3), ramp({4, 2})}), {2, 2},
                {216, 278, 576, 728});
  expect_floats(einsum("bii,ij->bj", {ramp({2, 3, 3}), ramp({3, 2})}), {2, 2}, {40, 52, 94, 133});
  expect_floats(einsum("iij,jk->ik", {ramp({2, 2, 3}), ramp({3, 2})}), {2, 2}, {10, 13, 64, 94});
}

TEST(Einsum, ElementwiseAndLargerBatchedContraction) {
  expect_floats(einsum("i,i->i", {ramp({4}, 1), ramp({4}, -1)}), {4}, {-1, 0, 3, 8});
  // Large enough for the GEMM path, with the contracted label last in both operands.
  const Tensor a = ramp({2, 9, 11}, -4, 0.125f);
  const Tensor b = ramp({2, 7, 11}, 3, -0.0625f);
  const Tensor out = einsum("bij,bkj->bki", {a, b});
  ASSERT_EQ(out.shape(), (Shape{2, 7, 9}));
  for (int bi = 0; bi < 2; ++bi) {
    for (int k = 0; k < 7; ++k) {
      for (int i = 0; i < 9; ++i) {
        double sum = 0;
        for (int j = 0; j < 11; ++j) {
          sum += static_cast<double>(a.data<float>()[(bi * 9 + i) * 11 + j]) *
                 b.data<float>()[(bi * 7 + k) * 11 + j];
        }
        EXPECT_NEAR(out.data<float>()[(bi * 7 + k) * 9 + i], sum, 1e-4) << bi << k << i;
      }
    }
  }
}

TEST(Einsum, IntegerAndDoubleTypes) {
  const Tensor a = Tensor::from_vector<int32_t>(DType::kInt32, {2, 3}, {-3, -2, -1, 0, 1, 2});
  const Tensor b = Tensor::from_vector<int32_t>(DType::kInt32, {3, 2}, {0, 1, 2, 3, 4, 5});
  const Tensor out = einsum("ij,jk->ki", {a, b});
  ASSERT_EQ(out.dtype(), DType::kInt32);
  EXPECT_EQ(values_of<int32_t>(out), (std::vector<int32_t>{-8, 10, -14, 13}));
  // int8 products wrap like numpy's int8 einsum: 100 * 2 = 200 -> -56.
  const Tensor c = Tensor::from_vector<int8_t>(DType::kInt8, {1}, {100});
  const Tensor d = Tensor::from_vector<int8_t>(DType::kInt8, {1}, {2});
  EXPECT_EQ(values_of<int8_t>(einsum("i,i->", {c, d})), (std::vector<int8_t>{-56}));
  const Tensor e = Tensor::from_vector<double>(DType::kDouble, {2}, {0.5, 0.25});
  EXPECT_EQ(values_of<double>(einsum("i,i", {e, e})), (std::vector<double>{0.3125}));
}

TEST(Einsum, EmptyDims) {
  expect_floats(einsum("ij,jk->ik", {ramp({2, 0}), ramp({0, 2})}), {2, 2}, {0, 0, 0, 0});
  EXPECT_EQ(einsum("ij,jk->ik", {ramp({0, 3}), ramp({3, 2})}).shape(), (Shape{0, 2}));
  expect_floats(einsum("ij->i", {ramp({2, 0})}), {2}, {0, 0});
}

TEST(Einsum, Errors) {
  EXPECT_NE(error_of([] {
              einsum("ij,jk->ik", {ramp({2, 3}), ramp({4, 2})});
            }).find("dimension 0 of input 1 is 4 but label 'j' has size 3 elsewhere"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              einsum("ij->k", {ramp({2, 3})});
            }).find("output label 'k' does not appear in any input term"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              einsum("ijk->i", {ramp({2, 3})});
            }).find("input 0 has rank 2 but its term names 3 dimensions"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              einsum("i1->i", {ramp({2, 3})});
            }).find("unexpected '1'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              einsum("ij,jk->ik", {ramp({2, 3})});
            }).find("equation has 2 input terms but the node has 1 inputs"),
            std::string::npos);
}

// ---- Det ----

double det_of(Tensor x) {
  return static_cast<double>(run_one("Det", {std::move(x)}, 11).data<float>()[0]);
}

TEST(Det, SmallMatricesAndPivoting) {
  EXPECT_NEAR(det_of(floats({2, 2}, {1, 2, 3, 4})), -2.0, 1e-6);
  // A zero leading entry needs a row swap.
  EXPECT_NEAR(det_of(floats({3, 3}, {0, 1, 2, 1, 0, 3, 4, -3, 8})), -2.0, 1e-5);
  EXPECT_EQ(det_of(floats({3, 3}, {1, 2, 3, 2, 4, 6, 0, 1, 1})), 0.0);  // singular
  EXPECT_NEAR(det_of(floats({1, 1}, {-7})), -7.0, 1e-6);
}

TEST(Det, BatchesAndTypes) {
  Tensor out = run_one("Det", {floats({2, 1, 2, 2}, {1, 2, 3, 4, 2, 0, 0, 3})}, 11);
  EXPECT_EQ(out.shape(), (Shape{2, 1}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{-2, 6}));
  Tensor d = Tensor::from_vector<double>(DType::kDouble, {2, 2}, {1e-3, 2, 3, 4});
  out = run_one("Det", {d}, 11);
  EXPECT_EQ(out.shape(), (Shape{}));
  EXPECT_NEAR(out.data<double>()[0], 4e-3 - 6, 1e-12);
  Tensor h = Tensor::from_vector<Float16>(DType::kFloat16, {2, 2},
                                          {Float16(2), Float16(1), Float16(1), Float16(3)});
  out = run_one("Det", {h}, 11);
  EXPECT_EQ(static_cast<float>(out.data<Float16>()[0]), 5.0f);
  // Empty batch, and the 0 x 0 matrix whose determinant is 1.
  EXPECT_EQ(run_one("Det", {floats({0, 3, 3}, {})}, 11).shape(), (Shape{0}));
  EXPECT_EQ(values_of<float>(run_one("Det", {floats({2, 0, 0}, {})}, 11)),
            (std::vector<float>{1, 1}));
}

TEST(Det, ErrorsNameTheProblem) {
  std::string message = error_of([] { run_one("Det", {floats({2, 3}, {1, 2, 3, 4, 5, 6})}, 11); });
  EXPECT_NE(message.find("does not end in square matrices"), std::string::npos) << message;
  message = error_of([] { run_one("Det", {floats({3}, {1, 2, 3})}, 11); });
  EXPECT_NE(message.find("rank >= 2"), std::string::npos) << message;
  message = error_of([] { run_one("Det", {int64s({1, 1}, {1})}, 11); });
  EXPECT_NE(message.find("int64"), std::string::npos) << message;
}

}  // namespace
}  // namespace onnxkit

// The fast Transpose (src/kernels/fast_movement.cc) against the reference kernel: every
// permutation of a 4-D shape, the transformer patterns, 2-D weights, constants, other types.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "fast_kernel_test_util.h"

namespace onnxkit::testing {
namespace {

NodeCase transpose_case(Tensor x, std::vector<int64_t> perm) {
  return NodeCase("Transpose", {std::move(x)}, 13, [perm](Node* n) {
    if (!perm.empty()) set_ints(n, "perm", perm);
  });
}

TEST(FastMovement, TransposeEveryPermutationOfFourDims) {
  for (const Shape& shape : std::vector<Shape>{{2, 3, 4, 5}, {3, 1, 9, 17}, {8, 9, 16, 1}}) {
    std::vector<int64_t> perm(4);
    std::iota(perm.begin(), perm.end(), 0);
    uint32_t seed = 1;
    do {
      expect_fast_matches_reference(
          transpose_case(random_floats(shape, seed++, 1, true), perm), 0, 0,
          "Transpose " + shape_to_string(shape) + " " + shape_to_string(perm));
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

// Transpose 21-25 only added types: the fast kernel serves them.
TEST(FastMovement, TransposeAtNewerOpsets) {
  for (int64_t opset : {21, 23, 24, 25}) {
    NodeCase c = transpose_case(random_floats({2, 3, 4}, 7, 1, true), {2, 0, 1});
    c.opset = opset;
    expect_fast_matches_reference(c, 0, 0, "Transpose opset " + std::to_string(opset));
  }
}

TEST(FastMovement, TransposeTransformerAndWeightPatterns) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {
      {{1, 128, 12, 64}, {0, 2, 1, 3}},  // [B, S, H, D] -> [B, H, S, D]
      {{1, 12, 128, 64}, {0, 2, 1, 3}},  // and back
      {{1, 12, 128, 64}, {0, 1, 3, 2}},  // K^T: [B, H, S, D] -> [B, H, D, S]
      {{2, 12, 17, 33}, {0, 1, 3, 2}},
      {{768, 3072}, {1, 0}},            // a weight, one plane in parallel blocks
      {{65, 129}, {}},                  // no perm: reversed dims
      {{1, 96, 56, 56}, {0, 2, 3, 1}},  // NCHW -> NHWC
      {{1, 56, 56, 96}, {0, 3, 1, 2}},  // NHWC -> NCHW
      {{7}, {0}},
      {{0, 5}, {1, 0}},
      {{2, 3, 4, 5, 6}, {4, 2, 0, 3, 1}},
  };
  uint32_t seed = 30;
  for (const Case& c : cases) {
    expect_fast_matches_reference(transpose_case(random_floats(c.shape, seed++), c.perm), 0, 0,
                                  "Transpose " + shape_to_string(c.shape));
  }
}

TEST(FastMovement, TransposeOfAConstantIsDoneOnce) {
  NodeCase c = transpose_case(random_floats({64, 48}, 5), {1, 0});
  c.constants = {0};
  expect_fast_matches_reference(c, 0, 0, "Transpose constant");
  // An initializer that is also a graph input may be fed: the fed value is transposed.
  Model model = make_model(c);
  Graph& graph = model.graph();
  graph.add_input(graph.find_value("in0"));
  auto session = Session::create(std::move(model), fast_options());
  ASSERT_TRUE(session) << session.error();
  const Tensor fed = random_floats({64, 48}, 6);
  auto result = session.value()->run({{"in0", fed}});
  ASSERT_TRUE(result) << result.error();
  const std::vector<Tensor> reference =
      run_node(transpose_case(fed, {1, 0}), SessionOptions::reference());
  expect_tensors_close(result.value()[0].second.tensor(), reference[0], 0, 0, "fed initializer");
}

TEST(FastMovement, TransposeMovingOnlyOnesSharesTheInput) {
  struct Case {
    Tensor x;
    std::vector<int64_t> perm;
    Shape expected;
  };
  Tensor longs(DType::kInt64, {1, 6, 1, 4});
  for (int64_t i = 0; i < longs.numel(); ++i) longs.mutable_data<int64_t>()[i] = i;
  const std::vector<Case> cases = {
      {random_floats({1, 197, 384}, 3), {1, 0, 2}, {197, 1, 384}},  // ViT's batch-1 swap
      {random_floats({5, 1, 7}, 4), {1, 0, 2}, {1, 5, 7}},
      {random_floats({1, 1, 1}, 5), {2, 0, 1}, {1, 1, 1}},
      {longs, {2, 1, 0, 3}, {1, 6, 1, 4}},
  };
  for (const Case& c : cases) {
    const std::string what = "Transpose " + shape_to_string(c.x.shape());
    const std::vector<Tensor> out = run_node(transpose_case(c.x, c.perm), fast_options());
    EXPECT_EQ(out[0].shape(), c.expected) << what;
    EXPECT_EQ(out[0].raw_data(), c.x.raw_data()) << what << ": copied";
    expect_fast_matches_reference(transpose_case(c.x, c.perm), 0, 0, what);
  }
  // A dim other than 1 moving past another still copies.
  const Tensor x = random_floats({2, 1, 3}, 6);
  const std::vector<Tensor> out = run_node(transpose_case(x, {2, 1, 0}), fast_options());
  EXPECT_NE(out[0].raw_data(), x.raw_data());
}

// 1-byte elements (int8 activations at the edges of a channels-last chain): every
// permutation of 4 dims, the byte-plane path where it applies and the reference elsewhere.
TEST(FastMovement, TransposeBytesEveryPermutation) {
  for (const Shape& shape : std::vector<Shape>{{1, 3, 17, 19}, {2, 24, 5, 7}, {3, 1, 33, 16}}) {
    for (DType dtype : {DType::kUInt8, DType::kInt8}) {
      Tensor x(dtype, shape);
      auto* bytes = static_cast<uint8_t*>(x.mutable_raw_data());
      for (int64_t i = 0; i < x.numel(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
      std::vector<int64_t> perm(4);
      std::iota(perm.begin(), perm.end(), 0);
      do {
        expect_fast_matches_reference(
            transpose_case(x, perm), 0, 0,
            "Transpose bytes " + shape_to_string(shape) + " " + shape_to_string(perm));
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
  }
}

TEST(FastMovement, TransposeOtherTypes) {
  Tensor ints(DType::kInt32, {3, 5, 7});
  for (int64_t i = 0; i < ints.numel(); ++i)
    ints.mutable_data<int32_t>()[i] = static_cast<int32_t>(i * 7919);
  expect_fast_matches_reference(transpose_case(ints, {2, 0, 1}), 0, 0, "Transpose int32");
  Tensor longs(DType::kInt64, {4, 6});
  for (int64_t i = 0; i < longs.numel(); ++i) longs.mutable_data<int64_t>()[i] = i;
  const std::vector<Tensor> out = run_node(transpose_case(longs, {1, 0}), fast_options());
  EXPECT_EQ(out[0].shape(), (Shape{6, 4}));
  EXPECT_EQ(out[0].data<int64_t>()[1], 6);
  // A bad perm fails naming the node, as the reference kernel does.
  try {
    run_node(transpose_case(random_floats({2, 3}, 1), {0, 0}), fast_options());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onnxkit::testing

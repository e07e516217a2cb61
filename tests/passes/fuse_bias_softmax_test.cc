#include <set>

#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// Softmax(Add(x [2, 3, n, 5], bias)) -> Relu.
Model bias_softmax_model(std::vector<int64_t> bias_dims, bool bias_first = false,
                         int64_t opset = 13, std::optional<int64_t> axis = std::nullopt,
                         bool sum_is_output = false) {
  Model model = empty_model(opset);
  GraphBuilder b(model);
  Value* x = b.input("x", {2, 3, -1, 5});
  Value* bias = b.input("bias", std::move(bias_dims));
  Value* sum = bias_first ? b.op("Add", {bias, x}) : b.op("Add", {x, bias});
  std::vector<Attr> attributes;
  if (axis) attributes.push_back(Attr::Int("axis", *axis));
  b.output(b.op("Relu", {b.op("Softmax", {sum}, attributes)}));
  if (sum_is_output) b.output(sum);
  infer(model);
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_fuse_bias_softmax_pass(), model);
}

void expect_fused(Model model) {
  Model before = copy_model(model);
  ASSERT_EQ(run_pass(model), 1u);
  ASSERT_EQ(model.graph().node_count(), 2u) << "BiasSoftmax + Relu";
  const Node* fused = find_op(model, "BiasSoftmax");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->domain(), kOnnxkitDomain);
  EXPECT_EQ(model.opset_version(kOnnxkitDomain), 1);
  // X is an operand of the sum's shape (either, when both are).
  const std::set<std::string> inputs{fused->input(0)->name(), fused->input(1)->name()};
  EXPECT_EQ(inputs, (std::set<std::string>{"x", "bias"}));
  EXPECT_EQ(int_attribute_of(fused, "axis", 0), -1);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseBiasSoftmax, MaskLikeBiasesInEitherOrder) {
  for (auto dims : {std::vector<int64_t>{2, 1, 1, 5}, {2, 3, -1, 5}, {5}, {1, -1, 5}}) {
    expect_fused(bias_softmax_model(dims));
    expect_fused(bias_softmax_model(dims, /*bias_first=*/true));
  }
}

TEST(FuseBiasSoftmax, OldOpsetNeedsTheLastAxisSpelledOut) {
  expect_fused(bias_softmax_model({2, 1, 1, 5}, false, 11, 3));
  Model model = bias_softmax_model({2, 1, 1, 5}, false, 11);  // axis 1: flattens 3 dims
  EXPECT_EQ(run_pass(model), 0u);
}

TEST(FuseBiasSoftmax, LeftAlone) {
  {
    Model model = bias_softmax_model({2, 1, 1, 5}, false, 13, 1);  // not the last axis
    EXPECT_EQ(run_pass(model), 0u);
  }
  {
    Model model = bias_softmax_model({2, 1, 1, 5}, false, 13, -1, /*sum_is_output=*/true);
    EXPECT_EQ(run_pass(model), 0u);
  }
  {
    // Both operands broadcast into the sum: neither is X.
    Model model = empty_model(13);
    GraphBuilder b(model);
    Value* sum = b.op("Add", {b.input("a", {2, 1, 5}), b.input("b", {1, 3, 5})});
    b.output(b.op("Softmax", {sum}));
    infer(model);
    EXPECT_EQ(run_pass(model), 0u);
  }
}

}  // namespace
}  // namespace onnxkit

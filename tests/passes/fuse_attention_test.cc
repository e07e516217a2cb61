#include <cmath>
#include <limits>

#include "pass_test_util.h"
#include "passes/transformer_fusion_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

enum class Mask { kNone, kAdd, kKeep, kAddThenKeep, kKeepThenAdd };

// Multi-head self-attention as PyTorch exports BERT / GPT-2: x [2, n, 16], 2 heads of 8.
struct BertGraph {
  Mask mask = Mask::kAdd;
  bool scale_by_mul = false;
  bool k_sibling_output = false;  // GPT-2: K = Transpose(k, [0, 2, 1, 3]) is also an output
  bool softmax_not_last = false;
  bool constant_keep = false;     // a fixed keep mask with a fully masked row
  bool keep_own_symbols = false;  // keep [1, 1, r, c]: Where's output gets a fresh symbol
  float fill = -3.4028234663852886e+38f;
};

Model bert_model(const BertGraph& spec) {
  Model model = empty_model(13);
  GraphBuilder b(model);
  Value* x = b.input("x", {2, -1, 16});
  auto heads = [&](uint64_t seed) {
    Value* lin = b.op("MatMul", {x, b.constant(random_floats({16, 16}, seed))});
    return b.op("Reshape", {lin, b.ints({0, 0, 2, 8})});
  };
  Value* q = b.op("Transpose", {heads(1)}, {Attr::Ints("perm", {0, 2, 1, 3})});
  Value* k = heads(2);
  Value* kt = b.op("Transpose", {k}, {Attr::Ints("perm", {0, 2, 3, 1})});
  if (spec.k_sibling_output) b.output(b.op("Transpose", {k}, {Attr::Ints("perm", {0, 2, 1, 3})}));
  Value* v = b.op("Transpose", {heads(3)}, {Attr::Ints("perm", {0, 2, 1, 3})});
  Value* s = b.op("MatMul", {q, kt});
  s = spec.scale_by_mul ? b.op("Mul", {b.scalar(1 / std::sqrt(8.0f)), s})
                        : b.op("Div", {s, b.scalar(std::sqrt(8.0f))});
  Value* mask = nullptr;
  Value* keep = nullptr;
  if (spec.mask != Mask::kNone && spec.mask != Mask::kKeep) mask = b.input("mask", {2, 1, 1, -1});
  if (spec.mask == Mask::kKeep || spec.mask == Mask::kAddThenKeep ||
      spec.mask == Mask::kKeepThenAdd) {
    if (spec.constant_keep) {
      // Causal over 4 positions, with row 2 masked out entirely.
      Tensor t(DType::kBool, {1, 1, 4, 4});
      for (int64_t i = 0; i < 16; ++i) t.mutable_data<bool>()[i] = i % 4 <= i / 4 && i / 4 != 2;
      keep = b.constant(t);
    } else if (spec.keep_own_symbols) {
      keep = b.input("keep", {Dim::known(1), Dim::known(1), Dim::symbol("r"), Dim::symbol("c")},
                     DType::kBool);
    } else {
      keep = b.input("keep", {1, 1, -1, -1}, DType::kBool);
    }
  }
  if (spec.mask == Mask::kKeepThenAdd) {
    s = b.op("Add", {b.op("Where", {keep, s, b.scalar(spec.fill)}), mask});
  } else {
    if (mask) s = b.op("Add", {s, mask});
    if (keep) s = b.op("Where", {keep, s, b.scalar(spec.fill)});
  }
  Value* p = b.op("Softmax", {s}, {Attr::Int("axis", spec.softmax_not_last ? 2 : -1)});
  Value* o = b.op("Transpose", {b.op("MatMul", {p, v})}, {Attr::Ints("perm", {0, 2, 1, 3})});
  b.output(b.op("Reshape", {o, b.ints({0, 0, 16})}));
  infer(model);
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_fuse_attention_pass(), model);
}

// Runs the pass and checks one Attention replaced MatMul / scale / masks / Softmax / MatMul.
const Node* expect_fused(Model& model, double rtol = 1e-4) {
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Softmax") + count_ops(model, "BiasSoftmax"), 0u);
  EXPECT_EQ(count_ops(model, "Where"), 0u);
  EXPECT_EQ(count_ops(model, "Div"), 0u);
  EXPECT_EQ(count_domain_ops(model, "Attention"), 1u);
  EXPECT_EQ(model.opset_version(kOnnxkitDomain), 1);
  EXPECT_TRUE(same_outputs(before, model, rtol));
  return find_op(model, "Attention");
}

TEST(FuseAttention, BertAdditiveMask) {
  Model model = bert_model({});
  const Node* attention = expect_fused(model);
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->inputs().size(), 4u);
  EXPECT_EQ(attention->input(3)->name(), "mask");
  EXPECT_NEAR(float_attribute_of(attention, "scale"), 1 / std::sqrt(8.0), 1e-6);
  EXPECT_EQ(int_attribute_of(attention, "k_transposed", 0), 0);
  // K^T's Transpose [0, 2, 3, 1] became K = Transpose [0, 2, 1, 3]: [B, H, Sk, D].
  const Node* k = attention->input(1)->producer();
  ASSERT_TRUE(k && k->op_type() == "Transpose");
  EXPECT_EQ(k->find_attribute("perm")->ints, (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(count_ops(model, "MatMul"), 3u) << "only the projections are left";
  EXPECT_EQ(count_ops(model, "Transpose"), 4u);
}

TEST(FuseAttention, MaskThroughBiasSoftmax) {
  Model model = bert_model({});
  auto bias_softmax = make_fuse_bias_softmax_pass();
  ASSERT_EQ(apply_pass(*bias_softmax, model), 1u);
  const Node* attention = expect_fused(model);
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->input(3)->name(), "mask");
}

TEST(FuseAttention, ScaleByMulAndNoMask) {
  BertGraph spec;
  spec.scale_by_mul = true;
  spec.mask = Mask::kNone;
  Model model = bert_model(spec);
  const Node* attention = expect_fused(model);
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->inputs().size(), 3u);
  EXPECT_EQ(count_ops(model, "Mul"), 0u);
}

TEST(FuseAttention, Gpt2CausalWhereUsesTheExistingKTranspose) {
  BertGraph spec;
  spec.mask = Mask::kKeep;
  spec.k_sibling_output = true;
  Model model = bert_model(spec);
  const Node* attention = expect_fused(model);
  ASSERT_NE(attention, nullptr);
  ASSERT_EQ(attention->inputs().size(), 5u);
  EXPECT_EQ(attention->input(3), nullptr);
  EXPECT_EQ(attention->input(4)->name(), "keep");
  EXPECT_FLOAT_EQ(float_attribute_of(attention, "masked_value"), spec.fill);
  EXPECT_TRUE(is_graph_output(attention->input(1))) << "K is the Transpose already there";
  EXPECT_EQ(count_ops(model, "Transpose"), 4u) << "q, k (shared), v, output";
}

TEST(FuseAttention, BothMasks) {
  BertGraph spec;
  spec.mask = Mask::kAddThenKeep;
  Model model = bert_model(spec);
  const Node* attention = expect_fused(model);
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->input(3)->name(), "mask");
  EXPECT_EQ(attention->input(4)->name(), "keep");
}

TEST(FuseAttention, FullyMaskedRowIsNaNLikeTheOriginal) {
  BertGraph spec;
  spec.mask = Mask::kKeep;
  spec.constant_keep = true;
  spec.fill = -std::numeric_limits<float>::infinity();
  Model model = bert_model(spec);
  // same_outputs runs with n = 2; a fixed 4x4 keep needs n = 4: compare by hand.
  Model before = copy_model(model);
  ASSERT_EQ(run_pass(model), 1u);
  std::mt19937_64 rng(3);
  Tensor x = random_tensor(DType::kFloat, {2, 4, 16}, rng);
  auto run = [&](const Model& m) {
    auto session = Session::create(copy_model(m), SessionOptions::reference());
    EXPECT_TRUE(session) << session.error();
    auto out = session.value()->run({{"x", x}});
    EXPECT_TRUE(out) << out.error();
    return out.value()[0].second.tensor();
  };
  const Tensor want = run(before), got = run(model);
  Comparison c = compare_tensors(got, want, {1e-4, 1e-5});
  EXPECT_TRUE(c.ok) << c.message;
  // Row (query) 2 of every batch is NaN in both: output [2, 4, 16], rows at [b, 2, :].
  EXPECT_TRUE(std::isnan(got.data<float>()[2 * 16]));
  EXPECT_TRUE(std::isnan(want.data<float>()[2 * 16]));
  EXPECT_FALSE(std::isnan(got.data<float>()[0]));
}

TEST(FuseAttention, LeftAlone) {
  {
    BertGraph spec;  // Where before the additive mask: masked entries hold fill + mask
    spec.mask = Mask::kKeepThenAdd;
    Model model = bert_model(spec);
    EXPECT_EQ(run_pass(model), 0u);
  }
  {
    BertGraph spec;
    spec.softmax_not_last = true;
    Model model = bert_model(spec);
    EXPECT_EQ(run_pass(model), 0u);
  }
  {
    // The scores are read elsewhere.
    Model model = bert_model({});
    model.graph().add_output(model.graph().find_value(find_op(model, "Div")->output(0)->name()));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {
    // A mask that widens the scores (Sq = 1 against 4 rows) cannot be the kernel's.
    Model model = empty_model(13);
    GraphBuilder b(model);
    Value* s = b.op("MatMul", {b.input("q", {2, 2, 1, 8}), b.input("kt", {2, 2, 8, -1})});
    s = b.op("Add", {s, b.input("mask", {2, 1, 4, -1})});
    b.output(b.op("MatMul", {b.op("Softmax", {s}), b.input("v", {2, 2, -1, 8})}));
    infer(model);
    EXPECT_EQ(run_pass(model), 0u);
  }
}

// torch.nn.MultiheadAttention (ViT): [S, B, E] in, [B*H, S, D] per head, Q scaled first.
Model vit_model() {
  Model model = empty_model(13);
  GraphBuilder b(model);
  Value* x = b.input("x", {5, -1, 16});
  auto project = [&](uint64_t seed, std::vector<int64_t> perm) {
    Value* lin = b.op("MatMul", {x, b.constant(random_floats({16, 16}, seed))});
    Value* r = b.op("Reshape", {lin, b.ints({5, -1, 8})});
    return b.op("Transpose", {r}, {Attr::Ints("perm", std::move(perm))});
  };
  Value* q = b.op("Div", {project(1, {1, 0, 2}), b.scalar(std::sqrt(8.0f))});
  Value* kt = project(2, {1, 2, 0});
  Value* v = project(3, {1, 0, 2});
  Value* p = b.op("Softmax", {b.op("MatMul", {q, kt})}, {Attr::Int("axis", -1)});
  Value* o = b.op("Transpose", {b.op("MatMul", {p, v})}, {Attr::Ints("perm", {1, 0, 2})});
  b.output(b.op("Reshape", {o, b.ints({-1, 16})}));
  infer(model);
  return model;
}

TEST(FuseAttention, VitRank3IsLiftedWithoutNewNodes) {
  Model model = vit_model();
  const size_t nodes_before = model.graph().node_count();
  const Node* attention = expect_fused(model);
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(count_ops(model, "Unsqueeze") + count_ops(model, "Squeeze"), 0u);
  EXPECT_EQ(model.graph().node_count(), nodes_before - 3) << "Div, MatMul, Softmax, MatMul -> 1";
  EXPECT_EQ(int_attribute_of(attention, "k_transposed", 0), 0);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(rank_of(attention->input(i)), 4);
}

TEST(FuseAttention, Rank3InputsGetUnsqueezeAndSqueeze) {
  Model model = empty_model(13);
  GraphBuilder b(model);
  Value* s = b.op("MatMul", {b.input("q", {-1, 5, 8}), b.input("kt", {-1, 8, 7})});
  s = b.op("Mul", {s, b.scalar(0.25f)});
  s = b.op("Add", {s, b.input("mask", {5, 7})});
  b.output(b.op("MatMul", {b.op("Softmax", {s}), b.input("v", {-1, 7, 3})}));
  infer(model);
  const Node* attention = expect_fused(model);
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(int_attribute_of(attention, "k_transposed", 0), 1);
  EXPECT_EQ(count_ops(model, "Unsqueeze"), 3u);
  EXPECT_EQ(count_ops(model, "Squeeze"), 1u);
}

TEST(FuseAttention, OutputSymbolsComeFromQueryAndValue) {
  // The keep mask's own symbols make ONNX give Where's output a fresh symbol for the rows;
  // after the fusion the values downstream say "n" (Q's rows) again.
  BertGraph spec;
  spec.mask = Mask::kKeep;
  spec.keep_own_symbols = true;
  Model model = bert_model(spec);
  const Value* out = model.graph().outputs()[0];
  ASSERT_TRUE(out->type().shape);
  EXPECT_NE((*out->type().shape)[1].param, "n") << "precondition: a fresh symbol";
  ASSERT_EQ(run_pass(model), 1u);  // (same_outputs would need values for r and c)
  EXPECT_EQ((*model.graph().outputs()[0]->type().shape)[1].param, "n");
}

}  // namespace
}  // namespace onnxkit

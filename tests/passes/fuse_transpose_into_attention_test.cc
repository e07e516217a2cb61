#include "pass_test_util.h"
#include "passes/pipeline.h"
#include "passes/transformer_fusion_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

using Perm = std::vector<int64_t>;
const Perm kHeads{0, 2, 1, 3};  // [B, S, H, D] <-> [B, H, S, D]

// Attention over 2 heads of 8, batch 2, n positions, built the way fuse_attention leaves a
// BERT layer: the projections split into heads by Transposes, Y joined back by one.
struct AttentionGraph {
  bool k_transposed = false;  // K^T = Transpose(k, [0, 2, 3, 1]), k_transposed = 1
  bool q_kept_elsewhere = false;
  bool y_read_twice = false;
};

Model attention_model(const AttentionGraph& spec) {
  Model model = empty_model(13);
  import_onnxkit_domain(model);
  GraphBuilder b(model);
  Value* q = b.input("q", {2, -1, 2, 8});
  Value* k = b.input("k", {2, -1, 2, 8});
  Value* v = b.input("v", {2, -1, 2, 8});
  Value* mask = b.input("mask", {2, 1, 1, -1});
  Value* qh = b.op("Transpose", {q}, {Attr::Ints("perm", kHeads)});
  Value* kh =
      b.op("Transpose", {k}, {Attr::Ints("perm", spec.k_transposed ? Perm{0, 2, 3, 1} : kHeads)});
  Value* vh = b.op("Transpose", {v}, {Attr::Ints("perm", kHeads)});
  if (spec.q_kept_elsewhere) b.output(qh);
  std::vector<Attr> attributes{Attr::Float("scale", 0.35f)};
  if (spec.k_transposed) attributes.push_back(Attr::Int("k_transposed", 1));
  Node* attention =
      b.node("Attention", {qh, kh, vh, mask}, attributes, 1, std::string(kOnnxkitDomain));
  Value* y = attention->output(0);
  y->set_type(ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(2), Dim::known(2),
                                                                Dim::symbol("n"), Dim::known(8)}));
  model.graph().add_value_info(y);
  Value* joined = b.op("Transpose", {y}, {Attr::Ints("perm", kHeads)});
  if (spec.y_read_twice) b.output(b.op("Relu", {y}));
  b.output(b.op("Reshape", {joined, b.ints({0, 0, 16})}));
  infer(model);
  return model;
}

// The pass, with outputs checked against the model before on the reference kernels.
size_t fold(Model& model) {
  Model before = copy_model(model);
  auto pass = make_fuse_transpose_into_attention_pass();
  const size_t changes = apply_pass(*pass, model);
  EXPECT_TRUE(same_outputs(before, model, 1e-5));
  return changes;
}

Perm perm_of(const Node* node, const std::string& name) {
  const Attribute* a = node->find_attribute(name);
  return a ? a->ints : Perm{0, 1, 2, 3};
}

TEST(FuseTransposeIntoAttention, BertHeadsAllFour) {
  Model model = attention_model({});
  const Node* reshape = find_op(model, "Reshape");
  ASSERT_NE(reshape, nullptr);
  const auto joined_dims = dims_of(reshape->input(0));
  EXPECT_EQ(fold(model), 4u);
  EXPECT_EQ(count_ops(model, "Transpose"), 0u);
  const Node* attention = find_op(model, "Attention");
  ASSERT_NE(attention, nullptr);
  for (const char* name : {"q_perm", "k_perm", "v_perm", "y_perm"}) {
    EXPECT_EQ(perm_of(attention, name), kHeads) << name;
  }
  EXPECT_EQ(attention->input(0)->name(), "q");
  // Y is stored [B, S, H, D] now: it took the joined value's type, and the Reshape reads it.
  ASSERT_TRUE(joined_dims);
  const auto dims = dims_of(attention->output(0));
  ASSERT_TRUE(dims);
  ASSERT_EQ(dims->size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(same_dim((*dims)[i], (*joined_dims)[i])) << i;
  EXPECT_EQ(attention->output(0)->uses()[0].node, reshape);
}

TEST(FuseTransposeIntoAttention, KGivenTransposed) {
  AttentionGraph spec;
  spec.k_transposed = true;
  Model model = attention_model(spec);
  EXPECT_EQ(fold(model), 4u);
  const Node* attention = find_op(model, "Attention");
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(perm_of(attention, "k_perm"), (Perm{0, 2, 3, 1}));
  EXPECT_EQ(int_attribute_of(attention, "k_transposed", 0), 1);
}

TEST(FuseTransposeIntoAttention, TransposesReadElsewhereStay) {
  AttentionGraph spec;
  spec.q_kept_elsewhere = true;
  spec.y_read_twice = true;
  Model model = attention_model(spec);
  EXPECT_EQ(fold(model), 3u) << "Q, K, V; not Y, which Relu reads too";
  EXPECT_EQ(count_ops(model, "Transpose"), 2u) << "Q's (a graph output) and Y's";
  const Node* attention = find_op(model, "Attention");
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(perm_of(attention, "q_perm"), kHeads);
  EXPECT_EQ(attention->find_attribute("y_perm"), nullptr);
}

// Rank-3 attention lifted by fuse_attention (ViT): x [S, B*H, D, 1] read through [1, 3, 0, 2];
// the head dim is followed only by the size-1 axis, so rows stay contiguous. A perm that
// puts the sequence after the head dim does not fold. Two Transposes in a row compose.
TEST(FuseTransposeIntoAttention, HeadDimMustStayInnermost) {
  Model model = empty_model(13);
  import_onnxkit_domain(model);
  GraphBuilder b(model);
  Value* x = b.input("x", {5, 4, 8, 1});         // [S, B*H, D, 1]
  Value* k_stored = b.input("k", {5, 4, 1, 8});  // [Sk, B*H, 1, D]
  Value* v_stored = b.input("v", {1, 4, 8, 5});  // [1, B*H, D, Sk]: D not innermost
  Value* q = b.op("Transpose", {x}, {Attr::Ints("perm", {1, 3, 0, 2})});
  Value* k_swapped = b.op("Transpose", {k_stored}, {Attr::Ints("perm", {1, 0, 2, 3})});
  Value* k = b.op("Transpose", {k_swapped}, {Attr::Ints("perm", {0, 2, 1, 3})});
  Value* v = b.op("Transpose", {v_stored}, {Attr::Ints("perm", {1, 0, 3, 2})});
  Node* attention = b.node("Attention", {q, k, v}, {}, 1, std::string(kOnnxkitDomain));
  attention->output(0)->set_type(ValueType::tensor(
      DType::kFloat, std::vector<Dim>{Dim::known(4), Dim::known(1), Dim::known(5), Dim::known(8)}));
  model.graph().add_value_info(attention->output(0));
  b.output(attention->output(0));
  infer(model);
  // V's transpose [1, 0, 3, 2] of [1, B*H, D, Sk] gives [B*H, 1, Sk, D]: D comes from stored
  // axis 2, followed by Sk: not folded. Q folds; K folds twice (composing the two perms).
  EXPECT_EQ(fold(model), 3u);
  const Node* fused = find_op(model, "Attention");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(perm_of(fused, "q_perm"), (Perm{1, 3, 0, 2}));
  EXPECT_EQ(perm_of(fused, "k_perm"), (Perm{1, 2, 0, 3}));
  EXPECT_EQ(fused->input(1)->name(), "k");
  EXPECT_EQ(fused->find_attribute("v_perm"), nullptr);
  EXPECT_EQ(count_ops(model, "Transpose"), 1u);
}

TEST(FuseTransposeIntoAttention, IsInTheExtendedLevel) {
  const auto names = all_pass_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "fuse_transpose_into_attention"), names.end());
}

}  // namespace
}  // namespace onnxkit

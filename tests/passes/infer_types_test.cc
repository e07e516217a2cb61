#include "passes/infer_types.h"

#include <gtest/gtest.h>

#include <functional>

#include "ir/value_type.h"
#include "pass_test_util.h"
#include "registry/builtin_registry.h"

namespace onnxkit::testing {
namespace {

std::string type_of(const Value* value) {
  return value_type_to_string(value->type());
}

bool listed_in_value_info(const Value* value) {
  const auto& info = value->graph()->value_info();
  return std::find(info.begin(), info.end(), value) != info.end();
}

// Dim 1 doubled: a rule libonnx cannot know.
void infer_twice(TypeInferenceContext& context) {
  const std::vector<Dim>* dims = input_dims(context, 0);
  if (!dims) return;
  std::vector<Dim> out = *dims;
  if (out.size() < 2) fail("Twice takes rank 2 or more, got rank {}", out.size());
  out[1] = out[1].is_known() ? Dim::known(out[1].value * 2) : Dim{};
  context.set_output(0, tensor_type(input_dtype(context, 0), out));
}

// Everything but the output's rank unknown (a rule that knows little).
void infer_rank_only(TypeInferenceContext& context) {
  const std::vector<Dim>* dims = input_dims(context, 0);
  if (!dims) return;
  context.set_output(0, tensor_type(input_dtype(context, 0), std::vector<Dim>(dims->size())));
}

// The built-in registry plus "Relu" at opset 18 (a version libonnx 1.12 does not have, so a
// model importing opset 18 has a node it cannot infer) and com.test's "Twice"; If-16 is a
// version libonnx 1.12 has.
OpRegistry test_registry() {
  OpRegistry registry = builtin_registry();
  const OpRegistration* relu = registry.find("", "Relu", 14);
  registry.add("", "Relu", 18, OpDefinition(relu->definition).with_types(infer_same_as_input));
  EXPECT_EQ(registry.find("", "If", 16)->since_version, 16);
  registry.add("com.test", "Twice", 1, OpDefinition(relu->definition).with_types(infer_twice));
  // Every builtin op has a rule: one without.
  OpDefinition no_rule = relu->definition;
  no_rule.infer_types = nullptr;
  registry.add("com.test", "NoRule", 1, no_rule);
  return registry;
}

Model model_at(int64_t opset) {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", opset}, {"com.test", 1}};
  return model;
}

TEST(InferTypes, NodesLibonnxKnowsExactlyKeepItsInferenceTheRestUseRules) {
  Model model = model_at(18);
  GraphBuilder b(model);
  Value* x = b.input("x", std::vector<Dim>{Dim::symbol("batch"), Dim::known(3)}, DType::kFloat);
  Value* relu = b.op("Relu", {x});                      // registry 18 != libonnx 14: rule
  Value* sum = b.op("Add", {relu, relu});               // Add-14 both: libonnx
  Value* twice = b.op("Twice", {sum}, {}, "com.test");  // unknown to libonnx: rule
  Value* mm = b.op("MatMul", {twice, b.constant(Tensor(DType::kFloat, {6, 4}))});
  b.output(mm);
  const OpRegistry registry = test_registry();
  TypeInferenceReport report = infer_types(model, registry).value();
  EXPECT_EQ(report.by_rule, 2u);
  EXPECT_EQ(report.by_libonnx, 2u);
  EXPECT_EQ(report.unknown, 0u);
  EXPECT_TRUE(report.warnings.empty());
  EXPECT_EQ(type_of(relu), "float[batch,3]");
  EXPECT_EQ(type_of(sum), "float[batch,3]");
  EXPECT_EQ(type_of(twice), "float[batch,6]");
  EXPECT_EQ(type_of(mm), "float[batch,4]");
  EXPECT_TRUE(listed_in_value_info(relu));
  EXPECT_TRUE(listed_in_value_info(twice));
  EXPECT_FALSE(listed_in_value_info(mm));  // a graph output
}

// libonnx's STFT-17 inference reads the signal's dim 1 unchecked and crashed the process on a
// scalar signal (fuzz: libonnx_shape_inference_stft_scalar_signal), declared or only known
// inside its whole-model inference (Squeeze to rank 1): such an STFT gets onnxkit's rule.
TEST(InferTypes, StftWithALowRankSignalIsNotLeftToLibonnx) {
  for (const bool declared : {true, false}) {
    Model model = model_at(17);
    GraphBuilder b(model);
    Value* signal =
        declared
            ? b.input("signal", std::vector<int64_t>{}, DType::kFloat)
            : b.op("Squeeze", {b.input("x", {8, 1}),
                               b.constant(Tensor::from_vector<int64_t>(DType::kInt64, {1}, {1}))});
    Value* step = b.constant(Tensor::from_vector<int64_t>(DType::kInt64, {}, {2}));
    b.output(b.op("STFT", {signal, step, nullptr, step}));
    auto report = infer_types(model, builtin_registry());
    if (!report) continue;  // onnxkit's rule may refuse the signal: an error, not a crash
    EXPECT_EQ(report.value().by_libonnx, declared ? 0u : 1u) << declared;
  }
}

// libonnx's Conv inference reads W's dims past X's rank unchecked (fuzz:
// libonnx_shape_inference_conv_weight_rank_above_input): such a Conv gets onnxkit's rule.
TEST(InferTypes, ConvWithAWeightOfHigherRankIsNotLeftToLibonnx) {
  Model model = model_at(17);
  GraphBuilder b(model);
  Value* x = b.input("x", {1, 1, 3, 2});
  Value* w = b.input("w", {1, 1, 2, 2, 7});
  b.output(b.op("Conv", {x, w}));
  auto report = infer_types(model, builtin_registry());
  if (!report) return;  // onnxkit's rule may refuse the pair: an error, not a crash
  EXPECT_EQ(report.value().by_libonnx, 0u);
}

// libonnx's inference functions trust its checker and crashed on nodes it would refuse
// (fuzz: libonnx_shape_inference_*): the op's own rule judges each node first, and a node it
// rejects is reported as a rule's error and never given to libonnx, neither alone nor in the
// whole model. Here a stride of 0, a LayerNormalization axis below -rank and a rank-1 STFT
// signal, each after a Relu libonnx may infer.
TEST(InferTypes, ANodeItsRuleRejectsNeverReachesLibonnx) {
  struct Case {
    const char* what;
    std::function<Value*(GraphBuilder&, Value*)> add;
    const char* error;
  };
  const std::vector<Case> cases = {
      {"MaxPool stride 0",
       [](GraphBuilder& b, Value* x) {
         return b.op("MaxPool", {x},
                     {Attr::Ints("kernel_shape", {1, 1}), Attr::Ints("strides", {1, 0})});
       },
       "strides[1] is 0"},
      {"LayerNormalization axis -5",
       [](GraphBuilder& b, Value* x) {
         return b.op(
             "LayerNormalization",
             {x, b.constant(Tensor(DType::kFloat, {4})), b.constant(Tensor(DType::kFloat, {4}))},
             {Attr::Int("axis", -5)});
       },
       "axis -5 is out of range for rank 4"},
      {"STFT of a rank-1 signal",
       [](GraphBuilder& b, Value* x) {
         Value* flat = b.op("Reshape", {x, b.ints({-1})});
         Value* step = b.constant(Tensor::from_vector<int64_t>(DType::kInt64, {}, {2}));
         return b.op("STFT", {flat, step, nullptr, step});
       },
       "signal must have rank >= 2"},
      // A model's numbers the rules used unchecked (the hostile models of the same names).
      {"Tile with a negative repeat",
       [](GraphBuilder& b, Value* x) {
         return b.op("Tile", {x, b.ints({1, 1, 1, -2})});
       },
       "would have the negative dim -8"},
      {"Slice with fewer steps than axes",
       [](GraphBuilder& b, Value* x) {
         return b.op("Slice", {x, b.ints({0, 0}), b.ints({1, 1}), b.ints({0, 1}), b.ints({1})});
       },
       "steps has 1 values for 2 axes"},
      {"SplitToSequence by 0",
       [](GraphBuilder& b, Value* x) {
         Value* zero = b.constant(Tensor::from_vector<int64_t>(DType::kInt64, {}, {0}));
         return b.op("SplitToSequence", {x, zero});
       },
       "split size must be positive, got 0"},
      {"GatherND with batch_dims -1",
       [](GraphBuilder& b, Value* x) {
         return b.op("GatherND", {x, b.ints({0})}, {Attr::Int("batch_dims", -1)});
       },
       "batch_dims -1 must be in [0, 1)"},
      {"ConstantOfShape of a 2^40-long shape",
       [](GraphBuilder& b, Value*) {
         return b.op("ConstantOfShape",
                     {b.input("shape", std::vector<int64_t>{int64_t{1} << 40}, DType::kInt64)});
       },
       "no tensor has a rank over 4096"},
  };
  for (const Case& test : cases) {
    Model model = model_at(17);
    GraphBuilder b(model);
    Value* relu = b.op("Relu", {b.input("x", {1, 2, 3, 4})});
    b.output(test.add(b, relu));
    TypeInferenceReport report = infer_types(model, builtin_registry()).value();
    ASSERT_EQ(report.warnings.size(), 1u) << test.what;
    EXPECT_NE(report.warnings[0].find(test.error), std::string::npos) << report.warnings[0];
    EXPECT_EQ(report.unknown, 1u) << test.what;
    EXPECT_EQ(type_of(relu), "float[1,2,3,4]") << test.what;  // the rest is inferred
    TypeInferenceOptions strict;
    strict.strict = true;
    auto refused = infer_types(model, builtin_registry(), strict);
    ASSERT_FALSE(refused.ok()) << test.what;
    EXPECT_NE(refused.error().find(test.error), std::string::npos) << refused.error();
  }
}

// Rules compute dims a model chose: a product or sum past int64 is the rule's error (Tile) or
// an unknown dim (Concat), never signed overflow (fuzz: the hostile tile_overflow and
// ConstantOfShape -> Concat models, once every rule ran before libonnx).
TEST(InferTypes, RuleDimArithmeticPastInt64IsAnErrorOrUnknown) {
  Model model = model_at(17);
  GraphBuilder b(model);
  Value* x = b.input("x", {4});
  b.output(b.op("Tile", {x, b.ints({int64_t{1} << 62})}));
  TypeInferenceReport tiled = infer_types(model, builtin_registry()).value();
  ASSERT_EQ(tiled.warnings.size(), 1u);
  EXPECT_NE(tiled.warnings[0].find("overflows int64"), std::string::npos) << tiled.warnings[0];

  Model concat_model = model_at(17);
  GraphBuilder c(concat_model);
  Value* big = c.input("big", {int64_t{1} << 62});
  Value* joined = c.op("Concat", {big, big}, {Attr::Int("axis", 0)});
  c.output(joined);
  TypeInferenceOptions rules_only;
  rules_only.use_libonnx = false;
  TypeInferenceReport concatenated =
      infer_types(concat_model, builtin_registry(), rules_only).value();
  EXPECT_TRUE(concatenated.warnings.empty());
  EXPECT_FALSE((*joined->type().shape)[0].is_known());
}

// A Conv's attributes are judged even when nothing is known of its inputs' types.
TEST(InferTypes, ConvAttributesAreJudgedWithoutInputTypes) {
  Model model = model_at(17);
  GraphBuilder b(model);
  Value* x = b.op("NoRule", {b.input("x", {1, 1, 4, 4})}, {}, "com.test");
  b.output(b.op("Conv", {x, b.input("w", {1, 1, 1, 1})}, {Attr::Ints("dilations", {0, 1})}));
  TypeInferenceReport report = infer_types(model, test_registry()).value();
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_NE(report.warnings[0].find("dilations"), std::string::npos) << report.warnings[0];
}

TEST(InferTypes, ModelsLibonnxKnowsAreInferredByItWhole) {
  Model model = model_at(17);
  GraphBuilder b(model);
  Value* x = b.input("x", {2, 3});
  Value* relu = b.op("Relu", {x});
  Value* no_rule = b.op("NoRule", {relu}, {}, "com.test");
  b.output(no_rule);
  const OpRegistry registry = test_registry();
  TypeInferenceReport report = infer_types(model, registry).value();
  EXPECT_EQ(report.by_libonnx, 2u);
  EXPECT_EQ(report.by_rule, 0u);
  EXPECT_EQ(type_of(relu), "float[2,3]");
  // As before: libonnx leaves ops it does not know untyped.
  EXPECT_EQ(no_rule->type().kind, ValueType::Kind::kNone);
}

// An op of a domain libonnx has no schema for, with a rule (com.microsoft's QLinearAdd in
// ONNX Runtime's QOperator files): node by node, so it and what follows it are typed.
TEST(InferTypes, OpsOfDomainsLibonnxDoesNotKnowUseTheirRules) {
  Model model = model_at(17);
  GraphBuilder b(model);
  Value* x = b.input("x", {2, 3});
  Value* twice = b.op("Twice", {b.op("Relu", {x})}, {}, "com.test");
  Value* relu = b.op("Relu", {twice});
  b.output(relu);
  const OpRegistry registry = test_registry();
  TypeInferenceReport report = infer_types(model, registry).value();
  EXPECT_EQ(report.by_libonnx, 2u);
  EXPECT_EQ(report.by_rule, 1u);
  EXPECT_EQ(type_of(twice), "float[2,6]");
  EXPECT_EQ(type_of(relu), "float[2,6]");
}

TEST(InferTypes, WithoutLibonnxEveryNodeNeedsARule) {
  Model model = model_at(17);
  GraphBuilder b(model);
  Value* x = b.input("x", {2, 3});
  Value* twice = b.op("Twice", {x}, {}, "com.test");
  b.output(b.op("NoRule", {twice}, {}, "com.test"));
  const OpRegistry registry = test_registry();
  TypeInferenceOptions options;
  options.use_libonnx = false;
  TypeInferenceReport report = infer_types(model, registry, options).value();
  EXPECT_EQ(report.by_rule, 1u);
  EXPECT_EQ(report.unknown, 1u);
  EXPECT_EQ(type_of(twice), "float[2,6]");
}

TEST(InferTypes, ConstantShapeComputationsReachLibonnxAsData) {
  Model model = model_at(18);
  GraphBuilder b(model);
  Value* x = b.input("x", std::vector<Dim>{Dim::symbol("batch"), Dim::known(4)}, DType::kFloat);
  Value* y = b.input("y", {2, 3});
  Value* relu = b.op("Relu", {x});  // forces the walk
  // A fully known target: Shape(y) -> Reshape to [2, 3] of a [3, 2] tensor.
  Value* known = b.op("Reshape", {b.input("z", {3, 2}), b.op("Shape", {y})});
  // A partly known one: Shape(relu) = [batch, 4] as libonnx's symbolic input.
  Value* partly = b.op(
      "Reshape", {b.input("w", std::vector<Dim>{Dim::symbol("batch"), Dim::known(2), Dim::known(2)},
                          DType::kFloat),
                  b.op("Shape", {relu})});
  b.output(known);
  b.output(partly);
  const OpRegistry registry = test_registry();
  infer_types(model, registry).value();
  EXPECT_EQ(type_of(known), "float[2,3]");
  EXPECT_EQ(type_of(partly), "float[batch,4]");
}

// Rules alone (an opset libonnx does not know: Shape, Gather, Concat and Reshape at 21 are
// all newer than libonnx's) still see a computed Reshape target's named dims.
TEST(InferTypes, RulesSeeComputedShapeTargetsSymbolically) {
  Model model = model_at(21);
  GraphBuilder b(model);
  Value* x = b.input("x", std::vector<Dim>{Dim::symbol("batch"), Dim::symbol("seq"), Dim::known(8)},
                     DType::kFloat);
  const auto axis0 = [](Node* n) { set_int(n, "axis", 0); };
  Value* shape = b.op("Shape", {x});
  Value* batch = b.op("Gather", {shape, b.ints({0})}, axis0);
  Value* seq = b.op("Gather", {shape, b.ints({1})}, axis0);
  Value* target = b.op("Concat", {batch, seq, b.ints({2, 4})}, axis0);
  Value* reshaped = b.op("Reshape", {x, target});
  Value* expanded = b.op("Expand", {b.constant(Tensor(DType::kFloat, {1})), target});
  Value* filled = b.op("ConstantOfShape", {target});
  b.output(reshaped);
  b.output(expanded);
  b.output(filled);
  const OpRegistry registry = test_registry();
  TypeInferenceOptions options;
  options.use_libonnx = false;
  TypeInferenceReport report = infer_types(model, registry, options).value();
  EXPECT_EQ(report.unknown, 0u);
  EXPECT_EQ(type_of(reshaped), "float[batch,seq,2,4]");
  EXPECT_EQ(type_of(expanded), "float[batch,seq,2,4]");
  EXPECT_EQ(type_of(filled), "float[batch,seq,2,4]");
}

TEST(InferTypes, DeclaredOutputDimsAreNotReplacedWithLess) {
  Model model = model_at(18);
  GraphBuilder b(model);
  Value* x = b.input("x", {2, 3});
  Node* node = b.node("Rank", {x}, {}, 1, "com.test");
  const OpRegistry base = test_registry();
  OpRegistry registry = base;
  registry.add("com.test", "Rank", 1,
               OpDefinition(base.find("", "Relu", 14)->definition).with_types(infer_rank_only));
  Value* out = node->output(0);
  out->set_type(ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(2), Dim::known(3)}));
  b.output(out);
  Value* inner = b.op("Rank", {x}, {}, "com.test");
  b.output(b.op("Relu", {inner}));
  TypeInferenceReport report = infer_types(model, registry).value();
  EXPECT_EQ(report.by_rule, 3u);
  EXPECT_EQ(type_of(out), "float[2,3]");
  // Dims nothing knows get fresh names, as libonnx names them.
  EXPECT_EQ(type_of(inner), "float[unk__0,unk__1]");
}

TEST(InferTypes, SubgraphsAreInferredThroughTheirOwnersRule) {
  Model model = model_at(18);
  GraphBuilder b(model);
  Value* x = b.input("x", {2, 3});
  Value* cond = b.input("cond", std::vector<int64_t>{}, DType::kBool);
  Node* if_node = b.node("If", {cond});
  auto branch = [&](const std::string& op) {
    auto graph = std::make_unique<Graph>(&b.graph());
    Value* out = graph->add_node(op, {x}, {op + "_branch_out"})->output(0);
    graph->add_output(out);
    return graph;
  };
  Attribute then_branch;
  then_branch.name = "then_branch";
  then_branch.type = AttrType::kGraph;
  then_branch.g = branch("Relu");
  if_node->set_attribute(std::move(then_branch));
  Attribute else_branch;
  else_branch.name = "else_branch";
  else_branch.type = AttrType::kGraph;
  else_branch.g = branch("Relu");
  if_node->set_attribute(std::move(else_branch));
  b.output(if_node->output(0));
  const OpRegistry registry = test_registry();
  TypeInferenceReport report = infer_types(model, registry).value();
  EXPECT_EQ(report.by_libonnx, 1u);  // If-16, through libonnx's GraphInferencer
  EXPECT_EQ(report.by_rule, 2u);     // each branch's Relu-18
  EXPECT_EQ(type_of(if_node->output(0)), "float[2,3]");
}

TEST(InferTypes, RuleErrorsNameTheNodeAndFailOnlyWhenStrict) {
  Model model = model_at(18);
  GraphBuilder b(model);
  Value* x = b.input("x", {5});
  Value* twice = b.op("Twice", {b.op("Relu", {x})}, {}, "com.test");
  b.output(twice);
  const OpRegistry registry = test_registry();
  TypeInferenceReport report = infer_types(model, registry).value();
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_NE(report.warnings[0].find("Twice"), std::string::npos) << report.warnings[0];
  EXPECT_NE(report.warnings[0].find("rank 1"), std::string::npos) << report.warnings[0];
  EXPECT_EQ(report.unknown, 1u);
  TypeInferenceOptions strict;
  strict.strict = true;
  auto failed = infer_types(model, registry, strict);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().find("Twice"), std::string::npos) << failed.error();
}

TEST(InferTypes, OpsetsNewerThanOnnx123AreRefusedClearly) {
  Model model = model_at(29);
  GraphBuilder b(model);
  b.output(b.op("Relu", {b.input("x", {2})}));
  auto result = infer_types(model, builtin_registry());
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().find("opset 29, newer than the 28"), std::string::npos)
      << result.error();
}

// A rule that accepts a node libonnx refuses (the fuzzer found several) must not leave the
// values downstream untyped in libonnx's whole-model inference: a Shape's data propagation
// then read a missing input type (SEGV). The element types the rules inferred go to libonnx as
// value_info; the refused node's output keeps its dtype.
TEST(InferTypes, ANodeLibonnxRefusesLeavesItsOutputsTyped) {
  // LogSoftmax-13's kernel registered as version 14 with a rule that checks no axis: a gap
  // (libonnx infers the node with its LogSoftmax-13 in whole-model mode).
  OpRegistry registry = builtin_registry();
  OpDefinition unchecked = registry.find("", "LogSoftmax", 13)->definition;
  unchecked.infer_types = infer_same_as_input;
  registry.add("", "LogSoftmax", 14, unchecked);
  Model model = model_at(14);
  GraphBuilder b(model);
  Value* x =
      b.input("x", std::vector<Dim>{Dim::known(2), Dim::known(3), Dim::known(4)}, DType::kFloat);
  Value* y = b.op("LogSoftmax", {x}, {Attr::Int("axis", 3)});  // libonnx: axis out of range
  Value* shape = b.op("Shape", {y});
  b.output(b.op("Add", {shape, shape}));
  TypeInferenceReport report = infer_types(model, registry).value();
  EXPECT_EQ(report.by_libonnx, 3u);   // whole-model inference
  EXPECT_EQ(type_of(y), "float[*]");  // the rules' element type; libonnx inferred nothing
  EXPECT_EQ(type_of(shape).rfind("int64[", 0), 0u) << type_of(shape);  // its length unknown
}

}  // namespace
}  // namespace onnxkit::testing

#include "onnx/onnx_checks.h"
#include "pass_test_util.h"
#include "passes/pipeline.h"
#include "registry/builtin_registry.h"

namespace onnxkit::testing {
namespace {

Dim sym(const std::string& name) {
  return Dim::symbol(name);
}
Dim num(int64_t v) {
  return Dim::known(v);
}
Dim unnamed() {
  return Dim{};
}

Value* ints(Graph& g, const std::string& name, std::vector<int64_t> values, bool scalar = false) {
  Shape shape;
  if (!scalar) shape.push_back(static_cast<int64_t>(values.size()));
  Value* v = g.add_initializer(name, Tensor::from_vector(DType::kInt64, shape, values));
  std::vector<Dim> dims;
  if (!scalar) dims.push_back(num(static_cast<int64_t>(values.size())));
  v->set_type(ValueType::tensor(DType::kInt64, dims));
  return v;
}

// Builds the shape arithmetic PyTorch exports, one node at a time.
struct Builder {
  Graph& g;
  int64_t opset;
  int counter = 0;

  std::string fresh(const std::string& prefix) { return prefix + "_" + std::to_string(counter++); }
  Value* node(const std::string& op, std::vector<Value*> inputs) {
    return g.add_node(op, std::move(inputs), {fresh(op)})->output(0);
  }
  Value* shape(Value* x) { return node("Shape", {x}); }
  Value* gather(Value* vec, int64_t index) {
    return node("Gather", {vec, ints(g, fresh("index"), {index}, true)});
  }
  Value* unsqueeze(Value* scalar) {
    if (opset >= 13) return node("Unsqueeze", {scalar, ints(g, fresh("axes"), {0})});
    Value* out = node("Unsqueeze", {scalar});
    set_ints(out->producer(), "axes", {0});
    return out;
  }
  Value* dim(Value* x, int64_t index) { return unsqueeze(gather(shape(x), index)); }
  Value* concat(std::vector<Value*> parts) {
    Value* out = node("Concat", std::move(parts));
    set_int(out->producer(), "axis", 0);
    return out;
  }
  Value* reshape(Value* x, Value* target) { return node("Reshape", {x, target}); }
};

// Exactly the outputs of `before`, the symbolic dims bound to the given values.
::testing::AssertionResult same_outputs_with(const Model& before, const Model& after,
                                             const std::map<std::string, int64_t>& dims) {
  return same_outputs_on(before, after, random_feeds(before, dims, 7), {0, 0});
}

// As the pipeline: shape inference first, then the pass on the graph and its subgraphs.
size_t run_pass(Model& model, PassContext& context) {
  EXPECT_TRUE(infer_shapes(model).ok());
  context.model = &model;
  context.registry = &builtin_registry();
  auto pass = make_shape_folding_pass();
  size_t changes = 0;
  std::function<void(Graph&)> visit = [&](Graph& g) {
    changes += pass->run(g, context);
    for (Node* node : g.nodes()) {
      for (Graph* sub : node->subgraphs()) visit(*sub);
    }
  };
  visit(model.graph());
  model.graph().sort_topologically();
  Status verified = verify_model(model);
  EXPECT_TRUE(verified.ok()) << verified.message();
  return changes;
}

size_t run_pass(Model& model) {
  PassContext context;
  return run_pass(model, context);
}

// Rounds as the pipeline runs them: a Reshape's output shape is only inferred once its
// target is constant, which the next round's chain needs.
size_t run_rounds(Model& model) {
  size_t total = 0;
  for (int round = 0; round < 5; ++round) {
    const size_t changes = run_pass(model);
    if (changes == 0) return total;
    total += changes;
  }
  ADD_FAILURE() << "no fixed point after 5 rounds";
  return total;
}

// The constant target of the Reshape producing `name` (empty when not constant).
std::vector<int64_t> reshape_target(const Graph& g, const std::string& name) {
  const Value* out = g.lookup(name);
  if (!out || !out->producer() || out->producer()->op_type() != "Reshape") {
    ADD_FAILURE() << name << " is not a Reshape output";
    return {};
  }
  const Value* target = out->producer()->input(1);
  if (!target->has_initializer()) return {};
  const Tensor& t = target->initializer();
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

size_t shape_ops(const Model& model) {
  size_t n = 0;
  for (const char* op : {"Shape", "Gather", "Unsqueeze", "Concat", "Slice", "Mul", "Size"}) {
    n += count_ops(model, op);
  }
  return n;
}

// x: [batch, seq, 768] -> [batch, seq, 12, 64] -> [batch, seq, 768], both targets computed
// from Shape like BERT's attention (the second one with Slice).
Model bert(int64_t opset = 13) {
  Model model = empty_model(opset);
  Graph& g = model.graph();
  Builder b{g, opset};
  Value* x = g.add_input("x", float_dims({sym("batch"), sym("seq"), num(768)}));
  Value* heads = b.reshape(x, b.concat({b.dim(x, 0), b.dim(x, 1), ints(g, "heads", {12, 64})}));
  g.rename_value(heads, "heads_out");
  Value* relu = b.node("Relu", {heads});
  Value* first_two = b.node("Slice", {b.shape(relu), ints(g, "s0", {0}), ints(g, "s2", {2})});
  Value* merged = b.reshape(relu, b.concat({first_two, ints(g, "hidden", {768})}));
  g.rename_value(merged, "y");
  g.add_output(merged);
  return model;
}

TEST(ShapeFolding, BertReshapesGetConstantTargetsWithSymbolicDims) {
  Model model = bert();
  Model before = copy_model(model);
  EXPECT_GT(run_rounds(model), 0u);
  EXPECT_EQ(reshape_target(model.graph(), "heads_out"), (std::vector<int64_t>{0, 0, 12, 64}));
  EXPECT_EQ(reshape_target(model.graph(), "y"), (std::vector<int64_t>{0, 0, 768}));
  EXPECT_EQ(shape_ops(model), 0u) << "the dead shape chains are removed";
  EXPECT_EQ(count_ops(model, "Reshape"), 2u);
  EXPECT_TRUE(same_outputs_with(before, model, {{"batch", 3}, {"seq", 5}}));
  EXPECT_TRUE(same_outputs_with(before, model, {{"batch", 1}, {"seq", 7}}));
}

TEST(ShapeFolding, OldUnsqueezeWithAxesAttribute) {
  Model model = bert(11);
  Model before = copy_model(model);
  EXPECT_GT(run_rounds(model), 0u);
  EXPECT_EQ(reshape_target(model.graph(), "heads_out"), (std::vector<int64_t>{0, 0, 12, 64}));
  EXPECT_EQ(reshape_target(model.graph(), "y"), (std::vector<int64_t>{0, 0, 768}));
  EXPECT_TRUE(same_outputs_with(before, model, {{"batch", 2}, {"seq", 3}}));
}

TEST(ShapeFolding, FlattenViewKeepsBatchAndInfersTheRest) {
  // x.view(x.size(0), -1)
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_type({-1, 3, 4, 5}));
  Value* y = b.reshape(x, b.concat({b.dim(x, 0), ints(g, "rest", {-1})}));
  g.rename_value(y, "y");
  g.add_output(y);
  Model before = copy_model(model);
  EXPECT_GT(run_pass(model), 0u);
  EXPECT_EQ(reshape_target(g, "y"), (std::vector<int64_t>{0, -1}));
  EXPECT_EQ(g.node_count(), 1u);
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_TRUE(same_outputs_with(before, model, {{"n", 5}}));
}

TEST(ShapeFolding, MergedBatchAndSeqBecomesMinusOne) {
  // x.view(batch * seq, 768)
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_dims({sym("batch"), sym("seq"), num(768)}));
  Value* shape = b.shape(x);
  Value* tokens = b.node("Mul", {b.gather(shape, 0), b.gather(shape, 1)});
  Value* y = b.reshape(x, b.concat({b.unsqueeze(tokens), ints(g, "hidden", {768})}));
  g.rename_value(y, "y");
  g.add_output(y);
  Model before = copy_model(model);
  EXPECT_GT(run_pass(model), 0u);
  EXPECT_EQ(reshape_target(g, "y"), (std::vector<int64_t>{-1, 768}));
  EXPECT_TRUE(same_outputs_with(before, model, {{"batch", 3}, {"seq", 4}}));
}

TEST(ShapeFolding, TwoUnknownDimsInOneTargetStayDynamic) {
  // z = x.view(batch * seq, 768); z.view(batch, seq, 12, 64): z's first dim is neither.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_dims({sym("batch"), sym("seq"), num(768)}));
  Value* z = b.reshape(x, ints(g, "flat", {-1, 768}));
  Value* target = b.concat({b.dim(x, 0), b.dim(x, 1), ints(g, "heads", {12, 64})});
  g.rename_value(target, "target");
  Value* y = b.reshape(z, target);
  g.rename_value(y, "y");
  g.add_output(y);
  Model before = copy_model(model);
  PassContext context;
  run_pass(model, context);
  EXPECT_EQ(reshape_target(g, "y"), std::vector<int64_t>{}) << "target stays computed";
  EXPECT_EQ(count_ops(model, "Shape"), 1u) << "both dims read one Shape(x)";
  EXPECT_EQ(count_ops(model, "Concat"), 1u);
  EXPECT_EQ(context.not_folded["target"], "depends on dynamic dims 'batch', 'seq'");
  EXPECT_TRUE(same_outputs_with(before, model, {{"batch", 3}, {"seq", 4}}));
}

TEST(ShapeFolding, LayersShareOneShapeComputation) {
  // GPT-2's Conv1D twice: y = z.view(x.size()[:-1] + (768,)) with z = x.view(-1, 768), the
  // target computed from each layer's own input. The second layer's input comes through a
  // Reshape with a computed target and an Add, whose dims ONNX names with fresh symbols;
  // they are tied back to batch and seq, and both layers read one shape computation.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_dims({sym("batch"), sym("seq"), num(768)}));
  auto layer = [&](Value* in) {
    Value* flat = b.reshape(in, ints(g, b.fresh("flat"), {-1, 768}));
    Value* relu = b.node("Relu", {flat});
    Value* target = b.concat({b.dim(in, 0), b.dim(in, 1), ints(g, b.fresh("hidden"), {768})});
    return b.node("Add", {b.reshape(relu, target), in});
  };
  Value* y = layer(layer(layer(x)));
  g.rename_value(y, "y");
  g.add_output(y);
  Model before = copy_model(model);
  run_rounds(model);
  // [batch, seq, 768] is Shape(x) itself: every target becomes that one value.
  EXPECT_EQ(count_ops(model, "Shape"), 1u);
  EXPECT_EQ(count_ops(model, "Concat"), 0u);
  EXPECT_EQ(count_ops(model, "Gather"), 0u);
  EXPECT_EQ(count_ops(model, "Reshape"), 6u);
  EXPECT_TRUE(same_outputs_with(before, model, {{"batch", 2}, {"seq", 5}}));
}

TEST(ShapeFolding, TransposedDimsAreNotCopies) {
  // Reshape(x, [seq, batch, 768]) of x: [batch, seq, 768]: neither element is x's own dim.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_dims({sym("batch"), sym("seq"), num(768)}));
  Value* y = b.reshape(x, b.concat({b.dim(x, 1), b.dim(x, 0), ints(g, "hidden", {768})}));
  g.rename_value(y, "y");
  g.add_output(y);
  run_pass(model);
  EXPECT_EQ(reshape_target(g, "y"), std::vector<int64_t>{});
}

TEST(ShapeFolding, UnnamedDimsEqualOnlyThemselves) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_dims({unnamed(), unnamed(), num(4)}));
  Value* other = g.add_input("other", float_dims({unnamed(), unnamed(), num(4)}));
  // From x itself: copies. From another input's unnamed dims: two unknowns, no fold.
  Value* own = b.reshape(x, b.concat({b.dim(x, 0), b.dim(x, 1), ints(g, "two_two", {2, 2})}));
  g.rename_value(own, "own");
  Value* foreign = b.reshape(x, b.concat({b.dim(other, 0), b.dim(other, 1), ints(g, "four", {4})}));
  g.rename_value(foreign, "foreign");
  g.add_output(own);
  g.add_output(foreign);
  Model before = copy_model(model);
  run_pass(model);
  EXPECT_EQ(reshape_target(g, "own"), (std::vector<int64_t>{0, 0, 2, 2}));
  EXPECT_EQ(reshape_target(g, "foreign"), std::vector<int64_t>{});
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(ShapeFolding, StaticChainsFoldToInitializers) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Value* target = b.concat({b.dim(x, 1), ints(g, "rest", {-1})});
  g.rename_value(target, "target");
  Value* y = b.reshape(x, target);
  g.rename_value(y, "y");
  Value* shape = b.shape(x);
  g.rename_value(shape, "x_shape");
  Value* size = b.node("Size", {x});
  g.rename_value(size, "x_size");
  g.add_output(y);
  g.add_output(shape);
  g.add_output(size);
  Model before = copy_model(model);
  EXPECT_GT(run_pass(model), 0u);
  EXPECT_EQ(reshape_target(g, "y"), (std::vector<int64_t>{3, -1}));
  EXPECT_EQ(g.lookup("y")->producer()->input(1)->name(), "target") << "folded under its name";
  ASSERT_TRUE(g.lookup("x_shape")->has_initializer()) << "graph output kept by name";
  EXPECT_EQ(g.lookup("x_shape")->initializer().numel(), 3);
  ASSERT_TRUE(g.lookup("x_size")->has_initializer());
  EXPECT_EQ(g.lookup("x_size")->initializer().data<int64_t>()[0], 24);
  EXPECT_EQ(g.node_count(), 1u) << "only the Reshape is left";
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(ShapeFolding, KnownPartsOfAPartlyDynamicShapeFold) {
  // Expand needs the whole target; its static element still folds, and --explain says why
  // the rest did not.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_type({-1, 1, 4}));
  Value* shape = b.shape(x);
  Value* last = b.unsqueeze(b.gather(shape, 2));
  g.rename_value(last, "last");
  Value* target = b.concat({b.unsqueeze(b.gather(shape, 0)), ints(g, "three", {3}), last});
  g.rename_value(target, "target");
  Value* y = b.node("Expand", {x, target});
  g.add_output(y);
  Model before = copy_model(model);
  PassContext context;
  EXPECT_GT(run_pass(model, context), 0u);
  ASSERT_TRUE(g.lookup("last")->has_initializer());
  EXPECT_EQ(g.lookup("last")->initializer().data<int64_t>()[0], 4);
  EXPECT_EQ(count_ops(model, "Concat"), 1u);
  EXPECT_EQ(context.not_folded["target"], "depends on dynamic dim 'n'");
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_TRUE(same_outputs_with(before, model, {{"n", 6}}));
}

TEST(ShapeFolding, ShapeStartAndEnd) {
  Model model = empty_model(15);
  Graph& g = model.graph();
  Builder b{g, 15};
  Value* x = g.add_input("x", float_dims({sym("batch"), sym("seq"), num(768)}));
  Value* lead = b.shape(x);
  set_int(lead->producer(), "end", -1);  // [batch, seq]
  Value* hidden = b.shape(x);
  set_int(hidden->producer(), "start", -1);  // [768]
  g.rename_value(hidden, "hidden");
  Value* heads = b.node("Div", {hidden, ints(g, "head_size", {64})});  // [12]
  Value* y = b.reshape(x, b.concat({lead, heads, ints(g, "size", {64})}));
  g.rename_value(y, "y");
  g.add_output(y);
  Model before = copy_model(model);
  EXPECT_GT(run_pass(model), 0u);
  EXPECT_EQ(reshape_target(g, "y"), (std::vector<int64_t>{0, 0, 12, 64}));
  EXPECT_EQ(g.node_count(), 1u);
  EXPECT_TRUE(same_outputs_with(before, model, {{"batch", 2}, {"seq", 3}}));
}

TEST(ShapeFolding, AllowZeroNeverCopiesDims) {
  Model model = empty_model(14);
  Graph& g = model.graph();
  Builder b{g, 14};
  Value* x = g.add_input("x", float_type({-1, 3, 4, 5}));
  // [n, -1]: n cannot become 0 (a literal zero) and there is already a -1.
  Value* kept = b.reshape(x, b.concat({b.dim(x, 0), ints(g, "rest", {-1})}));
  set_int(kept->producer(), "allowzero", 1);
  g.rename_value(kept, "kept");
  // [n, 60]: n becomes the one -1.
  Value* inferred = b.reshape(x, b.concat({b.dim(x, 0), ints(g, "sixty", {60})}));
  set_int(inferred->producer(), "allowzero", 1);
  g.rename_value(inferred, "inferred");
  g.add_output(kept);
  g.add_output(inferred);
  Model before = copy_model(model);
  run_pass(model);
  EXPECT_EQ(reshape_target(g, "kept"), std::vector<int64_t>{});
  EXPECT_EQ(reshape_target(g, "inferred"), (std::vector<int64_t>{-1, 60}));
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_TRUE(same_outputs_with(before, model, {{"n", 3}}));
}

TEST(ShapeFolding, SymbolicIdentities) {
  // Reshape(x, [n * 1, (seq - seq) + 4, n / n * 5]) of x: [n, 4, 5].
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_dims({sym("n"), num(4), num(5)}));
  Value* s = g.add_input("s", float_dims({sym("seq")}));
  Value* n = b.gather(b.shape(x), 0);
  Value* seq = b.gather(b.shape(s), 0);
  Value* one = ints(g, "one", {1}, true);
  Value* n1 = b.node("Mul", {n, one});
  Value* four = b.node("Add", {b.node("Sub", {seq, seq}), ints(g, "four", {4}, true)});
  Value* five = b.node("Mul", {b.node("Div", {n, n}), ints(g, "five", {5}, true)});
  Value* y = b.reshape(x, b.concat({b.unsqueeze(n1), b.unsqueeze(four), b.unsqueeze(five)}));
  g.rename_value(y, "y");
  g.add_output(y);
  Model before = copy_model(model);
  run_pass(model);
  EXPECT_EQ(reshape_target(g, "y"), (std::vector<int64_t>{0, 4, 5}));
  EXPECT_EQ(g.node_count(), 1u);
  EXPECT_TRUE(same_outputs_with(before, model, {{"n", 3}, {"seq", 2}}));
}

TEST(ShapeFolding, EqualMinusOneIsDecidableForDims) {
  // The Expand pattern: Where(Equal(shape, -1), 1, shape).
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_type({-1, 1, 4}));
  Value* shape = b.shape(x);
  Value* is_unknown = b.node("Equal", {shape, ints(g, "minus_one", {-1}, true)});
  g.rename_value(is_unknown, "is_unknown");
  Value* where = b.node("Where", {is_unknown, ints(g, "ones", {1, 1, 1}), shape});
  Value* y = b.node("Expand", {x, where});
  g.add_output(y);
  Model before = copy_model(model);
  EXPECT_GT(run_pass(model), 0u);
  // Equal decides false everywhere, so the Where is Shape(x) itself and both go.
  EXPECT_EQ(count_ops(model, "Equal"), 0u);
  EXPECT_EQ(count_ops(model, "Where"), 0u);
  EXPECT_EQ(count_ops(model, "Shape"), 1u);
  EXPECT_TRUE(same_outputs_with(before, model, {{"n", 3}}));
}

TEST(ShapeFolding, CastAndMaxMin) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_dims({sym("batch"), num(6)}));
  Value* shape32 = b.node("Cast", {b.shape(x)});
  set_int(shape32->producer(), "to", static_cast<int64_t>(DType::kInt32));
  Value* back = b.node("Cast", {shape32});
  set_int(back->producer(), "to", static_cast<int64_t>(DType::kInt64));
  Value* clamped = b.node("Max", {back, ints(g, "zero", {0}, true)});      // [batch, 6]
  Value* halved = b.node("Min", {clamped, ints(g, "big", {1 << 20, 3})});  // [?, 3]
  Value* y = b.reshape(x, b.concat({b.unsqueeze(b.gather(clamped, 0)),
                                    b.unsqueeze(b.gather(halved, 1)), ints(g, "two", {2})}));
  g.rename_value(y, "y");
  g.add_output(y);
  Model before = copy_model(model);
  run_pass(model);
  EXPECT_EQ(reshape_target(g, "y"), (std::vector<int64_t>{0, 3, 2}));
  EXPECT_TRUE(same_outputs_with(before, model, {{"batch", 4}}));
}

TEST(ShapeFolding, GraphOutputInTheMiddleSurvives) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_type({-1, 3, 4, 5}));
  Value* batch = b.dim(x, 0);
  g.rename_value(batch, "batch");
  Value* y = b.reshape(x, b.concat({batch, ints(g, "rest", {-1})}));
  g.rename_value(y, "y");
  g.add_output(batch);
  g.add_output(y);
  Model before = copy_model(model);
  run_pass(model);
  EXPECT_EQ(reshape_target(g, "y"), (std::vector<int64_t>{0, -1}));
  ASSERT_NE(g.lookup("batch"), nullptr);
  EXPECT_EQ(g.lookup("batch")->producer()->op_type(), "Unsqueeze");
  EXPECT_EQ(count_ops(model, "Shape"), 1u);
  EXPECT_EQ(count_ops(model, "Concat"), 0u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(ShapeFolding, NonConstantOperandsAreLeftAlone) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_type({-1, 3, 4}));
  // Gather index from a graph input; a Reshape target from a graph input; an index that is
  // an initializer but also a graph input (a default the caller may override).
  Value* index = g.add_input("index", ValueType::tensor(DType::kInt64, std::vector<Dim>{}));
  Value* shape = b.shape(x);
  Value* picked = b.node("Gather", {shape, index});
  Value* dflt = ints(g, "dflt", {1}, true);
  g.add_input(dflt);
  Value* picked2 = b.node("Gather", {shape, dflt});
  Value* target = g.add_input("target", ValueType::tensor(DType::kInt64, std::vector<Dim>{num(2)}));
  Value* y = b.reshape(x, target);
  g.add_output(picked);
  g.add_output(picked2);
  g.add_output(y);
  const size_t nodes = g.node_count();
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(g.node_count(), nodes);
}

TEST(ShapeFolding, FloatShapeArithmeticIsLeftAlone) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_type({-1, 4}));
  Value* as_float = b.node("Cast", {b.shape(x)});
  set_int(as_float->producer(), "to", static_cast<int64_t>(DType::kFloat));
  g.add_output(as_float);
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "Cast"), 1u);
}

TEST(ShapeFolding, WorksInsideSubgraphsOnOuterValues) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* cond = g.add_input("cond", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  Value* x = g.add_input("x", float_type({-1, 8}));
  Node* if_node = g.add_node("If", {cond}, {"y"});
  Graph* branches[2];
  for (int i = 0; i < 2; ++i) {
    Attribute a;
    a.name = i == 0 ? "then_branch" : "else_branch";
    a.type = AttrType::kGraph;
    a.g = std::make_unique<Graph>(&g);
    branches[i] = a.g.get();
    if_node->set_attribute(std::move(a));
  }
  Builder then_b{*branches[0], 13, 100};
  Value* then_y =
      then_b.reshape(x, then_b.concat({then_b.dim(x, 0), ints(*branches[0], "tail", {2, 4})}));
  branches[0]->rename_value(then_y, "then_y");
  branches[0]->add_output(then_y);
  Builder else_b{*branches[1], 13, 200};
  Value* else_y = else_b.reshape(x, ints(*branches[1], "flat", {-1, 4, 2}));
  branches[1]->add_output(else_y);
  g.add_output(if_node->output(0));
  Model before = copy_model(model);
  EXPECT_GT(run_pass(model), 0u);
  EXPECT_EQ(reshape_target(*branches[0], "then_y"), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(branches[0]->node_count(), 1u);
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_TRUE(same_outputs_with(before, model, {{"n", 5}}));
}

// Split heads, transpose, merge heads back, with both Reshape targets computed from
// Shape; `suffix` names the block's values ("split<suffix>", "merged<suffix>").
Value* attention_block(Builder& b, Graph& g, Value* h, const std::string& suffix) {
  Value* split =
      b.reshape(h, b.concat({b.dim(h, 0), b.dim(h, 1), ints(g, "heads" + suffix, {12, 64})}));
  g.rename_value(split, "split" + suffix);
  Value* heads_first = b.node("Transpose", {split});
  set_ints(heads_first->producer(), "perm", {0, 2, 1, 3});
  Value* back = b.node("Transpose", {b.node("Relu", {heads_first})});
  set_ints(back->producer(), "perm", {0, 2, 1, 3});
  Value* merged = b.reshape(
      back, b.concat({b.dim(back, 0), b.dim(back, 1), ints(g, "hidden" + suffix, {768})}));
  g.rename_value(merged, "merged" + suffix);
  return merged;
}

// `blocks` attention blocks in a row through the pipeline with shape_folding alone.
Result<PipelineResult> fold_stack(Model& model, int blocks) {
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* h = g.add_input("x", float_dims({sym("batch"), sym("seq"), num(768)}));
  for (int block = 0; block < blocks; ++block) {
    h = attention_block(b, g, h, std::to_string(block));
  }
  g.add_output(h);
  std::vector<std::unique_ptr<GraphPass>> passes;
  passes.push_back(make_shape_folding_pass());
  PassContext context;
  context.registry = &builtin_registry();
  Model before = copy_model(model);
  auto result = run_pipeline(model, passes, context, {});
  EXPECT_TRUE(same_outputs_with(before, model, {{"batch", 2}, {"seq", 5}}));
  return result;
}

TEST(ShapeFolding, PipelineFoldsAnAttentionBlockToAFixedPoint) {
  // The second target is only known once the first Reshape's output shape is inferred.
  Model model = empty_model(13);
  auto result = fold_stack(model, 1);
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_TRUE(result.value().converged);
  EXPECT_EQ(reshape_target(model.graph(), "split0"), (std::vector<int64_t>{0, 0, 12, 64}));
  EXPECT_EQ(reshape_target(model.graph(), "merged0"), (std::vector<int64_t>{0, 0, 768}));
  EXPECT_EQ(shape_ops(model), 0u);
  EXPECT_TRUE(verify_model(model).ok());
}

TEST(ShapeFolding, DeepStacksFoldInOneApplicationNotOneLayerPerRound) {
  // Each block's merge target is only known once the previous block's output shape is
  // inferred again: twelve blocks must not take twelve pipeline rounds.
  Model model = empty_model(13);
  auto result = fold_stack(model, 12);
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_TRUE(result.value().converged);
  EXPECT_LE(result.value().rounds, 3);
  EXPECT_EQ(shape_ops(model), 0u);
  EXPECT_EQ(reshape_target(model.graph(), "merged11"), (std::vector<int64_t>{0, 0, 768}));
}

TEST(ShapeFolding, RangeOverADimHasThatDimsLength) {
  // GPT-2's causal mask: positions = Range(0, seq, 1); ONNX inference leaves its length
  // unknown, so everything built from it loses `seq`.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Builder b{g, 13};
  Value* x = g.add_input("x", float_dims({sym("batch"), sym("seq"), num(8)}));
  Value* seq = b.gather(b.shape(x), 1);
  Value* positions = b.node("Range", {ints(g, "zero", {0}, true), seq, ints(g, "one", {1}, true)});
  g.rename_value(positions, "positions");
  Value* as_float = b.node("Cast", {positions});
  set_int(as_float->producer(), "to", static_cast<int64_t>(DType::kFloat));
  Value* column = b.node("Unsqueeze", {as_float, ints(g, "last", {1})});
  Value* y = b.node("Add", {x, column});
  g.rename_value(y, "y");
  g.add_output(y);
  Model before = copy_model(model);
  run_rounds(model);
  const ValueType& type = g.lookup("positions")->type();
  ASSERT_TRUE(type.shape.has_value());
  ASSERT_EQ(type.shape->size(), 1u);
  EXPECT_EQ((*type.shape)[0].param, "seq");
  EXPECT_TRUE(same_outputs_with(before, model, {{"batch", 2}, {"seq", 5}}));
}

}  // namespace
}  // namespace onnxkit::testing

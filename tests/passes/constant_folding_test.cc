#include "pass_test_util.h"

namespace onnxkit::testing {
namespace {

Tensor floats(std::vector<float> values) {
  const auto n = static_cast<int64_t>(values.size());
  return Tensor::from_vector(DType::kFloat, {n}, values);
}

// Runs constant folding on `graph` (the main graph by default) with `context` (so the test
// can read not_folded).
size_t fold(Model& model, PassContext& context, Graph* graph = nullptr) {
  return apply_pass(*make_constant_folding_pass(), model, context, graph);
}

size_t fold(Model& model, Graph* graph = nullptr) {
  PassContext context;
  return fold(model, context, graph);
}

// main: y = If(cond = constant false) { then: `build(then graph)` } else { x }. The then
// branch never runs, so the executor accepts nodes there that fail or would not fit.
Graph& untaken_branch(Model& model, Value* x) {
  Graph& g = model.graph();
  Value* cond = g.add_initializer("cond", bool_scalar(false));
  Node* if_node = g.add_node("If", {cond}, {"y"}, "", "if");
  g.add_output(if_node->output(0));
  Attribute else_branch = typed_attribute("else_branch", AttrType::kGraph);
  else_branch.g = std::make_unique<Graph>(&g);
  Node* id = else_branch.g->add_node("Identity", {x}, {"x_copy"});
  else_branch.g->add_output(id->output(0));
  if_node->set_attribute(std::move(else_branch));
  Attribute then_branch = typed_attribute("then_branch", AttrType::kGraph);
  then_branch.g = std::make_unique<Graph>(&g);
  Graph& branch = *then_branch.g;
  if_node->set_attribute(std::move(then_branch));
  return branch;
}

TEST(ConstantFolding, FoldsArithmeticChains) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3}));
  Value* a = g.add_initializer("a", random_floats({2, 3}, 1));
  Value* b = g.add_initializer("b", random_floats({3}, 2));
  Node* add = g.add_node("Add", {a, b}, {"c"});
  Node* mul = g.add_node("Mul", {add->output(0), add->output(0)}, {"d"});
  Node* sub = g.add_node("Sub", {x, mul->output(0)}, {"out"});
  g.add_output(sub->output(0));
  Model before = copy_model(model);

  EXPECT_EQ(fold(model), 2u);
  EXPECT_EQ(count_ops(model, "Add"), 0u);
  EXPECT_EQ(count_ops(model, "Mul"), 0u);
  EXPECT_EQ(count_ops(model, "Sub"), 1u);
  Value* d = g.find_value("d");
  ASSERT_TRUE(d && d->has_initializer());
  EXPECT_EQ(d->initializer().shape(), (Shape{2, 3}));
  const float a5 = a->initializer().data<float>()[5], b2 = b->initializer().data<float>()[2];
  EXPECT_FLOAT_EQ(d->initializer().data<float>()[5], (a5 + b2) * (a5 + b2));
  // The intermediate is an initializer nothing reads (remove_unused_initializers drops it).
  ASSERT_TRUE(g.find_value("c") && g.find_value("c")->has_initializer());
  EXPECT_TRUE(is_unused(g.find_value("c")));
  EXPECT_EQ(sub->input(1), d);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(ConstantFolding, ShapeAndSizeOfAFullyStaticInput) {
  Model model = empty_model(15);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Value* y = g.add_input("y", float_type({24}));
  Value* z = g.add_input("z", float_type({-1, 3}));  // symbolic first dim
  Node* shape = g.add_node("Shape", {x}, {"s"});
  Node* reshape = g.add_node("Reshape", {y, shape->output(0)}, {"out"});
  Node* tail = g.add_node("Shape", {x}, {"s_tail"});
  tail->set_attribute(int_attribute("start", -2));
  Node* size = g.add_node("Size", {x}, {"n"});
  Node* shape_z = g.add_node("Shape", {z}, {"sz"});
  g.add_output(reshape->output(0));
  g.add_output(tail->output(0));
  g.add_output(size->output(0));
  g.add_output(shape_z->output(0));
  Model before = copy_model(model);

  PassContext context;
  EXPECT_EQ(fold(model, context), 3u);
  EXPECT_EQ(count_ops(model, "Shape"), 1u) << "the symbolic shape stays";
  EXPECT_EQ(count_ops(model, "Size"), 0u);
  ASSERT_TRUE(g.find_value("s")->has_initializer());
  EXPECT_TRUE(g.find_value("s")->initializer().same_contents(int64s({2, 3, 4})));
  EXPECT_TRUE(g.find_value("s_tail")->initializer().same_contents(int64s({3, 4})));
  EXPECT_EQ(g.find_value("n")->initializer().data<int64_t>()[0], 24);
  EXPECT_EQ(g.outputs()[1]->name(), "s_tail");
  EXPECT_TRUE(context.not_folded.empty()) << "a non-constant input is not 'foldable-looking'";
  EXPECT_TRUE(same_outputs(before, model));
}

// Malformed Shape / Size nodes are not folded from their input's static shape: one with a
// second output (the fold wrote one result for two outputs), and a Size whose element count
// leaves int64 (fuzz: constant_folding_shape_with_two_outputs, constant_folding_size_overflow).
TEST(ConstantFolding, StaticShapeOfMalformedNodesIsNotFolded) {
  Model model = empty_model(15);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Value* huge = g.add_input("huge", float_type({int64_t{1} << 40, int64_t{1} << 40}));
  Node* shape = g.add_node("Shape", {x}, {"s", "extra"});
  Node* size = g.add_node("Size", {huge}, {"n"});
  g.add_output(shape->output(0));
  g.add_output(shape->output(1));
  g.add_output(size->output(0));
  EXPECT_EQ(fold(model), 0u);
  EXPECT_EQ(count_ops(model, "Shape"), 1u);
  EXPECT_EQ(count_ops(model, "Size"), 1u);
}

TEST(ConstantFolding, OmittedOptionalInputs) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({4}));
  Value* c = g.add_initializer("c", floats({-2, 0.5f, 3, 9}));
  Value* hi = g.add_initializer("hi", Tensor::from_vector<float>(DType::kFloat, {}, {2}));
  // Clip without min; Slice with axes omitted but steps given.
  Node* clip = g.add_node("Clip", {c, nullptr, hi}, {"clipped"});
  Value* starts = g.add_initializer("starts", int64s({3}));
  Value* ends = g.add_initializer("ends", int64s({-5}));
  Value* steps = g.add_initializer("steps", int64s({-1}));
  Node* slice = g.add_node("Slice", {clip->output(0), starts, ends, nullptr, steps}, {"rev"});
  Node* add = g.add_node("Add", {x, slice->output(0)}, {"out"});
  g.add_output(add->output(0));
  Model before = copy_model(model);

  EXPECT_EQ(fold(model), 2u);
  EXPECT_EQ(g.node_count(), 1u);
  Value* rev = g.find_value("rev");
  ASSERT_TRUE(rev->has_initializer());
  EXPECT_TRUE(rev->initializer().same_contents(floats({2, 2, 0.5f, -2})));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(ConstantFolding, GraphOutputProducedByAFoldedNode) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3}));
  Value* a = g.add_initializer("a", random_floats({3}, 3));
  Value* b = g.add_initializer("b", random_floats({3}, 4));
  Node* add = g.add_node("Add", {a, b}, {"sum"});
  Node* mul = g.add_node("Mul", {add->output(0), x}, {"prod"});
  g.add_output(add->output(0));  // a graph output in the middle of the graph
  g.add_output(mul->output(0));
  Model before = copy_model(model);

  EXPECT_EQ(fold(model), 1u);
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.outputs()[0]->name(), "sum");
  EXPECT_TRUE(g.outputs()[0]->has_initializer());
  EXPECT_FALSE(g.is_input(g.outputs()[0]));
  EXPECT_EQ(mul->input(0), g.outputs()[0]);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(ConstantFolding, SizeGuardKeepsBlowUps) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({100}));
  Node* cos = g.add_node("ConstantOfShape", {g.add_initializer("shape", int64s({100}))}, {"cos"});
  Node* expand = g.add_node(
      "Expand", {g.add_initializer("one", floats({1})), g.add_initializer("target", int64s({100}))},
      {"expanded"});
  Node* tile = g.add_node(
      "Tile",
      {g.add_initializer("four", floats({1, 2, 3, 4})), g.add_initializer("repeats", int64s({25}))},
      {"tiled"});
  // Concat: no estimate before running, the size is checked on the result.
  Node* concat = g.add_node("Concat",
                            {g.add_initializer("h1", random_floats({50}, 5)),
                             g.add_initializer("h2", random_floats({50}, 6))},
                            {"joined"});
  concat->set_attribute(int_attribute("axis", 0));
  // Small enough: folded.
  Node* small = g.add_node("Expand", {g.find_value("one"), g.add_initializer("eight", int64s({8}))},
                           {"small"});
  Value* sum = x;
  for (Node* node : {cos, expand, tile, concat}) {
    sum =
        g.add_node("Add", {sum, node->output(0)}, {"after_" + node->output(0)->name()})->output(0);
  }
  g.add_output(sum);
  g.add_output(small->output(0));
  Model before = copy_model(model);

  PassContext context;
  context.tensor_size_threshold = 64;
  EXPECT_EQ(fold(model, context), 1u);
  EXPECT_TRUE(g.find_value("small")->has_initializer());
  for (const char* kept : {"cos", "expanded", "tiled", "joined"}) {
    EXPECT_FALSE(g.find_value(kept)->has_initializer()) << kept;
    EXPECT_EQ(context.not_folded[kept], "output of 400 bytes is over the size threshold") << kept;
  }
  EXPECT_EQ(context.not_folded.count("small"), 0u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(ConstantFolding, GrowthGuardCountsOnlyInputsThatGoAway) {
  // Split of a 96-byte constant into two 48-byte halves: each output is under the threshold
  // of 64, but while the constant has another reader the model would grow by 96 bytes.
  for (bool shared : {true, false}) {
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* x = g.add_input("x", float_type({24}));
    Value* a = g.add_initializer("a", random_floats({24}, 9));
    Node* split = g.add_node("Split", {a}, {"lo", "hi"});
    Node* add = g.add_node("Add", {split->output(0), split->output(1)}, {"halves"});
    Node* mul = g.add_node("Mul", {x, shared ? a : x}, {"scaled"});
    g.add_output(add->output(0));
    g.add_output(mul->output(0));
    Model before = copy_model(model);

    PassContext context;
    context.tensor_size_threshold = 64;
    if (shared) {
      EXPECT_EQ(fold(model, context), 0u);
      EXPECT_EQ(context.not_folded["lo"],
                "folding grows the model by 96 bytes, over the size threshold");
      EXPECT_EQ(count_ops(model, "Split"), 1u);
    } else {
      EXPECT_EQ(fold(model, context), 2u) << "Split, then the Add of its halves";
      EXPECT_EQ(count_ops(model, "Split"), 0u);
      EXPECT_TRUE(context.not_folded.empty());
    }
    EXPECT_TRUE(same_outputs(before, model)) << "shared " << shared;
  }
}

TEST(ConstantFolding, TransposeOfASharedBigWeightStaysForMatMul) {
  // GPT-2's tied LM head: the token embedding feeds a Gather and, transposed, the last
  // MatMul. Folding the Transpose would store a second 16 MiB copy of it.
  for (bool shared : {true, false}) {
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* e = g.add_input("e", float_type({3, 1024}));
    Value* wte = g.add_initializer("wte", random_floats({4096, 1024}, 4));
    Node* transpose = g.add_node("Transpose", {wte}, {"wte_t"});
    g.add_output(g.add_node("MatMul", {e, transpose->output(0)}, {"logits"})->output(0));
    if (shared) {
      Value* ids =
          g.add_input("ids", ValueType::tensor(DType::kInt64, std::vector<Dim>{Dim::known(2)}));
      g.add_output(g.add_node("Gather", {wte, ids}, {"rows"})->output(0));
    }
    PassContext context;
    if (shared) {
      Model before = copy_model(model);
      EXPECT_EQ(fold(model, context), 0u);
      EXPECT_EQ(count_ops(model, "Transpose"), 1u);
      EXPECT_NE(context.not_folded["wte_t"].find("would copy the shared weight 'wte'"),
                std::string::npos)
          << context.not_folded["wte_t"];
      EXPECT_TRUE(same_outputs(before, model));
    } else {
      EXPECT_EQ(fold(model, context), 1u);
      EXPECT_EQ(count_ops(model, "Transpose"), 0u);
    }
  }
}

TEST(ConstantFolding, SessionsKeepWeightTransposesForMatMul) {
  // A 2 MiB weight read only through a Transpose by a MatMul: simplify folds it, a session
  // leaves it for trans_b (its kernel packs its own copy).
  for (bool session : {false, true}) {
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* e = g.add_input("e", float_type({3, 1024}));
    Value* w = g.add_initializer("w", random_floats({512, 1024}, 5));
    Node* transpose = g.add_node("Transpose", {w}, {"w_t"});
    g.add_output(g.add_node("MatMul", {e, transpose->output(0)}, {"y"})->output(0));
    Model before = copy_model(model);
    PassContext context;
    context.keep_weight_transposes = session;
    EXPECT_EQ(fold(model, context), session ? 0u : 1u);
    EXPECT_EQ(count_ops(model, "Transpose"), session ? 1u : 0u);
    if (session) {
      EXPECT_EQ(context.not_folded["w_t"], "a session's MatMul/Gemm reads the weight transposed");
    }
    EXPECT_TRUE(same_outputs(before, model)) << "session " << session;
  }
}

TEST(ConstantFolding, HugeBlowUpIsNeverMaterialized) {
  Model model = empty_model(13);
  Value* x = model.graph().add_input("x", float_type({2}));
  Graph& branch = untaken_branch(model, x);
  // 4 TiB of zeros: the estimate from the constant shape stops it before the kernel runs.
  Value* shape = branch.add_initializer("huge_shape", int64s({int64_t{1} << 20, int64_t{1} << 20}));
  Node* cos = branch.add_node("ConstantOfShape", {shape}, {"huge"});
  Node* sum = branch.add_node("ReduceSum", {cos->output(0)}, {"total"});
  sum->set_attribute(int_attribute("keepdims", 0));
  Node* add = branch.add_node("Add", {x, sum->output(0)}, {"then_out"});
  branch.add_output(add->output(0));
  Model before = copy_model(model);

  PassContext context;  // default threshold (1.5 GB)
  EXPECT_EQ(fold(model, context, &branch), 0u);
  EXPECT_EQ(context.not_folded["huge"], "output of 4398046511104 bytes is over the size threshold");
  EXPECT_EQ(branch.node_count(), 3u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(ConstantFolding, NonDeterministicOpsAreKept) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3}));
  Value* c = g.add_initializer("c", random_floats({3}, 11));
  Attribute seed = typed_attribute("seed", AttrType::kFloat);
  seed.f = 3;
  Node* uniform = g.add_node("RandomUniform", {}, {"uniform"});
  Attribute shape = typed_attribute("shape", AttrType::kInts);
  shape.ints = {3};
  uniform->set_attribute(std::move(shape));
  uniform->set_attribute(std::move(seed));
  Node* normal = g.add_node("RandomNormalLike", {c}, {"normal"});
  Attribute seed2 = typed_attribute("seed", AttrType::kFloat);
  seed2.f = 4;
  normal->set_attribute(std::move(seed2));
  Value* ratio = g.add_initializer("ratio", Tensor::from_vector<float>(DType::kFloat, {}, {0.5f}));
  Node* train =
      g.add_node("Dropout", {c, ratio, g.add_initializer("on", bool_scalar(true))}, {"trained"});
  train->set_attribute(int_attribute("seed", 5));
  Node* infer =
      g.add_node("Dropout", {c, ratio, g.add_initializer("off", bool_scalar(false))}, {"inferred"});
  Value* sum = x;
  for (Node* node : {uniform, normal, train, infer}) {
    sum =
        g.add_node("Add", {sum, node->output(0)}, {"after_" + node->output(0)->name()})->output(0);
  }
  g.add_output(sum);
  Model before = copy_model(model);

  PassContext context;
  EXPECT_EQ(fold(model, context), 1u) << "only the inference-mode Dropout";
  EXPECT_EQ(count_ops(model, "Dropout"), 1u);
  EXPECT_TRUE(g.find_value("inferred")->has_initializer());
  for (const char* kept : {"uniform", "normal", "trained"}) {
    EXPECT_EQ(context.not_folded[kept], "non-deterministic op") << kept;
  }
  EXPECT_TRUE(same_outputs(before, model));  // seeded, so both runs draw alike
}

TEST(ConstantFolding, LegacyDropoutTrainsUnlessIsTest) {
  // Versions 1 and 6: is_test defaults to 0, which drops at random.
  for (int64_t opset : {1, 6}) {
    Model model = empty_model(opset);
    Graph& g = model.graph();
    Value* c = g.add_initializer("c", random_floats({3}, 11));
    g.add_output(g.add_node("Dropout", {c}, {"trained"})->output(0));
    Node* test = g.add_node("Dropout", {c}, {"tested"});
    test->set_attribute(int_attribute("is_test", 1));
    g.add_output(test->output(0));
    PassContext context;
    EXPECT_EQ(fold(model, context), 1u) << "opset " << opset;
    EXPECT_EQ(context.not_folded["trained"], "non-deterministic op");
    EXPECT_TRUE(g.find_value("tested")->has_initializer());
  }
}

TEST(ConstantFolding, KernelErrorIsRecordedNotThrown) {
  Model model = empty_model(13);
  Value* x = model.graph().add_input("x", float_type({2}));
  Graph& branch = untaken_branch(model, x);
  Node* reshape = branch.add_node("Reshape",
                                  {branch.add_initializer("six", random_floats({6})),
                                   branch.add_initializer("bad", int64s({4}))},
                                  {"reshaped"});
  Node* fine =
      branch.add_node("Neg", {branch.add_initializer("two", random_floats({2}, 3))}, {"negated"});
  Node* sum = branch.add_node("ReduceSum", {reshape->output(0)}, {"total"});
  sum->set_attribute(int_attribute("keepdims", 0));
  Node* add = branch.add_node("Add", {x, sum->output(0)}, {"partial"});
  Node* out = branch.add_node("Add", {add->output(0), fine->output(0)}, {"then_out"});
  branch.add_output(out->output(0));
  Model before = copy_model(model);

  PassContext context;
  size_t changes = 0;
  EXPECT_NO_THROW(changes = fold(model, context, &branch));
  EXPECT_EQ(changes, 1u) << "the Neg after the failing Reshape is still folded";
  EXPECT_EQ(branch.find_value("reshaped")->producer(), reshape);
  ASSERT_EQ(context.not_folded.count("reshaped"), 1u);
  EXPECT_EQ(context.not_folded["reshaped"].rfind("kernel error: ", 0), 0u)
      << context.not_folded["reshaped"];
  EXPECT_TRUE(branch.find_value("negated")->has_initializer());
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(ConstantFolding, OpWithoutAKernelIsRecorded) {
  // Gelu exists from opset 20 only: at opset 13 there is no kernel for it.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({4}));
  Node* norm = g.add_node("Gelu", {g.add_initializer("v", random_floats({4}))}, {"normed"});
  g.add_output(norm->output(0));
  Node* neg = g.add_node("Neg", {x}, {"out"});
  g.add_output(neg->output(0));
  PassContext context;
  EXPECT_EQ(fold(model, context), 0u);
  EXPECT_EQ(context.not_folded["normed"], "no kernel");
  EXPECT_EQ(count_ops(model, "Gelu"), 1u);
  // The executor cannot run it either; compare without it.
  Model before = copy_model(model);
  for (Model* m : {&model, &before}) {
    m->graph().remove_output(0);
    m->graph().remove_node(m->graph().find_value("normed")->producer());
  }
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(ConstantFolding, FoldsInsideALoopBody) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Value* outer = g.add_initializer("outer", random_floats({2}, 21));
  Value* trips = g.add_initializer("trips", Tensor::from_vector<int64_t>(DType::kInt64, {}, {3}));
  Value* keep_going = g.add_initializer("keep_going", bool_scalar(true));
  Node* loop = g.add_node("Loop", {trips, keep_going, x}, {"v_final"}, "", "loop");
  g.add_output(loop->output(0));
  Attribute body_attr = typed_attribute("body", AttrType::kGraph);
  body_attr.g = std::make_unique<Graph>(&g);
  Graph& body = *body_attr.g;
  body.add_input("iter", ValueType::tensor(DType::kInt64, std::vector<Dim>{}));
  Value* cond_in = body.add_input("cond_in", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  Value* v = body.add_input("v", float_type({2}));
  Value* inner = body.add_initializer("inner", random_floats({2}, 22));
  Node* k = body.add_node("Add", {inner, outer}, {"k"});  // reads the enclosing graph
  Node* k2 = body.add_node("Mul", {k->output(0), k->output(0)}, {"k2"});
  Node* step = body.add_node("Add", {v, k2->output(0)}, {"v_out"});
  Node* cond_out = body.add_node("Identity", {cond_in}, {"cond_out"});
  body.add_output(cond_out->output(0));
  body.add_output(step->output(0));
  loop->set_attribute(std::move(body_attr));
  Model before = copy_model(model);

  PassContext context;
  EXPECT_EQ(fold(model, context), 0u) << "the Loop reads x and has a body";
  EXPECT_EQ(fold(model, context, &body), 2u);
  EXPECT_EQ(body.node_count(), 2u);
  Value* folded = body.find_value("k2");
  ASSERT_TRUE(folded && folded->has_initializer());
  EXPECT_EQ(folded->graph(), &body) << "the initializer goes into the body";
  EXPECT_EQ(g.initializers().size(), 3u) << "nothing is added to the main graph";
  EXPECT_EQ(step->input(1), folded);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(ConstantFolding, KeepsQuantizationSubgraphsAndSequences) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({4}));
  Value* w = g.add_initializer(
      "w_q", Tensor::from_vector<int8_t>(DType::kInt8, {4}, std::vector<int8_t>{-3, 0, 5, 7}));
  Value* scale =
      g.add_initializer("w_scale", Tensor::from_vector<float>(DType::kFloat, {}, {0.5f}));
  Node* deq = g.add_node("DequantizeLinear", {w, scale}, {"w"});
  Node* mul = g.add_node("Mul", {x, deq->output(0)}, {"weighted"});
  // If over constants only: has a subgraph (inline_constant_if's job).
  Node* if_node = g.add_node("If", {g.add_initializer("flag", bool_scalar(true))}, {"chosen"});
  for (const char* name : {"then_branch", "else_branch"}) {
    Attribute branch = typed_attribute(name, AttrType::kGraph);
    branch.g = std::make_unique<Graph>(&g);
    Node* id = branch.g->add_node("Identity", {w}, {std::string(name) + "_w"});
    branch.g->add_output(id->output(0));
    if_node->set_attribute(std::move(branch));
  }
  // A sequence cannot be an initializer; the SequenceAt reading it is not constant.
  Node* seq = g.add_node("SequenceConstruct",
                         {g.add_initializer("s0", random_floats({4}, 4)),
                          g.add_initializer("s1", random_floats({4}, 5))},
                         {"seq"});
  Node* at =
      g.add_node("SequenceAt",
                 {seq->output(0),
                  g.add_initializer("one", Tensor::from_vector<int64_t>(DType::kInt64, {}, {1}))},
                 {"picked"});
  Node* add = g.add_node("Add", {mul->output(0), at->output(0)}, {"out"});
  g.add_output(add->output(0));
  g.add_output(if_node->output(0));
  // The initializer of a graph input is a default a caller may override: not constant.
  Value* d = g.add_initializer("d", random_floats({4}, 6));
  g.add_input(d);
  Node* neg = g.add_node("Neg", {d}, {"neg_d"});
  g.add_output(neg->output(0));
  Model before = copy_model(model);

  PassContext context;
  EXPECT_EQ(fold(model, context), 0u);
  EXPECT_EQ(context.not_folded["w"], "quantization op kept");
  EXPECT_EQ(context.not_folded["chosen"], "has a subgraph");
  EXPECT_EQ(context.not_folded["seq"], "non-tensor output");
  EXPECT_EQ(context.not_folded.count("neg_d"), 0u);
  EXPECT_EQ(g.node_count(), 7u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(ConstantFolding, LeavesNonConstantsAndMutableInitializers) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3}));
  Value* a = g.add_initializer("a", random_floats({3}, 1));
  Node* neg = g.add_node("Neg", {a}, {"neg_a"});
  Node* add = g.add_node("Add", {x, neg->output(0)}, {"out"});
  g.add_output(add->output(0));
  Model before = copy_model(model);

  PassContext context;
  context.mutable_initializers = true;
  EXPECT_EQ(fold(model, context), 0u) << "initializers may change after export";
  EXPECT_EQ(g.node_count(), 2u);
  PassContext normal;
  EXPECT_EQ(fold(model, normal), 1u) << "the Add reads x";
  EXPECT_EQ(count_ops(model, "Add"), 1u);
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit::testing

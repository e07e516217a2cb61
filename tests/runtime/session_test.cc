#include "onnxkit/session.h"

#include <gtest/gtest.h>

#include <cmath>

#include <unistd.h>

#include <fstream>

#include "../test_util.h"
#include "ir/graph_clone.h"
#include "onnxkit/model_io.h"
#include "ops/registry.h"
#include "registry/builtin_registry.h"
#include "runtime/compiled_graph.h"
#include "runtime/profiler.h"

namespace onnxkit {
namespace {

// y = (x + w) * x, x: float[batch, 3]
Model small_model() {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", 13}};
  Graph& g = model.graph();
  ValueType type =
      ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("batch"), Dim::known(3)});
  Value* x = g.add_input("x", type);
  Value* w = g.add_initializer("w", Tensor::from_vector<float>(DType::kFloat, {3}, {1, 2, 3}));
  Node* add = g.add_node("Add", {x, w}, {"sum"}, "", "add_0");
  Node* mul = g.add_node("Mul", {add->output(0), x}, {"y"}, "", "mul_0");
  g.add_output(mul->output(0));
  return model;
}

TEST(Session, RunsAndBroadcasts) {
  auto session = Session::create(small_model());
  ASSERT_TRUE(session.ok()) << session.error();
  auto x = Tensor::from_vector<float>(DType::kFloat, {2, 3}, {1, 1, 1, 2, 2, 2});
  auto out = session.value()->run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.error();
  ASSERT_EQ(out.value().size(), 1u);
  EXPECT_EQ(out.value()[0].first, "y");
  const Tensor& y = out.value()[0].second.tensor();
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  std::vector<float> expected{2, 3, 4, 6, 8, 10};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(y.data<float>()[i], expected[i]);
}

TEST(Session, InputsAreValidatedByName) {
  auto session = Session::create(small_model());
  ASSERT_TRUE(session.ok());
  const Session& s = *session.value();
  auto wrong_type = s.run({{"x", Tensor(DType::kInt64, {2, 3})}});
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.error().find("input 'x' must be float, got int64"), std::string::npos)
      << wrong_type.error();
  auto wrong_dim = s.run({{"x", Tensor(DType::kFloat, {2, 4})}});
  ASSERT_FALSE(wrong_dim.ok());
  EXPECT_NE(wrong_dim.error().find("input 'x'"), std::string::npos) << wrong_dim.error();
  EXPECT_NE(wrong_dim.error().find("dim 1 is 4, expected 3"), std::string::npos);
  auto wrong_rank = s.run({{"x", Tensor(DType::kFloat, {3})}});
  ASSERT_FALSE(wrong_rank.ok());
  EXPECT_NE(wrong_rank.error().find("rank 2"), std::string::npos) << wrong_rank.error();
  auto missing = s.run({});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("input 'x'"), std::string::npos);
  EXPECT_NE(missing.error().find("missing"), std::string::npos);
  auto unknown = s.run({{"x", Tensor(DType::kFloat, {1, 3})}, {"z", Tensor(DType::kFloat, {1})}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("unknown input 'z'"), std::string::npos);
}

TEST(Session, SymbolicDimsMustAgreeAcrossInputs) {
  Model model;
  model.opset_imports = {{"", 13}};
  ValueType type = ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("n")});
  Value* a = model.graph().add_input("a", type);
  Value* b = model.graph().add_input("b", type);
  Node* add = model.graph().add_node("Add", {a, b}, {"c"});
  model.graph().add_output(add->output(0));
  auto session = Session::create(std::move(model));
  ASSERT_TRUE(session.ok());
  auto result =
      session.value()->run({{"a", Tensor(DType::kFloat, {2})}, {"b", Tensor(DType::kFloat, {3})}});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().find("n = 3"), std::string::npos) << result.error();
}

TEST(Session, KernelErrorsNameTheNode) {
  auto session = Session::create(small_model());
  ASSERT_TRUE(session.ok());
  SessionOptions no_checks;
  no_checks.validate_inputs = false;
  auto unchecked = Session::create(small_model(), no_checks);
  auto result = unchecked.value()->run({{"x", Tensor(DType::kFloat, {2, 4})}});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().find("[Add] node 'add_0'"), std::string::npos) << result.error();
  EXPECT_NE(result.error().find("cannot be broadcast"), std::string::npos) << result.error();
}

TEST(Session, UnknownOperatorIsReportedAtCreation) {
  Model model = small_model();
  Graph& g = model.graph();
  Node* odd = g.add_node("FrobnicateOp", {g.outputs()[0]}, {"z"}, "", "odd_0");
  g.set_output(0, odd->output(0));
  auto session = Session::create(std::move(model));
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.error().find("[FrobnicateOp] node 'odd_0'"), std::string::npos);
  EXPECT_NE(session.error().find("not implemented"), std::string::npos) << session.error();
}

TEST(Session, BuildsItsKernelsFromTheRegistryInItsOptions) {
  // small_model() computes y = (x + w) * x.
  const OpRegistration* add = builtin_registry().find("", "Add", 13);
  ASSERT_NE(add, nullptr);
  OpRegistry add_only;
  add_only.add("", "Add", add->since_version, add->definition);
  SessionOptions options = SessionOptions::reference();
  options.registry = &add_only;
  auto without_mul = Session::create(small_model(), options);
  ASSERT_FALSE(without_mul.ok());
  EXPECT_NE(without_mul.error().find("[Mul] node 'mul_0'"), std::string::npos)
      << without_mul.error();
  EXPECT_NE(without_mul.error().find("not implemented"), std::string::npos) << without_mul.error();
  EXPECT_TRUE(Session::create(small_model(), SessionOptions::reference()).ok());

  // Its kernels are the ones that run: Mul served by Add's kernel gives (x + w) + x.
  OpRegistry mul_as_add;
  mul_as_add.add("", "Add", add->since_version, add->definition);
  mul_as_add.add("", "Mul", add->since_version, add->definition);
  options.registry = &mul_as_add;
  auto session = Session::create(small_model(), options);
  ASSERT_TRUE(session.ok()) << session.error();
  auto out =
      session.value()->run({{"x", Tensor::from_vector<float>(DType::kFloat, {1, 3}, {1, 1, 1})}});
  ASSERT_TRUE(out.ok()) << out.error();
  const Tensor& y = out.value()[0].second.tensor();
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 3),
            (std::vector<float>{3, 4, 5}));
}

TEST(CompiledGraph, IntermediatesAreReleasedAfterTheirLastUse) {
  Model model = small_model();
  auto plan = CompiledGraph::compile(model.graph(), builtin_registry(), model.opset_imports);
  ASSERT_EQ(plan->steps().size(), 2u);
  const int sum_slot = plan->slot_of(model.graph().find_value("sum"));
  const int x_slot = plan->slot_of(model.graph().find_value("x"));
  const auto& last = plan->steps()[1].release;
  EXPECT_NE(std::find(last.begin(), last.end(), sum_slot), last.end());
  EXPECT_NE(std::find(last.begin(), last.end(), x_slot), last.end());
  const int y_slot = plan->slot_of(model.graph().find_value("y"));
  EXPECT_EQ(std::find(last.begin(), last.end(), y_slot), last.end()) << "outputs are kept";
}

TEST(Registry, NewestRegistrationNotNewerThanTheOpset) {
  OpRegistry registry;
  KernelFactory none = [](const KernelCreateContext&) -> std::unique_ptr<OpKernel> {
    return nullptr;
  };
  registry.add("", "Op", 1, none);
  registry.add("", "Op", 11, none);
  registry.add("", "Op", 13, none);
  EXPECT_EQ(registry.find("", "Op", 10)->since_version, 1);
  EXPECT_EQ(registry.find("ai.onnx", "Op", 12)->since_version, 11);
  EXPECT_EQ(registry.find("", "Op", 17)->since_version, 13);
  EXPECT_EQ(registry.find("", "Op", 0), nullptr);
  EXPECT_EQ(registry.find("com.x", "Op", 13), nullptr);
  EXPECT_THROW(registry.add("", "Op", 11, none), Error);
}

TEST(Registry, OptimizedTierIsPreferredAndMayDecline) {
  OpRegistry registry;
  struct Tagged : OpKernel {
    explicit Tagged(int tag) : tag(tag) {}
    void compute(KernelContext&) const override {}
    int tag;
  };
  registry.add("", "Op", 1, [](const KernelCreateContext&) -> std::unique_ptr<OpKernel> {
    return std::make_unique<Tagged>(1);
  });
  registry.add("", "Op", 13, [](const KernelCreateContext&) -> std::unique_ptr<OpKernel> {
    return std::make_unique<Tagged>(13);
  });
  registry.add_optimized("", "Op", 1,
                         [](const KernelCreateContext& c) -> std::unique_ptr<OpKernel> {
                           if (c.node().name() == "decline") return nullptr;
                           return std::make_unique<Tagged>(-1);
                         });
  Graph graph;
  Value* x = graph.add_input("x", ValueType::tensor(DType::kFloat, std::nullopt));
  Node* node = graph.add_node("Op", {x}, {"y"}, "", "n");
  Node* declining = graph.add_node("Op", {x}, {"z"}, "", "decline");
  auto tag = [&](const Node& n, int64_t opset, KernelTier tier) {
    auto kernel = registry.create_kernel(KernelCreateContext(n, opset, registry), tier);
    return dynamic_cast<Tagged&>(*kernel).tag;
  };
  EXPECT_EQ(tag(*node, 12, KernelTier::kOptimized), -1);
  EXPECT_EQ(tag(*node, 12, KernelTier::kReference), 1);
  EXPECT_EQ(tag(*declining, 12, KernelTier::kOptimized), 1);
  // Opset 13 changed the op; the optimized kernel was written for the old semantics.
  EXPECT_EQ(tag(*node, 13, KernelTier::kOptimized), 13);
}

TEST(Session, OptimizationLevelRewritesTheGraphOnlyWhenAsked) {
  // x + (w1 + w2): level basic folds the constant sum.
  auto model_with_constant_sum = [] {
    Model model;
    model.ir_version = 8;
    model.opset_imports = {{"", 13}};
    Graph& g = model.graph();
    Value* x = g.add_input(
        "x", ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(1), Dim::known(3)}));
    Value* w1 = g.add_initializer("w1", Tensor::from_vector<float>(DType::kFloat, {3}, {1, 2, 3}));
    Value* w2 = g.add_initializer("w2", Tensor::from_vector<float>(DType::kFloat, {3}, {1, 1, 1}));
    Node* sum = g.add_node("Add", {w1, w2}, {"w_sum"}, "", "add_w");
    Node* add = g.add_node("Add", {x, sum->output(0)}, {"s"}, "", "add_0");
    Node* mul = g.add_node("Mul", {add->output(0), x}, {"y"}, "", "mul_0");
    g.add_output(mul->output(0));
    return model;
  };
  SessionOptions none = SessionOptions::reference();
  auto plain = Session::create(model_with_constant_sum(), none);
  ASSERT_TRUE(plain.ok()) << plain.error();
  EXPECT_EQ(plain.value()->stats().nodes_optimized, 3u);
  SessionOptions basic;
  basic.level = OptimizationLevel::kBasic;
  auto optimized = Session::create(model_with_constant_sum(), basic);
  ASSERT_TRUE(optimized.ok()) << optimized.error();
  EXPECT_EQ(optimized.value()->stats().nodes_loaded, 3u);
  EXPECT_EQ(optimized.value()->stats().nodes_optimized, 2u);
  auto x = Tensor::from_vector<float>(DType::kFloat, {1, 3}, {1, 2, 3});
  auto a = plain.value()->run({{"x", x}});
  auto b = optimized.value()->run({{"x", x}});
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a.value()[0].second.tensor().data<float>()[i],
              b.value()[0].second.tensor().data<float>()[i]);
  }
}

TEST(Session, BoundOutputsAreWrittenInPlaceAndSteadyRunsAllocateNothing) {
  auto session = Session::create(small_model());
  ASSERT_TRUE(session.ok()) << session.error();
  std::vector<float> input{1, 1, 1, 2, 2, 2};
  std::vector<float> output(6, -1.0f);
  RunOptions options;
  options.bound_outputs = {{"y", Tensor::external(DType::kFloat, {2, 3}, output.data())}};
  NamedValues feeds{{"x", Tensor::external(DType::kFloat, {2, 3}, input.data())}};
  ASSERT_TRUE(session.value()->run(feeds, options).ok());
  EXPECT_EQ(output, (std::vector<float>{2, 3, 4, 6, 8, 10}));
  const size_t allocations = session.value()->memory_stats().system_allocations;
  input = {2, 2, 2, 1, 1, 1};
  auto second = session.value()->run(feeds, options);
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_EQ(output, (std::vector<float>{6, 8, 10, 2, 3, 4}));
  EXPECT_EQ(second.value()[0].second.tensor().raw_data(), output.data());
  EXPECT_EQ(session.value()->memory_stats().system_allocations, allocations);
  EXPECT_EQ(input, (std::vector<float>{2, 2, 2, 1, 1, 1}));  // inputs are never written
}

TEST(Session, BoundOutputOfTheWrongShapeFailsNamingIt) {
  auto session = Session::create(small_model());
  ASSERT_TRUE(session.ok()) << session.error();
  std::vector<float> output(3);
  RunOptions options;
  options.bound_outputs = {{"y", Tensor::external(DType::kFloat, {1, 3}, output.data())}};
  auto x = Tensor::from_vector<float>(DType::kFloat, {2, 3}, {1, 1, 1, 2, 2, 2});
  auto out = session.value()->run({{"x", x}}, options);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().find("bound output 'y'"), std::string::npos) << out.error();
  options.bound_outputs = {{"nope", Tensor::external(DType::kFloat, {1, 3}, output.data())}};
  EXPECT_FALSE(session.value()->run({{"x", x}}, options).ok());
}

TEST(Session, ProfilerTimesEveryKernel) {
  auto session = Session::create(small_model(), SessionOptions::reference());
  ASSERT_TRUE(session.ok()) << session.error();
  Profiler profiler;
  auto x = Tensor::from_vector<float>(DType::kFloat, {1, 3}, {1, 2, 3});
  ASSERT_TRUE(session.value()->run({{"x", x}}, RunOptions{&profiler, {}}).ok());
  auto timings = profiler.timings();
  ASSERT_EQ(timings.size(), 2u);
  EXPECT_EQ(timings[0].node_name, "add_0");
  EXPECT_EQ(timings[1].op_type, "Mul");
  EXPECT_LE(timings[0].start_ns, timings[0].end_ns);
  auto totals = profiler.totals_by_op_type();
  EXPECT_EQ(totals.size(), 2u);
  EXPECT_NE(profiler.chrome_trace_json().find("\"traceEvents\""), std::string::npos);
}

TEST(Session, ParallelExecutionMatchesSequential) {
  // Eight independent branches joined by a Sum, each reading x: y = sum_i (x * c_i + x).
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", 13}};
  Graph& g = model.graph();
  Value* x = g.add_input("x", ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(64)}));
  std::vector<Value*> branches;
  for (int i = 0; i < 8; ++i) {
    Value* c = g.add_initializer("c" + std::to_string(i),
                                 Tensor::from_vector<float>(DType::kFloat, {1}, {float(i)}));
    Node* mul = g.add_node("Mul", {x, c}, {"m" + std::to_string(i)}, "", "mul" + std::to_string(i));
    Node* add = g.add_node("Add", {mul->output(0), x}, {"a" + std::to_string(i)}, "",
                           "add" + std::to_string(i));
    branches.push_back(add->output(0));
  }
  Node* sum = g.add_node("Sum", branches, {"y"}, "", "sum");
  g.add_output(sum->output(0));
  SessionOptions sequential = SessionOptions::reference();
  SessionOptions parallel = sequential;
  parallel.parallel_execution = true;
  parallel.inter_op_threads = 3;
  parallel.intra_op_threads = 3;
  auto a = Session::create(clone_model(model), sequential);
  auto b = Session::create(clone_model(model), parallel);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<float> values(64);
  for (int i = 0; i < 64; ++i) values[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i);
  auto input = Tensor::from_vector<float>(DType::kFloat, {64}, values);
  auto expected = a.value()->run({{"x", input}});
  ASSERT_TRUE(expected.ok()) << expected.error();
  for (int run = 0; run < 50; ++run) {
    auto got = b.value()->run({{"x", input}});
    ASSERT_TRUE(got.ok()) << got.error();
    for (int i = 0; i < 64; ++i) {
      ASSERT_EQ(got.value()[0].second.tensor().data<float>()[i],
                expected.value()[0].second.tensor().data<float>()[i]);
    }
  }
}

TEST(Session, ParallelExecutionReportsKernelErrorsNamingTheNode) {
  Model model = small_model();
  SessionOptions parallel = SessionOptions::reference();
  parallel.parallel_execution = true;
  parallel.intra_op_threads = 2;
  parallel.validate_inputs = false;
  auto session = Session::create(std::move(model), parallel);
  ASSERT_TRUE(session.ok());
  auto x = Tensor::from_vector<float>(DType::kFloat, {2, 2}, {1, 2, 3, 4});  // [2,2] + [3]
  auto out = session.value()->run({{"x", x}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().find("add_0"), std::string::npos) << out.error();
}

}  // namespace
}  // namespace onnxkit

namespace onnxkit {
namespace {

// y = exp(relu(x)) + relu(x), with the second read of relu(x) through an Identity: its
// bytes are shared when Exp runs, so Exp must not write over them.
Model chain_model() {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", 13}};
  Graph& g = model.graph();
  Value* x = g.add_input("x", ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("n")}));
  Node* relu = g.add_node("Relu", {x}, {"r"}, "", "relu");
  Node* copy = g.add_node("Identity", {relu->output(0)}, {"i"}, "", "copy");
  Node* neg = g.add_node("Neg", {relu->output(0)}, {"m"}, "", "neg");
  Node* exp = g.add_node("Exp", {neg->output(0)}, {"e"}, "", "exp");
  Node* add = g.add_node("Add", {exp->output(0), copy->output(0)}, {"y"}, "", "add");
  g.add_output(add->output(0));
  return model;
}

std::vector<float> run_chain(const Session& session, size_t n) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 7) - 3.0f;
  auto x = Tensor::from_vector<float>(DType::kFloat, {static_cast<int64_t>(n)}, values);
  auto out = session.run({{"x", x}});
  EXPECT_TRUE(out.ok()) << out.error();
  if (!out.ok()) return {};
  const Tensor& y = out.value()[0].second.tensor();
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

TEST(Session, PlannedRunsMatchPoolRunsAndAllocateNothing) {
  SessionOptions pool_only;
  pool_only.memory_planning = false;
  auto reference = Session::create(chain_model(), pool_only);
  auto planned = Session::create(chain_model());
  ASSERT_TRUE(reference.ok() && planned.ok());
  const std::vector<float> want = run_chain(*reference.value(), 1000);
  for (float v : want) EXPECT_GT(v, 0.0f);
  EXPECT_EQ(run_chain(*planned.value(), 1000), want);  // records the plan
  const size_t allocations = planned.value()->memory_stats().system_allocations;
  EXPECT_EQ(run_chain(*planned.value(), 1000), want);  // follows it
  EXPECT_EQ(run_chain(*planned.value(), 1000), want);
  MemoryPlanStats stats = planned.value()->memory_plan_stats();
  EXPECT_EQ(stats.plans, 1u);
  EXPECT_EQ(stats.planned_runs, 2u);
  EXPECT_EQ(stats.diverged_runs, 0u);
  EXPECT_GT(stats.largest_arena_bytes, 0u);
  EXPECT_EQ(planned.value()->memory_stats().system_allocations, allocations);
  // Another input shape gets its own plan.
  EXPECT_EQ(run_chain(*planned.value(), 300), run_chain(*reference.value(), 300));
  EXPECT_EQ(planned.value()->memory_plan_stats().plans, 2u);
}

TEST(Session, ElementwiseOpsRunInPlaceOnValuesNothingReadsLater) {
  // x -> Relu -> Neg -> Exp -> Abs: after Relu every op may write over its input, so the
  // run needs one tensor of memory (two when each op allocates).
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", 13}};
  Graph& g = model.graph();
  Value* value =
      g.add_input("x", ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(4096)}));
  int index = 0;
  for (const char* op : {"Relu", "Neg", "Exp", "Abs"}) {
    value = g.add_node(op, {value}, {fmt::format("v{}", index)}, "", fmt::format("n{}", index))
                ->output(0);
    ++index;
  }
  g.add_output(value);
  SessionOptions options;
  options.memory_planning = false;
  auto session = Session::create(std::move(model), options);
  ASSERT_TRUE(session.ok()) << session.error();
  std::vector<float> values(4096, -1.0f);
  auto x = Tensor::from_vector<float>(DType::kFloat, {4096}, values);
  auto out = session.value()->run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out.value()[0].second.tensor().data<float>()[17], 1.0f);  // |exp(-relu(-1))|
  EXPECT_EQ(x.data<float>()[0], -1.0f);  // the caller's input is never written
  EXPECT_LE(session.value()->memory_stats().peak_bytes_in_use, 4096u * sizeof(float));
}

TEST(Session, SharedAndReturnedValuesAreNeverWrittenInPlace) {
  // r = relu(x) is returned and also read by Exp: Exp must not write over it.
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", 13}};
  Graph& g = model.graph();
  Value* x = g.add_input("x", ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(64)}));
  Node* relu = g.add_node("Relu", {x}, {"r"}, "", "relu");
  Node* exp = g.add_node("Exp", {relu->output(0)}, {"e"}, "", "exp");
  g.add_output(relu->output(0));
  g.add_output(exp->output(0));
  auto session = Session::create(std::move(model));
  ASSERT_TRUE(session.ok()) << session.error();
  auto out = session.value()->run(
      {{"x", Tensor::from_vector<float>(DType::kFloat, {64}, std::vector<float>(64, 2.0f))}});
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out.value()[0].second.tensor().data<float>()[5], 2.0f);
  EXPECT_FLOAT_EQ(out.value()[1].second.tensor().data<float>()[5], std::exp(2.0f));
}

TEST(Session, OneOffRunsDropMappedWeightsAfterTheirLastReader) {
  // y = ReduceSum(x * w), w a 32 MiB initializer the session maps from the file.
  testing::TempDir dir;
  constexpr int64_t kElements = int64_t{8} << 20;
  {
    Model model;
    model.ir_version = 8;
    model.opset_imports = {{"", 13}};
    Graph& g = model.graph();
    Value* x = g.add_input("x", ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(1)}));
    std::vector<float> weights(static_cast<size_t>(kElements));
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i % 7);
    Value* w = g.add_initializer("w", Tensor::from_vector(DType::kFloat, {kElements}, weights));
    Node* mul = g.add_node("Mul", {x, w}, {"scaled"});
    Node* sum = g.add_node("ReduceSum", {mul->output(0)}, {"y"});
    g.add_output(sum->output(0));
    ASSERT_TRUE(save_model(model, dir / "m.onnx").ok());
  }
  auto x = Tensor::from_vector<float>(DType::kFloat, {1}, {2});
  auto run = [&](bool release) {
    SessionOptions options = SessionOptions::reference();
    options.release_weights_after_use = release;
    auto session = Session::load(dir / "m.onnx", options);
    EXPECT_TRUE(session.ok()) << session.error();
    std::vector<float> results;
    size_t resident = 0;
    for (int i = 0; i < 2; ++i) {  // the second run reads the weights back from the file
      auto out = session.value()->run({{"x", x}});
      EXPECT_TRUE(out.ok()) << out.error();
      results.push_back(out.value()[0].second.tensor().data<float>()[0]);
      resident = testing::resident_bytes();
    }
    EXPECT_EQ(results[0], results[1]);
    return std::pair(results[0], resident);
  };
  const auto [kept, kept_resident] = run(false);
  const auto [released, released_resident] = run(true);
  EXPECT_EQ(kept, released);
  EXPECT_GT(kept_resident, released_resident + (size_t{16} << 20))
      << "the 32 MiB of weights leave the resident set after their last reader";
}

}  // namespace
}  // namespace onnxkit

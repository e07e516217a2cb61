// The op definitions' type inference rules (ops/type_inference.h), each run on a small node
// through a plain walk of the graph: what the rules give for named, known and unknown dims,
// constant inputs and each version's semantics.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "../graph_test_util.h"
#include "ir/model.h"
#include "ops/registry.h"
#include "ops/type_inference.h"
#include "registry/builtin_registry.h"

namespace onnxkit::testing {
namespace {

// Runs the registered rules over a graph in topological order: types from the graph's
// inputs and the rules, values from initializers.
class RuleWalk {
 public:
  explicit RuleWalk(int64_t opset) : opset_(opset) {}

  // The types of `graph`'s outputs when its inputs have `input_types` (declared types when
  // empty).
  std::vector<ValueType> walk(const Graph& graph, std::span<const ValueType> input_types = {}) {
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
      types_[graph.inputs()[i]] =
          i < input_types.size() ? input_types[i] : graph.inputs()[i]->type();
    }
    for (const Value* value : graph.initializers()) {
      types_[value] =
          ValueType::tensor(value->initializer().dtype(), known_dims(value->initializer().shape()));
    }
    for (const Node* node : graph.topological_order()) {
      const OpRegistration* registration = builtin_registry().find(
          node->domain(), node->op_type(), node->domain().empty() ? opset_ : 1);
      if (!registration || !registration->definition.infer_types) {
        throw Error(fmt::format("no type rule for {}", node->op_type()));
      }
      NodeContext context(*this, *node, node->domain().empty() ? opset_ : 1);
      registration->definition.infer_types(context);
    }
    std::vector<ValueType> outputs;
    for (const Value* value : graph.outputs()) outputs.push_back(type_of(value));
    return outputs;
  }

  ValueType type_of(const Value* value) const {
    auto it = types_.find(value);
    return it == types_.end() ? ValueType{} : it->second;
  }

 private:
  class NodeContext : public TypeInferenceContext {
   public:
    NodeContext(RuleWalk& walk, const Node& node, int64_t opset)
        : walk_(walk), node_(node), opset_(opset) {}
    const Node& node() const override { return node_; }
    int64_t opset() const override { return opset_; }
    const ValueType* input_type(size_t i) const override {
      if (!has_input(i)) return nullptr;
      auto it = walk_.types_.find(node_.inputs()[i]);
      return it == walk_.types_.end() || it->second.kind == ValueType::Kind::kNone ? nullptr
                                                                                   : &it->second;
    }
    const Tensor* input_value(size_t i) const override {
      if (!has_input(i) || !node_.inputs()[i]->has_initializer()) return nullptr;
      return &node_.inputs()[i]->initializer();
    }
    std::vector<ValueType> infer_subgraph(const Graph& subgraph,
                                          std::span<const ValueType> input_types) override {
      return walk_.walk(subgraph, input_types);
    }
    void set_output(size_t i, ValueType type) override {
      if (has_output(i)) walk_.types_[node_.outputs()[i]] = std::move(type);
    }

   private:
    RuleWalk& walk_;
    const Node& node_;
    int64_t opset_;
  };

  int64_t opset_;
  std::map<const Value*, ValueType> types_;
};

Dim N() {
  return Dim::symbol("n");
}
Dim K(int64_t value) {
  return Dim::known(value);
}
Dim U() {
  return Dim{};
}

ValueType T(DType dtype, std::vector<Dim> dims) {
  return ValueType::tensor(dtype, std::move(dims));
}
ValueType F(std::vector<Dim> dims) {
  return T(DType::kFloat, std::move(dims));
}

// Infers the single node `op` over inputs of `types` (constants where `constants` give a
// value) and returns its outputs' types.
struct OneNode {
  explicit OneNode(int64_t opset = 17) : builder(opset), opset(opset) {}
  Value* in(ValueType type) { return builder.graph().add_input(fmt::format("i{}", n++), type); }
  Value* ints(std::vector<int64_t> values) { return builder.ints(std::move(values)); }
  Value* scalar_int(int64_t value) {
    return builder.constant(Tensor::from_vector<int64_t>(DType::kInt64, {}, {value}));
  }
  Value* floats(std::vector<float> values) {
    const auto size = static_cast<int64_t>(values.size());
    return builder.constant(Tensor::from_vector<float>(DType::kFloat, {size}, values));
  }
  std::vector<ValueType> run(const std::string& op, std::vector<Value*> inputs,
                             const Attributes& attributes = {}, size_t outputs = 1,
                             const std::string& domain = "") {
    Node* node = builder.node(op, std::move(inputs), attributes, outputs, domain);
    for (Value* out : node->outputs()) builder.output(out);
    return RuleWalk(opset).walk(builder.graph());
  }
  GraphBuilder builder;
  int64_t opset;
  int n = 0;
};

std::string str(const ValueType& type) {
  return value_type_to_string(type);
}

TEST(TypeRulesTest, ElementwiseKeepNamedDimsAndBroadcast) {
  OneNode g;
  Value* x = g.in(F({N(), K(3)}));
  Value* y = g.in(F({K(1), K(3)}));
  EXPECT_EQ(str(g.run("Add", {x, y})[0]), str(F({N(), K(3)})));
  OneNode h;
  EXPECT_EQ(str(h.run("IsNaN", {h.in(F({N(), K(2)}))})[0]), str(T(DType::kBool, {N(), K(2)})));
  OneNode w;
  Value* c = w.in(T(DType::kBool, {K(4), K(1)}));
  Value* a = w.in(T(DType::kInt32, {K(5)}));
  Value* b = w.in(T(DType::kInt32, {K(1)}));
  EXPECT_EQ(str(w.run("Where", {c, a, b})[0]), str(T(DType::kInt32, {K(4), K(5)})));
}

TEST(TypeRulesTest, ReshapeInfersMinusOneAcrossNamedDims) {
  OneNode g;
  Value* x = g.in(F({N(), K(3), K(4)}));
  EXPECT_EQ(str(g.run("Reshape", {x, g.ints({0, -1})})[0]), str(F({N(), K(12)})));
  OneNode h;
  Value* y = h.in(F({N(), K(6)}));
  EXPECT_EQ(str(h.run("Reshape", {y, h.ints({-1, 2, 3})})[0]), str(F({N(), K(2), K(3)})));
  OneNode s;
  Value* z = s.in(F({K(2), K(6)}));
  Value* shape = s.in(T(DType::kInt64, {K(3)}));
  EXPECT_EQ(str(s.run("Reshape", {z, shape})[0]), str(F({U(), U(), U()})));
}

TEST(TypeRulesTest, SliceCountsKnownDimsAndKeepsWholeNamedAxes) {
  OneNode g;
  Value* x = g.in(F({N(), K(10)}));
  const int64_t end = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(str(g.run("Slice", {x, g.ints({0, 2}), g.ints({end, -1}), g.ints({0, 1})})[0]),
            str(F({N(), K(7)})));
  OneNode h;
  Value* y = h.in(F({N(), K(10)}));
  EXPECT_EQ(str(h.run("Slice", {y, h.ints({9}), h.ints({-end}), h.ints({1}), h.ints({-3})})[0]),
            str(F({N(), K(4)})));
  OneNode v1(9);
  Value* z = v1.in(F({K(5), K(6)}));
  EXPECT_EQ(str(v1.run("Slice", {z}, {Attr::Ints("starts", {1}), Attr::Ints("ends", {3})})[0]),
            str(F({K(2), K(6)})));
}

TEST(TypeRulesTest, ConvAndPoolWindows) {
  OneNode g;
  Value* x = g.in(F({N(), K(3), K(32), K(31)}));
  Value* w = g.in(F({K(8), K(3), K(3), K(3)}));
  EXPECT_EQ(str(g.run("Conv", {x, w},
                      {Attr::Ints("pads", {1, 1, 1, 1}), Attr::Ints("strides", {2, 2})})[0]),
            str(F({N(), K(8), K(16), K(16)})));
  OneNode p;
  Value* y = p.in(F({K(1), K(4), K(5), U()}));
  const std::vector<ValueType> pooled =
      p.run("MaxPool", {y},
            {Attr::Ints("kernel_shape", {2, 2}), Attr::Ints("strides", {2, 2}),
             Attr::Int("ceil_mode", 1)},
            2);
  EXPECT_EQ(str(pooled[0]), str(F({K(1), K(4), K(3), U()})));
  EXPECT_EQ(str(pooled[1]), str(T(DType::kInt64, {K(1), K(4), K(3), U()})));
  OneNode t;
  Value* a = t.in(F({K(1), K(2), K(5), K(5)}));
  Value* b = t.in(F({K(2), K(3), K(3), K(3)}));
  EXPECT_EQ(str(t.run("ConvTranspose", {a, b}, {Attr::Ints("strides", {2, 2})})[0]),
            str(F({K(1), K(3), K(11), K(11)})));
}

TEST(TypeRulesTest, ReductionsReadAxesFromAttributeOrInput) {
  OneNode g(18);
  Value* x = g.in(F({N(), K(3), K(4)}));
  EXPECT_EQ(str(g.run("ReduceMean", {x, g.ints({1})}, {Attr::Int("keepdims", 0)})[0]),
            str(F({N(), K(4)})));
  OneNode h(13);
  Value* y = h.in(F({N(), K(3), K(4)}));
  EXPECT_EQ(str(h.run("ReduceMax", {y}, {Attr::Ints("axes", {-1})})[0]), str(F({N(), K(3), K(1)})));
  OneNode a;
  Value* z = a.in(F({N(), K(3)}));
  EXPECT_EQ(str(a.run("ArgMax", {z}, {Attr::Int("axis", 1), Attr::Int("keepdims", 0)})[0]),
            str(T(DType::kInt64, {N()})));
  OneNode k;
  Value* v = k.in(F({N(), K(9)}));
  const std::vector<ValueType> top = k.run("TopK", {v, k.ints({4})}, {}, 2);
  EXPECT_EQ(str(top[0]), str(F({N(), K(4)})));
  EXPECT_EQ(str(top[1]), str(T(DType::kInt64, {N(), K(4)})));
}

TEST(TypeRulesTest, SplitInEqualPartsAndByNumOutputs) {
  OneNode g(18);
  Value* x = g.in(F({N(), K(10)}));
  const std::vector<ValueType> parts =
      g.run("Split", {x}, {Attr::Int("axis", 1), Attr::Int("num_outputs", 3)}, 3);
  EXPECT_EQ(str(parts[0]), str(F({N(), K(4)})));
  EXPECT_EQ(str(parts[2]), str(F({N(), K(2)})));
  OneNode h(13);
  Value* y = h.in(F({K(6), N()}));
  const std::vector<ValueType> split = h.run("Split", {y, h.ints({2, 4})}, {}, 2);
  EXPECT_EQ(str(split[1]), str(F({K(4), N()})));
}

TEST(TypeRulesTest, MatMulGemmEinsum) {
  OneNode g;
  Value* a = g.in(F({N(), K(1), K(4), K(5)}));
  Value* b = g.in(F({K(3), K(5), K(6)}));
  EXPECT_EQ(str(g.run("MatMul", {a, b})[0]), str(F({N(), K(3), K(4), K(6)})));
  OneNode v;
  Value* m = v.in(F({K(4), K(5)}));
  Value* vec = v.in(F({K(5)}));
  EXPECT_EQ(str(v.run("MatMul", {m, vec})[0]), str(F({K(4)})));
  OneNode gemm;
  Value* ga = gemm.in(F({K(5), N()}));
  Value* gb = gemm.in(F({K(7), K(5)}));
  EXPECT_EQ(str(gemm.run("Gemm", {ga, gb}, {Attr::Int("transA", 1), Attr::Int("transB", 1)})[0]),
            str(F({N(), K(7)})));
  OneNode e;
  Value* ea = e.in(F({N(), K(2), K(3)}));
  Value* eb = e.in(F({K(1), K(3), K(4)}));
  EXPECT_EQ(str(e.run("Einsum", {ea, eb}, {Attr::String("equation", "bij,bjk->bik")})[0]),
            str(F({N(), K(2), K(4)})));
  OneNode bad;
  Value* x = bad.in(F({K(2), K(3)}));
  Value* y = bad.in(F({K(4), K(2)}));
  EXPECT_THROW(bad.run("MatMul", {x, y}), Error);
}

// A scalar has no axis: rules that index the input's dims at an axis refuse it (TopK's rule
// read dims[0] of an empty shape; fuzz: topk_of_a_scalar).
TEST(TypeRulesTest, AxisOfAScalarFails) {
  for (const std::string op : {"TopK", "ArgMax", "Split", "Gather"}) {
    OneNode node;
    std::vector<Value*> inputs{node.in(F({}))};
    if (op == "TopK") inputs.push_back(node.ints({1}));
    if (op == "Gather") inputs.push_back(node.in(T(DType::kInt64, {K(2)})));
    const size_t outputs = op == "TopK" ? 2 : 1;
    EXPECT_THROW(node.run(op, inputs, {}, outputs), Error) << op;
  }
  OneNode vector;
  Value* x = vector.in(F({K(5)}));
  EXPECT_EQ(str(vector.run("TopK", {x, vector.ints({2})}, {}, 2)[0]), str(F({K(2)})));
}

TEST(TypeRulesTest, ShapeOpsWithConstantInputs) {
  OneNode g;
  Value* x = g.in(F({N(), K(10), K(4)}));
  EXPECT_EQ(
      str(g.run("Gather", {x, g.in(T(DType::kInt64, {K(2), K(3)}))}, {Attr::Int("axis", 1)})[0]),
      str(F({N(), K(2), K(3), K(4)})));
  OneNode u;
  Value* y = u.in(F({N(), K(3)}));
  EXPECT_EQ(str(u.run("Unsqueeze", {y, u.ints({0, -1})})[0]), str(F({K(1), N(), K(3), K(1)})));
  OneNode c;
  Value* a = c.in(F({N(), K(2)}));
  Value* b = c.in(F({N(), K(5)}));
  EXPECT_EQ(str(c.run("Concat", {a, b}, {Attr::Int("axis", 1)})[0]), str(F({N(), K(7)})));
  OneNode e;
  Value* z = e.in(F({K(3), K(1)}));
  EXPECT_EQ(str(e.run("Expand", {z, e.ints({2, 1, 6})})[0]), str(F({K(2), K(3), K(6)})));
  OneNode r;
  EXPECT_EQ(str(r.run("Range", {r.scalar_int(1), r.scalar_int(10), r.scalar_int(3)})[0]),
            str(T(DType::kInt64, {K(3)})));
  OneNode s(15);
  Value* v = s.in(F({N(), K(3), K(4)}));
  EXPECT_EQ(str(s.run("Shape", {v}, {Attr::Int("start", 1)})[0]), str(T(DType::kInt64, {K(2)})));
  OneNode k;
  EXPECT_EQ(str(k.run("Constant", {}, {Attr::Ints("value_ints", {1, 2, 3})})[0]),
            str(T(DType::kInt64, {K(3)})));
  OneNode p;
  Value* q = p.in(F({N(), K(3)}));
  EXPECT_EQ(str(p.run("Pad", {q, p.ints({0, 1, 0, 2})})[0]), str(F({N(), K(6)})));
  OneNode f;
  Value* t = f.in(F({N(), K(3), K(4)}));
  EXPECT_EQ(str(f.run("Flatten", {t}, {Attr::Int("axis", 1)})[0]), str(F({N(), K(12)})));
}

TEST(TypeRulesTest, ResizeByScalesOrSizes) {
  OneNode g;
  Value* x = g.in(F({N(), K(3), K(10), K(10)}));
  Value* none = nullptr;
  EXPECT_EQ(str(g.run("Resize", {x, none, g.floats({1, 1, 1.5f, 0.5f})})[0]),
            str(F({N(), K(3), K(15), K(5)})));
  OneNode h(18);
  Value* y = h.in(F({K(1), K(3), K(20), K(10)}));
  EXPECT_EQ(str(h.run("Resize", {y, nullptr, nullptr, h.ints({5, 8})},
                      {Attr::Ints("axes", {2, 3}),
                       Attr::String("keep_aspect_ratio_policy", "not_larger")})[0]),
            str(F({K(1), K(3), K(5), K(2)})));
}

TEST(TypeRulesTest, RecurrentLayouts) {
  OneNode g(14);
  Value* x = g.in(F({N(), K(7), K(4)}));
  Value* w = g.in(F({K(2), K(20), K(4)}));
  Value* r = g.in(F({K(2), K(20), K(5)}));
  const std::vector<ValueType> out = g.run(
      "LSTM", {x, w, r}, {Attr::Int("layout", 1), Attr::String("direction", "bidirectional")}, 3);
  EXPECT_EQ(str(out[0]), str(F({N(), K(7), K(2), K(5)})));
  EXPECT_EQ(str(out[2]), str(F({N(), K(2), K(5)})));
}

TEST(TypeRulesTest, IfMergesWhatBothBranchesAgreeOn) {
  OneNode g;
  Value* cond = g.in(T(DType::kBool, {}));
  Node* node = g.builder.node("If", {cond}, {}, 1);
  Value* x = g.builder.graph().add_input("x", F({N(), K(3)}));
  for (const char* name : {"then_branch", "else_branch"}) {
    auto branch = std::make_unique<Graph>(&g.builder.graph());
    const bool then = std::string(name) == "then_branch";
    Value* y = then ? x : branch->add_initializer("k", Tensor(DType::kFloat, {4, 3}));
    Node* identity = branch->add_node("Identity", {y}, {std::string(name) + "_y"}, "",
                                      std::string(name) + "_id");
    branch->add_output(identity->output(0));
    Attribute attribute;
    attribute.name = name;
    attribute.type = AttrType::kGraph;
    attribute.g = std::move(branch);
    node->set_attribute(std::move(attribute));
  }
  g.builder.output(node->output(0));
  EXPECT_EQ(str(RuleWalk(17).walk(g.builder.graph())[0]), str(F({U(), K(3)})));
}

TEST(TypeRulesTest, EveryBuiltinOpOfTheOldSuiteHasARule) {
  // A sample across the families (the cross-check covers every node of the backend suite).
  for (const char* op : {"Relu",
                         "Add",
                         "ReduceSum",
                         "Gather",
                         "Reshape",
                         "Pad",
                         "Conv",
                         "MaxPool",
                         "BatchNormalization",
                         "Softmax",
                         "MatMul",
                         "DFT",
                         "LSTM",
                         "If",
                         "SequenceAt",
                         "RandomNormal",
                         "SoftmaxCrossEntropyLoss",
                         "StringNormalizer",
                         "NonMaxSuppression",
                         "MatMulInteger"}) {
    const OpRegistration* registration = builtin_registry().find("", op, 17);
    ASSERT_NE(registration, nullptr) << op;
    EXPECT_NE(registration->definition.infer_types, nullptr) << op;
  }
}

}  // namespace
}  // namespace onnxkit::testing

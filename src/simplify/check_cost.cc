#include "simplify/check_cost.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "ir/graph_clone.h"
#include "passes/infer_types.h"

namespace onnxkit {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

uint64_t saturating_mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > kMax / a) return kMax;
  return a * b;
}

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > kMax - b ? kMax : a + b;
}

// A value's dims with symbols resolved; unknown dims are nullopt. Initializers have theirs.
struct Sizes {
  std::vector<std::optional<int64_t>> dims;
  bool known = false;  // the rank is known

  bool complete() const {
    return known && std::all_of(dims.begin(), dims.end(), [](auto d) { return d.has_value(); });
  }
  uint64_t numel() const {
    uint64_t n = 1;
    for (auto d : dims)
      n = saturating_mul(n, static_cast<uint64_t>(std::max<int64_t>(d.value_or(1), 0)));
    return n;
  }
  // Dim `i` (negative: from the back); 1 when unknown or out of range.
  uint64_t at(int64_t i) const {
    const int64_t rank = static_cast<int64_t>(dims.size());
    if (i < 0) i += rank;
    if (i < 0 || i >= rank || !dims[static_cast<size_t>(i)]) return 1;
    return static_cast<uint64_t>(std::max<int64_t>(*dims[static_cast<size_t>(i)], 0));
  }
  uint64_t product_from(size_t first) const {
    uint64_t n = 1;
    for (size_t i = first; i < dims.size(); ++i) n = saturating_mul(n, at(static_cast<int64_t>(i)));
    return n;
  }
};

Sizes sizes_of(const Value* value, const std::map<std::string, int64_t>& symbols) {
  Sizes sizes;
  if (!value) return sizes;
  if (value->has_initializer()) {
    sizes.known = true;
    for (int64_t d : value->initializer().shape()) sizes.dims.emplace_back(d);
    return sizes;
  }
  const ValueType& type = value->type();
  if (type.kind != ValueType::Kind::kTensor || !type.shape) return sizes;
  sizes.known = true;
  for (const Dim& dim : *type.shape) {
    if (dim.is_known()) {
      sizes.dims.emplace_back(dim.value);
    } else if (auto it = symbols.find(dim.param); dim.is_symbolic() && it != symbols.end()) {
      sizes.dims.emplace_back(it->second);
    } else {
      sizes.dims.emplace_back(std::nullopt);
    }
  }
  return sizes;
}

// Multiply-adds of a contraction node writing `out`; 0 for other ops.
uint64_t contraction_multiply_adds(const Node& node, const Sizes& out,
                                   const std::map<std::string, int64_t>& symbols) {
  const std::string& op = node.op_type();
  auto input = [&](size_t i) { return sizes_of(node.input(i), symbols); };
  if (op == "Conv" || op == "ConvInteger" || op == "DeformConv") {
    // W [M, C/group, k...]: every output element reads C/group * k... inputs.
    const Sizes w = input(1);
    return saturating_mul(out.numel(), w.product_from(1));
  }
  if (op == "QLinearConv") return saturating_mul(out.numel(), input(3).product_from(1));
  if (op == "ConvTranspose") {
    // Every input element scatters into M/group * k... outputs: W [C, M/group, k...].
    return saturating_mul(input(0).numel(), input(1).product_from(1));
  }
  if (op == "MatMul" || op == "MatMulInteger") return saturating_mul(out.numel(), input(0).at(-1));
  if (op == "QLinearMatMul") return saturating_mul(out.numel(), input(0).at(-1));
  if (op == "Gemm") {
    const Attribute* trans_a = node.find_attribute("transA");
    return saturating_mul(out.numel(), input(0).at(trans_a && trans_a->i ? 0 : 1));
  }
  if (op == "LSTM" || op == "GRU" || op == "RNN") {
    // Per step and batch row: W [dirs, gates*H, I] and R [dirs, gates*H, H] once each.
    const Sizes x = input(0);
    const uint64_t steps_times_batch = saturating_mul(x.at(0), x.at(1));
    return saturating_mul(steps_times_batch, saturating_add(input(1).numel(), input(2).numel()));
  }
  return 0;
}

void add_graph(const Graph& graph, const std::map<std::string, int64_t>& symbols,
               RunCostEstimate& estimate) {
  for (const Node* node : graph.nodes()) {
    for (const Graph* sub : node->subgraphs()) add_graph(*sub, symbols, estimate);
    bool sized = true;
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      const Value* output = node->output(i);
      if (!output) continue;
      const Sizes out = sizes_of(output, symbols);
      sized &= out.complete();
      estimate.elements = saturating_add(estimate.elements, out.numel());
      if (i == 0) {
        estimate.multiply_adds =
            saturating_add(estimate.multiply_adds, contraction_multiply_adds(*node, out, symbols));
      }
    }
    if (!sized) ++estimate.unsized_nodes;
  }
}

}  // namespace

RunCostEstimate estimate_run_cost(const Graph& graph,
                                  const std::map<std::string, int64_t>& symbols) {
  RunCostEstimate estimate;
  add_graph(graph, symbols, estimate);
  return estimate;
}

RunCostEstimate estimate_run_cost(const Model& model,
                                  const std::map<std::string, Shape>& input_shapes,
                                  const OpRegistry& registry) {
  Model sized = clone_model(model);
  Graph& graph = sized.graph();
  std::map<std::string, int64_t> symbols;
  for (Value* input : graph.inputs()) {
    auto given = input_shapes.find(input->name());
    ValueType type = input->type();
    if (given == input_shapes.end() || type.kind != ValueType::Kind::kTensor || !type.shape ||
        type.shape->size() != given->second.size()) {
      continue;
    }
    for (size_t axis = 0; axis < given->second.size(); ++axis) {
      Dim& dim = (*type.shape)[axis];
      if (dim.is_symbolic()) symbols[dim.param] = given->second[axis];
      dim = Dim::known(given->second[axis]);
    }
    input->set_type(std::move(type));
  }
  // Shapes inferred under the symbolic sizes: inferred again from the sizes.
  for (Value* value : graph.value_info()) {
    ValueType type = value->type();
    if (type.kind == ValueType::Kind::kTensor) type.shape.reset();
    value->set_type(std::move(type));
  }
  TypeInferenceOptions options;
  options.use_libonnx = false;                  // the rules alone: enough for sizes, and quicker
  (void)infer_types(sized, registry, options);  // a node it cannot size stays unsized
  // Where inference at the sizes knows less than the model did (a rule missing), the
  // model's own shapes with its symbols sized: the larger of two lower bounds.
  const RunCostEstimate resized = estimate_run_cost(graph, symbols);
  const RunCostEstimate declared = estimate_run_cost(model.graph(), symbols);
  return resized.units() >= declared.units() ? resized : declared;
}

}  // namespace onnxkit

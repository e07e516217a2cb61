// Pass constant_folding: nodes whose inputs are all constant are computed with the
// executor's kernels and their outputs become initializers (same names).
//
// Left alone, with the reason in context.not_folded: random ops and Dropout in training
// mode (a fold would freeze one draw), nodes with subgraphs (inline_constant_if handles If),
// quantization ops (folding DequantizeLinear would store float weights), non-tensor outputs
// (only tensors can be initializers), outputs over the size threshold or folds that grow the
// model by more than it (Tile / Expand / ConstantOfShape blow-ups), ops without a kernel,
// and kernel errors. Constant nodes are constant_to_initializer's job. Shape and Size also
// fold when their input is not constant but its static shape is fully known.
#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/resource_limits.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "passes/passes.h"
#include "registry/custom_op_library.h"

namespace onnxkit {
namespace {

// Bytes a tensor takes in the model (string data counted by length).
double tensor_bytes(const Tensor& tensor) {
  if (tensor.dtype() != DType::kString) return static_cast<double>(tensor.nbytes());
  double total = 0;
  for (const std::string& s : tensor.strings()) total += static_cast<double>(s.size());
  return total;
}

double numel_of(const std::vector<int64_t>& dims) {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(std::max<int64_t>(d, 0));
  return n;
}

// Output bytes known before running the kernel, so a blow-up is never materialized: from
// the inferred static shape, or for the ops that build large tensors from small constants
// (ConstantOfShape, Expand, Tile) from those constants. nullopt when unknown.
std::optional<double> estimated_output_bytes(const Node& node, size_t index,
                                             const std::vector<const Tensor*>& inputs) {
  std::optional<double> estimate;
  const Value* output = node.output(index);
  const ValueType& type = output->type();
  if (type.is_tensor() && type.shape && dtype_size(type.elem_type) > 0 &&
      std::all_of(type.shape->begin(), type.shape->end(),
                  [](const Dim& d) { return d.is_known(); })) {
    double n = 1;
    for (const Dim& d : *type.shape) n *= static_cast<double>(d.value);
    estimate = n * static_cast<double>(dtype_size(type.elem_type));
  }
  if (index != 0) return estimate;
  auto int64_values = [](const Tensor* t) -> std::optional<std::vector<int64_t>> {
    if (!t || t->dtype() != DType::kInt64 || t->rank() != 1) return std::nullopt;
    return std::vector<int64_t>(t->data<int64_t>(), t->data<int64_t>() + t->numel());
  };
  std::optional<double> built;
  const std::string& op = node.op_type();
  if (op == "ConstantOfShape" && !inputs.empty()) {
    if (auto shape = int64_values(inputs[0])) {
      const Attribute* value = node.find_attribute("value");
      DType dtype = value && value->t.defined() ? value->t.dtype() : DType::kFloat;
      built = numel_of(*shape) * static_cast<double>(std::max<size_t>(dtype_size(dtype), 1));
    }
  } else if ((op == "Expand" || op == "Tile") && inputs.size() >= 2 && inputs[0]) {
    if (auto operand = int64_values(inputs[1])) {
      const Shape& in = inputs[0]->shape();
      std::vector<int64_t> dims;
      if (op == "Tile") {
        if (operand->size() != in.size()) return estimate;
        // The repeats are the model's numbers: a product past int64 saturates (an estimate).
        for (size_t i = 0; i < in.size(); ++i) {
          int64_t dim = 0;
          if (__builtin_mul_overflow(in[i], (*operand)[i], &dim)) {
            dim = std::numeric_limits<int64_t>::max();
          }
          dims.push_back(dim);
        }
      } else {
        const size_t rank = std::max(in.size(), operand->size());
        for (size_t i = 0; i < rank; ++i) {
          int64_t a = i < rank - in.size() ? 1 : in[i - (rank - in.size())];
          int64_t b = i < rank - operand->size() ? 1 : (*operand)[i - (rank - operand->size())];
          dims.push_back(a == 1 ? b : b == 1 ? a : std::max(a, b));
        }
      }
      built =
          numel_of(dims) * static_cast<double>(std::max<size_t>(dtype_size(inputs[0]->dtype()), 1));
    }
  }
  if (built && (!estimate || *built > *estimate)) estimate = built;
  return estimate;
}

// Runs `node` over constant `inputs` (nullptr = omitted) with the kernel the executor would
// use. Returns the outputs, or sets `error` ("no kernel" / "kernel error: ...").
std::optional<std::vector<RuntimeValue>> evaluate(const Node& node,
                                                  const std::vector<const Tensor*>& inputs,
                                                  const PassContext& context, std::string& error) {
  const int64_t opset = context.opset(node.domain());
  const OpRegistry& registry = context.ops();
  if (!registry.find(node.domain(), node.op_type(), opset)) {
    error = "no kernel";
    return std::nullopt;
  }
  std::vector<RuntimeValue> input_values;
  input_values.reserve(inputs.size());
  std::vector<const RuntimeValue*> input_ptrs;
  for (const Tensor* input : inputs) {
    if (!input) {
      input_ptrs.push_back(nullptr);
      continue;
    }
    input_values.emplace_back(*input);
    input_ptrs.push_back(&input_values.back());
  }
  std::vector<RuntimeValue> outputs(node.outputs().size());
  std::vector<RuntimeValue*> output_ptrs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    output_ptrs.push_back(node.output(i) ? &outputs[i] : nullptr);
  }
  // A kernel whose output the estimate could not see (Range, Resize, a Loop) is held to the
  // size threshold (at least 256 MiB, so that small thresholds still get their own reason
  // below) when it allocates, instead of materializing a blow-up first.
  auto limits = std::make_shared<RunLimits>(
      static_cast<size_t>(std::max<uint64_t>(context.tensor_size_threshold, uint64_t{256} << 20)),
      0);
  RunLimitsScope limits_scope(limits.get());
  try {
    KernelCreateContext create(node, opset, registry);
    std::unique_ptr<OpKernel> kernel = registry.create_kernel(create, context.kernel_tier);
    KernelContext run(node, input_ptrs, output_ptrs, nullptr, nullptr);
    kernel->compute(run);
  } catch (const std::bad_alloc&) {
    error = "kernel error: out of memory";
    return std::nullopt;
  } catch (const std::exception& e) {
    error = std::string("kernel error: ") + e.what();
    return std::nullopt;
  }
  return outputs;
}

bool is_used(const Value* value) {
  return value && !is_unused(value);
}

// Shape / Size of a value whose static shape is fully known, computed from its type: the
// data is not needed, so the input need not be constant.
std::optional<Tensor> static_shape_result(const Node& node, const PassContext& context) {
  const std::string& op = node.op_type();
  // One output: the caller replaces each of the node's outputs by a result.
  if ((op != "Shape" && op != "Size") || node.inputs().size() != 1 || !node.input(0) ||
      node.outputs().size() != 1) {
    return std::nullopt;
  }
  const ValueType& type = node.input(0)->type();
  if (!type.is_tensor() || !type.shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const Dim& dim : *type.shape) {
    if (!dim.is_known()) return std::nullopt;
    dims.push_back(dim.value);
  }
  if (op == "Size") {
    int64_t n = 1;
    for (int64_t d : dims) {
      if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;  // left to the run to refuse
    }
    return Tensor::from_vector<int64_t>(DType::kInt64, {}, {n});
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t start = 0;
  int64_t end = rank;
  if (context.opset(node.domain()) >= 15) {  // start / end slice the shape from opset 15
    auto bound = [&](std::string_view name, int64_t fallback) {
      const Attribute* a = node.find_attribute(name);
      int64_t v = a && a->type == AttrType::kInt ? a->i : fallback;
      if (v < 0) v += rank;
      return std::clamp<int64_t>(v, 0, rank);
    };
    start = bound("start", 0);
    end = bound("end", rank);
  }
  std::vector<int64_t> sliced;
  for (int64_t i = start; i < end; ++i) sliced.push_back(dims[static_cast<size_t>(i)]);
  return Tensor::from_vector(DType::kInt64, {static_cast<int64_t>(sliced.size())}, sliced);
}

constexpr double kSharedWeightBytes = 16 << 20;
constexpr double kSessionWeightBytes = 1 << 20;

// A Transpose of a big weight that something else also reads (GPT-2's LM head is the
// token embedding, transposed) would become a second copy of it; when every reader is a
// MatMul / Gemm, which read a transposed operand for free (Gemm's transB, runtimes'
// fused transposes), the Transpose stays and the model stays that much smaller. In a
// session (keep_weight_transposes) any weight's Transpose stays for such readers: the
// kernels pack their own copy, and a folded one would be held beside it.
std::optional<std::string> transpose_left_for_matmul(const Node& node, double freed,
                                                     const PassContext& context) {
  if (node.op_type() != "Transpose" || !node.output(0) || node.inputs().empty() || !node.input(0)) {
    return std::nullopt;
  }
  const Tensor& weight = node.input(0)->initializer();
  const bool shared = freed == 0;
  if (tensor_bytes(weight) < (shared ? kSharedWeightBytes : kSessionWeightBytes)) {
    return std::nullopt;
  }
  if (!shared && !context.keep_weight_transposes) return std::nullopt;
  for (const Use& use : node.output(0)->uses()) {
    const std::string& reader = use.node->op_type();
    if (!use.node->domain().empty() || (reader != "MatMul" && reader != "Gemm")) {
      return std::nullopt;
    }
  }
  if (is_graph_output(node.output(0))) return std::nullopt;
  if (!shared) return std::string("a session's MatMul/Gemm reads the weight transposed");
  return fmt::format(
      "would copy the shared weight '{}' ({:.0f} bytes) that its MatMul/Gemm readers can "
      "read transposed",
      node.input(0)->name(), tensor_bytes(weight));
}

// Each used output becomes an initializer of the same name; the node goes.
void replace_by_initializers(Graph& graph, Node& node, std::vector<RuntimeValue>& values) {
  // A value cannot be computed and an initializer at once: readers (and graph output
  // slots) move to temporary initializers first, which take the names once the node is gone.
  std::vector<std::pair<Value*, std::string>> renames;
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    Value* output = node.output(i);
    if (!is_used(output)) continue;
    Tensor tensor = std::move(values[i].mutable_tensor());
    tensor.set_name("");
    std::vector<Dim> dims;
    for (int64_t d : tensor.shape()) dims.push_back(Dim::known(d));
    Value* init =
        graph.add_initializer(graph.unique_name(output->name() + "__folded"), std::move(tensor));
    init->set_type(ValueType::tensor(init->initializer().dtype(), dims));
    init->set_doc_string(output->doc_string());
    graph.replace_all_uses(output, init);
    renames.emplace_back(init, output->name());
  }
  std::vector<Value*> inputs(node.inputs().begin(), node.inputs().end());
  graph.remove_node(&node);
  for (auto& [init, name] : renames) graph.rename_value(init, name);
  // A mapped weight nothing reads any more (the source of a folded Transpose) leaves the
  // resident set now rather than when remove_unused_initializers drops it, so a big
  // model never holds every source beside every folded copy.
  for (const Value* input : inputs) {
    if (!input || !input->has_initializer() || !input->uses().empty()) continue;
    const Tensor& tensor = input->initializer();
    if (const FileRegion* region = tensor.file_region()) {
      region->file->release_pages(region->offset, tensor.nbytes());
    }
  }
}

// Standard ops fold, and so do the ops of custom op libraries (onnxsim folds them through ONNX
// Runtime when given their library); onnxkit's own domains keep their nodes as they are.
bool foldable_domain(const Node& node, const PassContext& context) {
  if (node.domain().empty()) return true;
  const int64_t opset = context.opset(node.domain());
  const OpRegistration* registration = context.ops().find(node.domain(), node.op_type(), opset);
  return registration && defined_by_custom_op_library(registration->definition);
}

// Folds `node` when it can; returns whether it did.
bool fold(Graph& graph, Node& node, PassContext& context) {
  if (!foldable_domain(node, context) || node.op_type() == "Constant") return false;
  if (!constant_value(node.input(0), context) && is_used(node.output(0))) {
    if (std::optional<Tensor> shape = static_shape_result(node, context)) {
      std::vector<RuntimeValue> outputs{RuntimeValue(std::move(*shape))};
      context.not_folded.erase(node.output(0)->name());
      replace_by_initializers(graph, node, outputs);
      return true;
    }
  }
  std::vector<const Tensor*> inputs;
  for (const Value* input : node.inputs()) {
    if (!input) {
      inputs.push_back(nullptr);
      continue;
    }
    const Tensor* tensor = constant_value(input, context);
    if (!tensor) return false;
    inputs.push_back(tensor);
  }
  const Value* first = nullptr;
  bool any_used = false;
  for (const Value* output : node.outputs()) {
    if (output && !first) first = output;
    any_used = any_used || is_used(output);
  }
  if (!first || !any_used) return false;  // dead code is another pass's job
  auto keep = [&](std::string why) {
    context.not_folded[first->name()] = std::move(why);
    return false;
  };

  const std::string& op = node.op_type();
  if (!node.subgraphs().empty()) return keep("has a subgraph");
  const OpTraits& traits = context.traits(&node);
  if (traits.quantization) return keep("quantization op kept");
  if (!traits.deterministic) return keep("non-deterministic op");
  if (op == "Dropout" && context.opset(node.domain()) < 7) {
    // Versions 1 and 6 drop at random unless is_test is set.
    const Attribute* is_test = node.find_attribute("is_test");
    const Attribute* ratio = node.find_attribute("ratio");
    if (!(is_test && is_test->i != 0) && !(ratio && ratio->f == 0.0f)) {
      return keep("non-deterministic op");
    }
  }
  if (op == "Dropout" && context.opset(node.domain()) >= 12 && inputs.size() > 2 && inputs[2]) {
    const Tensor& training = *inputs[2];
    if (training.dtype() != DType::kBool || training.numel() != 1 || training.data<bool>()[0]) {
      return keep("non-deterministic op");
    }
  }
  for (const Value* output : node.outputs()) {
    if (is_used(output) && output->type().kind != ValueType::Kind::kNone &&
        !output->type().is_tensor()) {
      return keep("non-tensor output");
    }
  }

  // Input constants that only this node reads go away with it.
  double freed = 0;
  std::set<const Value*> counted;
  for (const Value* input : node.inputs()) {
    if (!input || !counted.insert(input).second || is_graph_output(input)) continue;
    bool only_here = std::all_of(input->uses().begin(), input->uses().end(),
                                 [&](const Use& use) { return use.node == &node; });
    if (only_here) freed += tensor_bytes(input->initializer());
  }
  if (auto why = transpose_left_for_matmul(node, freed, context)) return keep(*why);
  const double threshold = static_cast<double>(context.tensor_size_threshold);
  auto over_threshold = [&](const std::vector<double>& bytes) -> std::optional<std::string> {
    double total = 0;
    for (double b : bytes) {
      if (b > threshold) {
        return fmt::format("output of {:.0f} bytes is over the size threshold", b);
      }
      total += b;
    }
    if (total - freed > threshold) {
      return fmt::format("folding grows the model by {:.0f} bytes, over the size threshold",
                         total - freed);
    }
    return std::nullopt;
  };

  std::vector<double> estimates;
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    if (!is_used(node.output(i))) continue;
    if (auto bytes = estimated_output_bytes(node, i, inputs)) estimates.push_back(*bytes);
  }
  if (auto why = over_threshold(estimates)) return keep(*why);

  std::string error;
  std::optional<std::vector<RuntimeValue>> outputs = evaluate(node, inputs, context, error);
  if (!outputs) return keep(error);
  std::vector<double> actual;
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    if (!is_used(node.output(i))) continue;
    if (!(*outputs)[i].is_tensor()) return keep("non-tensor output");
    actual.push_back(tensor_bytes((*outputs)[i].tensor()));
  }
  if (auto why = over_threshold(actual)) return keep(*why);

  context.not_folded.erase(first->name());
  replace_by_initializers(graph, node, *outputs);
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> make_constant_folding_pass() {
  return make_rule_pass(
      "constant_folding", {},
      [](Graph& graph, Node* node, PassContext& context) { return fold(graph, *node, context); },
      NodeOrder::kTopological);
}

}  // namespace onnxkit

#include "passes/infer_types.h"

#include <complex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/resource_limits.h"
#include "onnx/onnx_checks.h"
#include "ops/shape_vector.h"
#include "ops/type_inference.h"

namespace onnxkit {
namespace {

// Nodes whose constant inputs are this small (and outputs too, by their inferred type) are
// evaluated during inference: shape arithmetic, never weights.
constexpr int64_t kMaxFoldedElements = 1024;

// Elements of a tensor of `type`; -1 when its type does not tell, or declares dims whose
// product leaves int64.
int64_t numel_of(const ValueType& type) {
  if (!type.is_tensor() || !type.shape) return -1;
  int64_t count = 1;
  for (const Dim& dim : *type.shape) {
    if (!dim.is_known() || __builtin_mul_overflow(count, dim.value, &count)) return -1;
  }
  return count;
}

// True when libonnx knows exactly the version of `node`'s op that `opset` means (see
// infer_types.h). Past libonnx's newest opset that is when the registry resolves the opset to
// a version libonnx has: one not newer than libonnx's newest opset. With every version
// registered that is the same as "libonnx's schema is the registered version"; a registry
// still missing an older version libonnx has (Sigmoid registered as 6 only, libonnx's is 13)
// does not take the node from libonnx. Domains libonnx has never heard of qualify too:
// libonnx leaves their nodes alone, as it always has.
bool libonnx_knows(const Node& node, int64_t opset, const OpRegistration* registration) {
  const int64_t newest = max_known_opset(node.domain());
  if (newest < 0) return true;
  const int64_t since = libonnx_since_version(node.domain(), node.op_type(), opset);
  if (since < 0) return false;
  return opset <= newest || (registration && registration->since_version <= newest);
}

std::optional<int64_t> rank_of_type(const ValueType* type) {
  if (!type || !type->is_tensor() || !type->shape) return std::nullopt;
  return static_cast<int64_t>(type->shape->size());
}

std::optional<int64_t> rank_of(const Value* value) {
  if (!value || !value->type().is_tensor() || !value->type().shape) return std::nullopt;
  return static_cast<int64_t>(value->type().shape->size());
}

// True when libonnx's whole-model inference may be given `node` (its subgraphs aside).
bool whole_model_libonnx_may_infer(const Node& node, int64_t opset,
                                   const OpRegistration* registration) {
  const int64_t newest = max_known_opset(node.domain());
  if (newest >= 0 && opset > newest && !libonnx_knows(node, opset, registration)) return false;
  // A node libonnx would crash on is left to its rule, node by node.
  if (!libonnx_inference_hazard(node, opset, rank_of(node.input(0))).empty()) return false;
  // An op of a domain libonnx has no schema for (a custom op library's, com.microsoft's
  // QLinearAdd ...) with a type rule: libonnx's whole-model inference would leave its outputs
  // (and everything after them) as they were.
  return !(newest < 0 && registration && registration->definition.infer_types);
}

bool every_node_libonnx_knows(const Graph& graph, const Model& model, const OpRegistry& registry) {
  for (const Node* node : graph.nodes()) {
    const int64_t opset = model.opset_version(node->domain());
    if (!whole_model_libonnx_may_infer(*node, opset,
                                       registry.find(node->domain(), node->op_type(), opset))) {
      return false;
    }
    for (const Graph* sub : node->subgraphs()) {
      if (!every_node_libonnx_knows(*sub, model, registry)) return false;
    }
  }
  return true;
}

size_t count_nodes(const Graph& graph) {
  size_t count = 0;
  for (const Node* node : graph.nodes()) {
    ++count;
    for (const Graph* sub : node->subgraphs()) count += count_nodes(*sub);
  }
  return count;
}

// `inferred` merged into what a value already had, dim by dim: an inferred number replaces
// what was there, any other dim keeps what was there when that is a number or a name. With
// `keep_declared` (graph inputs and outputs) a declared number also wins over an inferred one.
ValueType merge_types(const ValueType& existing, ValueType inferred, bool keep_declared) {
  if (inferred.kind == ValueType::Kind::kNone) return existing;
  if (existing.kind != inferred.kind)
    return keep_declared && existing.kind != ValueType::Kind::kNone ? existing : inferred;
  if (inferred.elem_type == DType::kUndefined) inferred.elem_type = existing.elem_type;
  if (inferred.is_tensor() || inferred.kind == ValueType::Kind::kSparseTensor) {
    if (!inferred.shape) {
      inferred.shape = existing.shape;
    } else if (existing.shape && existing.shape->size() == inferred.shape->size()) {
      for (size_t i = 0; i < inferred.shape->size(); ++i) {
        Dim& dim = (*inferred.shape)[i];
        const Dim& had = (*existing.shape)[i];
        // As libonnx merges: an inferred number wins, else what the value had (a number or
        // a name: a declared 'batch' beats a fresh unk__3), else the inferred name.
        if (dim.is_known() ? keep_declared && had.is_known()
                           : had.is_known() || had.is_symbolic()) {
          dim = had;
        }
      }
    } else if (keep_declared && existing.shape) {
      inferred.shape = existing.shape;
    }
  }
  if (inferred.has_element() && existing.has_element()) {
    inferred.element[0] =
        merge_types(existing.element[0], std::move(inferred.element[0]), keep_declared);
  } else if (!inferred.has_element()) {
    inferred.element = existing.element;
  }
  if (inferred.denotation.empty()) inferred.denotation = existing.denotation;
  return inferred;
}

void collect_symbols(const ValueType& type, std::set<std::string>& symbols) {
  if (type.shape) {
    for (const Dim& dim : *type.shape) {
      if (dim.is_symbolic()) symbols.insert(dim.param);
    }
  }
  for (const ValueType& element : type.element) collect_symbols(element, symbols);
}

void collect_symbols(const Graph& graph, std::set<std::string>& symbols) {
  for (const Value* input : graph.inputs()) collect_symbols(input->type(), symbols);
  for (const Value* output : graph.outputs()) collect_symbols(output->type(), symbols);
  for (const Node* node : graph.nodes()) {
    for (const Value* output : node->outputs()) {
      if (output) collect_symbols(output->type(), symbols);
    }
    for (const Graph* sub : node->subgraphs()) collect_symbols(*sub, symbols);
  }
}

// A shape vector's elements as dims: numbers, named dims, unknown for the rest.
std::vector<Dim> vector_dims(const ShapeVector& vector) {
  std::vector<Dim> dims;
  dims.reserve(vector.elems.size());
  for (const SymbolicInt& element : vector.elems) {
    if (element.known)
      dims.push_back(Dim::known(*element.known));
    else if (const std::string* name = element.named_dim())
      dims.push_back(Dim::symbol(*name));
    else
      dims.emplace_back();
  }
  return dims;
}

// Thrown through the rules of the nodes that own the subgraph (whose inference failures are
// otherwise warnings): see Engine::record.
class SubgraphContradictsItsSignature : public Error {
 public:
  using Error::Error;
};

class Engine {
 public:
  // A trial engine (`trial`) only asks whether libonnx's whole-model inference may be given the
  // model: every node qualifies (whole_model_libonnx_may_infer) and its op's rule, if it has
  // one, accepts it on the types the rules infer. It stops at the first node that fails, and
  // every type it recorded is undone when it is destroyed.
  Engine(Model& model, const OpRegistry& registry, const TypeInferenceOptions& options,
         TypeInferenceReport& report, bool trial = false)
      : model_(model), registry_(registry), options_(options), report_(report), trial_(trial) {
    // A trial's unknown dims stay unnamed: its types are undone anyway.
    if (!trial_) collect_symbols(model.graph(), symbols_);
  }
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine() {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) it->first->set_type(it->second);
  }

  void infer_graph(Graph& graph) {
    // A trial takes the nodes in file order, which saves sorting them: in a graph out of
    // order a rule may see an input's type unknown, and accept what it cannot judge.
    for (Node* node : trial_ ? graph.nodes() : graph.topological_order()) {
      if (trial_failed_) return;
      infer_node(*node);
    }
  }

  bool trial_failed() const { return trial_failed_; }
  // The nodes of the model, those of subgraphs included, after a trial that did not fail.
  size_t model_nodes() const { return model_nodes_; }
  // The element types a trial inferred for tensors the model leaves untyped, with their graph:
  // the last type each got (a body a rule infers twice records its value twice).
  struct ElementTypeHint {
    Graph* graph;
    Value* value;
    DType dtype;
  };
  std::vector<ElementTypeHint> element_type_hints() const {
    std::vector<ElementTypeHint> hints;
    for (const auto& [graph, value] : untyped_before_trial_) {
      const ValueType& type = value->type();
      if (type.is_tensor() && type.elem_type != DType::kUndefined) {
        hints.push_back({graph, value, type.elem_type});
      }
    }
    return hints;
  }

  // Infers `graph` (a subgraph) with its inputs of `input_types` (kNone: as declared) and
  // returns its outputs' types.
  std::vector<ValueType> infer_subgraph(Graph& graph, std::span<const ValueType> input_types) {
    for (size_t i = 0; i < graph.inputs().size() && i < input_types.size(); ++i) {
      Value* input = graph.inputs()[i];
      set_type(input, merge_types(input->type(), input_types[i], true));
    }
    infer_graph(graph);
    std::vector<ValueType> outputs;
    for (const Value* output : graph.outputs()) outputs.push_back(output->type());
    return outputs;
  }

  // What is known of `value`'s type, or nullptr: its own, or an untyped initializer's tensor's.
  const ValueType* type_of(const Value* value) {
    if (!value) return nullptr;
    if (value->type().kind != ValueType::Kind::kNone) return &value->type();
    if (!value->has_initializer()) return nullptr;
    auto it = initializer_types_.find(value);
    if (it == initializer_types_.end()) {
      std::vector<Dim> dims;
      for (int64_t d : value->initializer().shape()) dims.push_back(Dim::known(d));
      it = initializer_types_
               .emplace(value, ValueType::tensor(value->initializer().dtype(), std::move(dims)))
               .first;
    }
    return &it->second;
  }

  // The value of `value` known before running, or nullptr.
  const Tensor* value_of(const Value* value) const {
    if (!value) return nullptr;
    if (auto it = folded_.find(value); it != folded_.end()) return &it->second;
    if (value->has_initializer() && !value->graph()->is_input(value)) {
      return &value->initializer();
    }
    return nullptr;
  }

  // `value` as a shape vector (known or symbolic elements), or nullptr.
  const ShapeVector* vector_of(const Value* value) {
    if (!value) return nullptr;
    if (auto it = vectors_.find(value); it != vectors_.end()) {
      return it->second ? &*it->second : nullptr;
    }
    std::optional<ShapeVector> vector;
    if (const Tensor* tensor = value_of(value)) vector = ShapeVector::from_tensor(*tensor);
    auto [it, inserted] = vectors_.emplace(value, std::move(vector));
    return it->second ? &*it->second : nullptr;
  }

  // The mutable subgraph of `node` that `graph` is.
  static Graph& subgraph_of(Node& node, const Graph& graph) {
    for (Graph* sub : node.subgraphs()) {
      if (sub == &graph) return *sub;
    }
    fail_at(node, "asked to infer a graph that is not one of the node's subgraphs");
  }

 private:
  static std::optional<int64_t> negative_dim(const ValueType& type) {
    if (type.shape) {
      // Dim::known(-8) reads as unknown (a Dim is known when >= 0), but it is a number a rule
      // computed; -1 is the unknown dim's own value.
      for (const Dim& dim : *type.shape) {
        if (dim.value < -1) return dim.value;
      }
    }
    for (const ValueType& element : type.element) {
      if (const std::optional<int64_t> dim = negative_dim(element)) return dim;
    }
    return std::nullopt;
  }

  class RuleContext : public TypeInferenceContext {
   public:
    RuleContext(Engine& engine, Node& node, int64_t opset)
        : engine_(engine), node_(node), opset_(opset), outputs_(node.outputs().size()) {}

    const Node& node() const override { return node_; }
    int64_t opset() const override { return opset_; }
    const ValueType* input_type(size_t i) const override { return engine_.type_of(node_.input(i)); }
    const Tensor* input_value(size_t i) const override { return engine_.value_of(node_.input(i)); }
    SymbolicShape input_as_dims(size_t i) const override {
      if (input_value(i)) return TypeInferenceContext::input_as_dims(i);
      const ShapeVector* vector = engine_.vector_of(node_.input(i));
      if (!vector || vector->scalar) return std::nullopt;
      return vector_dims(*vector);
    }
    std::vector<ValueType> infer_subgraph(const Graph& subgraph,
                                          std::span<const ValueType> input_types) override {
      return engine_.infer_subgraph(subgraph_of(node_, subgraph), input_types);
    }
    void set_output(size_t i, ValueType type) override {
      if (!has_output(i)) return;
      // No tensor has a negative dim: a rule that computes one (from a negative repeat, an
      // output_shape, a split, a kernel longer than its input...) was given a node that
      // cannot run, and a pass or the planner must not size anything from it.
      if (const std::optional<int64_t> dim = negative_dim(type)) {
        fail("output {} ('{}') would have the negative dim {}: {}", i, node_.output(i)->name(),
             *dim, value_type_to_string(type));
      }
      outputs_[i] = std::move(type);
    }
    std::vector<ValueType>& outputs() { return outputs_; }

   private:
    Engine& engine_;
    Node& node_;
    int64_t opset_;
    std::vector<ValueType> outputs_;
  };

  class VectorContext : public ShapeVectorContext {
   public:
    VectorContext(Engine& engine, const Node& node, int64_t opset)
        : ShapeVectorContext(node, opset), engine_(engine) {}
    const ShapeVector* input(size_t index) const override {
      return engine_.vector_of(node().input(index));
    }

   private:
    Engine& engine_;
  };

  void infer_node(Node& node) {
    const int64_t opset = model_.opset_version(node.domain());
    const OpRegistration* registration = registry_.find(node.domain(), node.op_type(), opset);
    const OpDefinition* definition = registration ? &registration->definition : nullptr;
    const bool has_rule = definition && definition->infer_types;
    if (trial_ && !trial_node(node, opset, registration)) {
      trial_failed_ = true;
      return;
    }
    if (trial_) visited_.insert(&node);
    std::optional<std::vector<ValueType>> outputs;
    try {
      // The op's own rule judges the node first: libonnx's inference functions trust what
      // its checker verifies and crash on some nodes that break it (a rank-1 STFT signal, a
      // stride of 0, ...), so a node its rule rejects never reaches libonnx. A node with
      // subgraphs is judged through them: its rule would infer them once more.
      std::optional<std::vector<ValueType>> by_rule;
      if (has_rule && node.subgraphs().empty()) by_rule = apply_rule(node, opset, *definition);
      if (definition && definition->check_node) {
        definition->check_node(KernelCreateContext(node, opset, registry_));
      }
      if (options_.use_libonnx && libonnx_knows(node, opset, registration) &&
          libonnx_inference_hazard(node, opset, rank_of_type(type_of(node.input(0)))).empty()) {
        try {
          outputs = infer_with_libonnx(node, opset);
        } catch (const Error&) {
          // libonnx's non-strict inference skips a node it cannot infer (an input of unknown
          // type, mostly) without a word; so does its per-node use here.
          if (options_.strict) throw;
          ++report_.unknown;
          return;
        }
        if (outputs) ++report_.by_libonnx;
      }
      if (!outputs && has_rule) {
        outputs = by_rule ? std::move(by_rule) : apply_rule(node, opset, *definition);
        ++report_.by_rule;
      }
    } catch (const SubgraphContradictsItsSignature&) {
      throw;  // not one node's inference failing: the model is refused
    } catch (const Error& e) {
      if (trial_) {
        trial_failed_ = true;
        return;
      }
      std::string message = e.what();
      if (message.find(node.describe()) == std::string::npos) {
        message = node.describe() + ": " + message;
      }
      if (options_.strict) fail("{}", message);
      report_.warnings.push_back(std::move(message));
      ++report_.unknown;
      return;
    }
    if (!outputs) {
      ++report_.unknown;
      return;
    }
    Graph& graph = *node.graph();
    for (size_t i = 0; i < node.outputs().size() && i < outputs->size(); ++i) {
      if (Value* output = node.output(i)) record(graph, output, std::move((*outputs)[i]));
    }
    if (definition) fold(node, opset, *definition);
  }

  // A trial's checks of `node` before its rule: what every_node_libonnx_knows checks, counting
  // the model's nodes on the way.
  bool trial_node(const Node& node, int64_t opset, const OpRegistration* registration) {
    if (!whole_model_libonnx_may_infer(node, opset, registration)) return false;
    // libonnx takes the nodes in file order: an input computed by a later node has no type
    // yet there, and its data propagation (a Shape of it) dereferences the missing type.
    for (const Value* input : node.inputs()) {
      const Node* producer = input ? input->producer() : nullptr;
      if (producer && !visited_.contains(producer)) return false;
    }
    const bool in_main_graph = node.graph() == &model_.graph();
    if (in_main_graph) ++model_nodes_;
    // Subgraphs are judged whether or not the node's rule infers them.
    for (const Graph* sub : node.subgraphs()) {
      if (!every_node_libonnx_knows(*sub, model_, registry_)) return false;
      if (in_main_graph) model_nodes_ += count_nodes(*sub);
    }
    return true;
  }

  std::vector<ValueType> apply_rule(Node& node, int64_t opset, const OpDefinition& definition) {
    RuleContext context(*this, node, opset);
    definition.infer_types(context);
    return std::move(context.outputs());
  }

  std::optional<std::vector<ValueType>> infer_with_libonnx(Node& node, int64_t opset) {
    NodeInferenceInputs inputs;
    std::vector<SymbolicShape> symbolic(node.inputs().size());
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      const Value* input = node.input(i);
      inputs.types.push_back(type_of(input));
      inputs.values.push_back(value_of(input));
      inputs.symbolic_values.push_back(nullptr);
      const ShapeVector* vector = inputs.values.back() ? nullptr : vector_of(input);
      if (vector && !vector->scalar) {
        symbolic[i] = vector_dims(*vector);
        inputs.symbolic_values.back() = &symbolic[i];
      }
    }
    inputs.infer_subgraph = [&](const Graph& subgraph, std::span<const ValueType> types) {
      return infer_subgraph(subgraph_of(node, subgraph), types);
    };
    return libonnx_infer_node(node, opset, inputs);
  }

  void record(Graph& graph, Value* value, ValueType inferred) {
    if (inferred.kind == ValueType::Kind::kNone) return;
    const bool declared = graph.is_input(value) || graph.is_output(value);
    const DType declared_dtype =
        value->type().is_tensor() ? value->type().elem_type : DType::kUndefined;
    if (declared && inferred.is_tensor() && declared_dtype != DType::kUndefined &&
        inferred.elem_type != DType::kUndefined && inferred.elem_type != declared_dtype) {
      // The node computes another dtype than the model declares: libonnx's whole-model
      // inference would keep the declaration, and passes that trust it (a cast back to the
      // output's 16-bit type) would change the output's dtype between levels. What the node
      // computes wins, as every level runs it.
      if (trial_) {
        trial_failed_ = true;
        return;
      }
      std::string message = fmt::format("{} '{}' is declared {} but its producer computes {}",
                                        graph.is_output(value) ? "output" : "input", value->name(),
                                        dtype_name(declared_dtype), dtype_name(inferred.elem_type));
      // A subgraph's declared output types are what a Loop or Scan that runs no iteration
      // gives (its empty scan outputs): a body that computes another type would give one
      // dtype or the other by its trip count, so it is refused as ONNX Runtime refuses it.
      if (graph.is_output(value) && &graph != &model_.graph()) {
        throw SubgraphContradictsItsSignature(
            fmt::format("subgraph '{}': {}", graph.name(), message));
      }
      if (options_.strict) fail("{}", message);
      report_.warnings.push_back(std::move(message));
    }
    if (trial_ && !declared && value->type().kind == ValueType::Kind::kNone) {
      untyped_before_trial_.emplace_back(&graph, value);
    }
    ValueType type = merge_types(value->type(), std::move(inferred), declared);
    if (!trial_) name_unknown_dims(type);
    set_type(value, std::move(type));
    if (!declared && !trial_) graph.add_value_info(value);
  }

  void set_type(Value* value, ValueType type) {
    if (trial_) undo_.emplace_back(value, value->type());
    value->set_type(std::move(type));
  }

  void name_unknown_dims(ValueType& type) {
    if (type.shape) {
      for (Dim& dim : *type.shape) {
        if (dim.is_known() || dim.is_symbolic()) continue;
        std::string name;
        do {
          name = "unk__" + std::to_string(next_symbol_++);
        } while (symbols_.count(name));
        symbols_.insert(name);
        dim.param = std::move(name);
      }
    }
    for (ValueType& element : type.element) name_unknown_dims(element);
  }

  // Records what is known of `node`'s outputs' values: its shape-vector rule's result, or the
  // output of a small deterministic node all of whose inputs are known.
  void fold(Node& node, int64_t opset, const OpDefinition& definition) {
    Value* output = node.output(0);
    if (!output) return;
    // A trial leaves the shape vectors out: they are most of its cost, and their values
    // only make a rule know more (a Reshape's shape from Shape, Gather and Concat).
    if (definition.shape_vector && !trial_) {
      VectorContext context(*this, node, opset);
      std::optional<ShapeVector> vector;
      try {
        vector = definition.shape_vector(context);
      } catch (const Error&) {
        vector.reset();
      }
      if (vector && !vector->elems.empty() &&
          numel_of(output->type()) == static_cast<int64_t>(vector->elems.size())) {
        if (vector->all_known()) folded_.emplace(output, vector->to_tensor());
        vectors_[output] = std::move(vector);
        return;
      }
    }
    if (!definition.traits.deterministic || !node.subgraphs().empty()) return;
    const bool constant_node = node.domain().empty() && node.op_type() == "Constant";
    std::vector<RuntimeValue> inputs;
    inputs.reserve(node.inputs().size());
    std::vector<const RuntimeValue*> input_ptrs;
    for (const Value* input : node.inputs()) {
      if (!input) {
        input_ptrs.push_back(nullptr);
        continue;
      }
      const Tensor* tensor = value_of(input);
      if (!tensor || tensor->numel() > kMaxFoldedElements) return;
      inputs.emplace_back(*tensor);
      input_ptrs.push_back(&inputs.back());
    }
    for (const Value* out : node.outputs()) {
      if (!out) continue;
      const int64_t numel = numel_of(out->type());
      if (numel < 0 || (!constant_node && numel > kMaxFoldedElements)) return;
    }
    std::vector<RuntimeValue> outputs(node.outputs().size());
    std::vector<RuntimeValue*> output_ptrs;
    for (size_t i = 0; i < outputs.size(); ++i) {
      output_ptrs.push_back(node.output(i) ? &outputs[i] : nullptr);
    }
    // The output's size above may come from a declaration that lies (a graph output declared
    // [9] that a ConstantOfShape makes 4 GiB): the kernel is held to the fold's size when it
    // allocates. A Constant's value is already in the file, whatever its size.
    auto limits = std::make_shared<RunLimits>(
        static_cast<size_t>(kMaxFoldedElements) * sizeof(std::complex<double>), 0);
    std::optional<RunLimitsScope> limits_scope;
    if (!constant_node) limits_scope.emplace(limits.get());
    try {
      KernelCreateContext create(node, opset, registry_);
      std::unique_ptr<OpKernel> kernel = registry_.create_reference_kernel(create);
      if (!kernel) return;
      KernelContext run(node, input_ptrs, output_ptrs, nullptr, nullptr);
      kernel->compute(run);
    } catch (const std::exception&) {
      return;  // the kernel's errors are the run's to report, not inference's
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (node.output(i) && outputs[i].is_tensor()) {
        folded_.emplace(node.output(i), outputs[i].tensor());
      }
    }
  }

  Model& model_;
  const OpRegistry& registry_;
  const TypeInferenceOptions& options_;
  TypeInferenceReport& report_;
  std::unordered_map<const Value*, Tensor> folded_;
  std::unordered_map<const Value*, ValueType> initializer_types_;
  std::unordered_map<const Value*, std::optional<ShapeVector>> vectors_;
  std::set<std::string> symbols_;
  size_t next_symbol_ = 0;
  bool trial_ = false;
  bool trial_failed_ = false;
  size_t model_nodes_ = 0;
  std::vector<std::pair<Value*, ValueType>> undo_;  // each type a trial replaced, in order
  std::unordered_set<const Node*> visited_;         // the nodes a trial has taken so far
  std::vector<std::pair<Graph*, Value*>> untyped_before_trial_;  // in the order a trial typed them
};

// The number of nodes (those of subgraphs included) when libonnx's whole-model inference may
// be given `model` (see Engine's trial), else nullopt: the walk node by node then reports the
// node a rule rejects and keeps it from libonnx.
std::optional<size_t> whole_model_for_libonnx(Model& model, const OpRegistry& registry) {
  TypeInferenceOptions rules_only;
  rules_only.use_libonnx = false;
  TypeInferenceReport report;
  size_t nodes = 0;
  std::vector<Engine::ElementTypeHint> hints;
  {
    Engine trial(model, registry, rules_only, report, true);
    trial.infer_graph(model.graph());
    if (trial.trial_failed()) return std::nullopt;
    nodes = trial.model_nodes();
    hints = trial.element_type_hints();
  }  // the trial's types are undone here
  // libonnx's inference of a node it refuses (where a rule accepted it) leaves the node's
  // outputs untyped, and some of its data propagation functions then read a missing input
  // type (a Shape downstream: SEGV). The element types the rules agreed on are declared as
  // value_info, shapes left out, so every value has a type; libonnx merges what it infers
  // into them and replaces them where it can.
  for (const Engine::ElementTypeHint& hint : hints) {
    hint.value->set_type(ValueType::tensor(hint.dtype));
    hint.graph->add_value_info(hint.value);
  }
  return nodes;
}

}  // namespace

Result<TypeInferenceReport> infer_types(Model& model, const OpRegistry& registry,
                                        const TypeInferenceOptions& options) {
  return capture([&] {
    TypeInferenceReport report;
    check_opsets_supported(model).throw_if_error();
    const std::optional<size_t> whole_model =
        options.use_libonnx ? whole_model_for_libonnx(model, registry) : std::nullopt;
    if (whole_model) {
      ShapeInferenceOptions libonnx_options;
      libonnx_options.strict = options.strict;
      Status inferred = infer_shapes(model, libonnx_options);
      if (!inferred.ok()) {
        if (options.strict) inferred.throw_if_error();
        report.warnings.push_back(inferred.message());
      }
      report.by_libonnx = *whole_model;
      return report;
    }
    Engine engine(model, registry, options, report);
    engine.infer_graph(model.graph());
    return report;
  });
}

}  // namespace onnxkit

#include "onnx/onnx_checks.h"

#include <onnx/checker.h>
#include <onnx/common/version.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>
#include <algorithm>

#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "onnx/proto_convert.h"

namespace onnxkit {
namespace {

// Tensors this big are never shape inputs; libonnx sees their type and dims only.
constexpr size_t kOmitDataBytes = 1 << 20;
// Shape inference reads data only of shape-like inputs (shapes, axes, pads, scales and
// sizes: a few dozen bytes), so it gets less: copying the weights into the message cost
// every round a copy of the model (EfficientNet-B0's 21 MB of mostly small weights were
// half of its session creation). The checker needs a value field on every tensor.
constexpr size_t kOmitDataBytesForShapeInference = 4096;

onnx::ModelProto to_proto_for_checks(const Model& model, size_t omit_data_bytes = kOmitDataBytes) {
  onnx::ModelProto proto;
  onnx_io::WriteContext context;
  context.omit_data_threshold = omit_data_bytes;
  onnx_io::model_to_proto(model, proto, context);
  return proto;
}

// Copies inferred types from `proto` back onto `graph`, walking both in step.
void apply_types(const onnx::GraphProto& proto, Graph& graph) {
  for (const auto& info : proto.value_info()) {
    Value* value = graph.find_value(info.name());
    if (!value) continue;
    ValueType type = onnx_io::type_from_proto(info.type());
    if (type.kind == ValueType::Kind::kNone) continue;
    value->set_type(std::move(type));
    if (!graph.is_input(value) && !graph.is_output(value)) graph.add_value_info(value);
  }
  for (const auto& output : proto.output()) {
    Value* value = graph.find_value(output.name());
    if (!value || !output.has_type()) continue;
    ValueType type = onnx_io::type_from_proto(output.type());
    if (type.kind != ValueType::Kind::kNone) value->set_type(std::move(type));
  }
  std::vector<Node*> nodes = graph.nodes();
  for (int n = 0; n < proto.node_size() && n < static_cast<int>(nodes.size()); ++n) {
    const auto& node_proto = proto.node(n);
    std::vector<Graph*> subgraphs = nodes[n]->subgraphs();
    size_t next = 0;
    for (const auto& attribute : node_proto.attribute()) {
      if (attribute.has_g() && next < subgraphs.size())
        apply_types(attribute.g(), *subgraphs[next++]);
      for (const auto& g : attribute.graphs()) {
        if (next < subgraphs.size()) apply_types(g, *subgraphs[next++]);
      }
    }
  }
}

// libonnx's view of a subgraph attribute: the engine that called libonnx_infer_node infers it.
class SubgraphInferencer : public onnx::GraphInferencer {
 public:
  SubgraphInferencer(const Graph& graph, const NodeInferenceInputs& inputs)
      : graph_(graph), inputs_(inputs) {}

  std::vector<const onnx::TypeProto*> doInferencing(
      const std::vector<const onnx::TypeProto*>& input_types,
      const std::vector<const onnx::TensorProto*>&) override {
    std::vector<ValueType> types;
    types.reserve(input_types.size());
    for (const onnx::TypeProto* type : input_types) {
      types.push_back(type ? onnx_io::type_from_proto(*type) : ValueType{});
    }
    std::vector<ValueType> outputs = inputs_.infer_subgraph(graph_, types);
    outputs_.assign(outputs.size(), onnx::TypeProto{});
    std::vector<const onnx::TypeProto*> result;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].kind != ValueType::Kind::kNone)
        onnx_io::type_to_proto(outputs[i], outputs_[i]);
      result.push_back(&outputs_[i]);
    }
    return result;
  }

 private:
  const Graph& graph_;
  const NodeInferenceInputs& inputs_;
  std::vector<onnx::TypeProto> outputs_;
};

// onnx::InferenceContext over one IR node and what the caller knows of its inputs.
class NodeInferenceContext : public onnx::InferenceContext {
 public:
  NodeInferenceContext(const Node& node, const NodeInferenceInputs& inputs)
      : node_(node), inputs_(inputs) {
    onnx_io::WriteContext write;
    write.omit_data_threshold = kOmitDataBytesForShapeInference;
    onnx_io::node_to_proto(node, proto_, write);
    const size_t n = node.inputs().size();
    input_types_.resize(n);
    input_values_.resize(n);
    symbolic_values_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (i < inputs.types.size() && inputs.types[i]) {
        input_types_[i].emplace();
        onnx_io::type_to_proto(*inputs.types[i], *input_types_[i]);
      }
      const Tensor* value = i < inputs.values.size() ? inputs.values[i] : nullptr;
      if (value && value->nbytes() < kOmitDataBytesForShapeInference) {
        input_values_[i].emplace();
        onnx_io::tensor_to_proto(*value, *input_values_[i], write);
      }
      const SymbolicShape* symbolic =
          i < inputs.symbolic_values.size() ? inputs.symbolic_values[i] : nullptr;
      if (symbolic && *symbolic) {
        auto& dims = symbolic_values_[i].emplace();
        for (const Dim& dim : **symbolic) {
          auto* out = dims.add_dim();
          if (dim.is_known())
            out->set_dim_value(dim.value);
          else if (dim.is_symbolic())
            out->set_dim_param(dim.param);
        }
      }
    }
    output_types_.resize(node.outputs().size());
  }

  const onnx::AttributeProto* getAttribute(const std::string& name) const override {
    for (const auto& attribute : proto_.attribute()) {
      if (attribute.name() == name) return &attribute;
    }
    return nullptr;
  }
  size_t getNumInputs() const override { return input_types_.size(); }
  const onnx::TypeProto* getInputType(size_t i) const override {
    return i < input_types_.size() && input_types_[i] ? &*input_types_[i] : nullptr;
  }
  const onnx::TensorProto* getInputData(size_t i) const override {
    return i < input_values_.size() && input_values_[i] ? &*input_values_[i] : nullptr;
  }
  const onnx::SparseTensorProto* getInputSparseData(size_t) const override { return nullptr; }
  const onnx::TensorShapeProto* getSymbolicInput(size_t i) const override {
    return i < symbolic_values_.size() && symbolic_values_[i] ? &*symbolic_values_[i] : nullptr;
  }
  size_t getNumOutputs() const override { return output_types_.size(); }
  onnx::TypeProto* getOutputType(size_t i) override {
    return i < output_types_.size() ? &output_types_[i] : nullptr;
  }
  onnx::GraphInferencer* getGraphAttributeInferencer(const std::string& name) override {
    const Attribute* attribute = node_.find_attribute(name);
    if (!attribute || !attribute->g || !inputs_.infer_subgraph) {
      fail("no subgraph attribute '{}' to infer", name);
    }
    auto& inferencer = inferencers_[name];
    if (!inferencer) inferencer = std::make_unique<SubgraphInferencer>(*attribute->g, inputs_);
    return inferencer.get();
  }

  std::vector<ValueType> outputs() const {
    std::vector<ValueType> result;
    for (const auto& type : output_types_) {
      result.push_back(type.value_case() == onnx::TypeProto::VALUE_NOT_SET
                           ? ValueType{}
                           : onnx_io::type_from_proto(type));
    }
    return result;
  }

 private:
  const Node& node_;
  const NodeInferenceInputs& inputs_;
  onnx::NodeProto proto_;
  std::vector<std::optional<onnx::TypeProto>> input_types_;
  std::vector<std::optional<onnx::TensorProto>> input_values_;
  std::vector<std::optional<onnx::TensorShapeProto>> symbolic_values_;
  std::vector<onnx::TypeProto> output_types_;
  std::map<std::string, std::unique_ptr<SubgraphInferencer>> inferencers_;
};

const onnx::OpSchema* libonnx_schema(std::string_view domain, std::string_view op_type,
                                     int64_t opset) {
  if (opset < 1) return nullptr;
  return onnx::OpSchemaRegistry::Schema(std::string(op_type), static_cast<int>(opset),
                                        std::string(canonical_domain(domain)));
}

// Where check_model puts the nodes libonnx cannot check.
constexpr const char* kUncheckedDomain = "onnxkit.unchecked";

// Moves the nodes of `graph` (and its subgraphs) whose domain imports an opset newer than
// libonnx knows (`newer`, by canonical domain) to kUncheckedDomain; returns how many.
size_t unchecked_nodes_aside(onnx::GraphProto& graph, const std::map<std::string, int64_t>& newer) {
  size_t count = 0;
  for (auto& node : *graph.mutable_node()) {
    if (newer.count(std::string(canonical_domain(node.domain())))) {
      node.set_domain(kUncheckedDomain);
      ++count;
    }
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) count += unchecked_nodes_aside(*attribute.mutable_g(), newer);
      for (auto& g : *attribute.mutable_graphs()) count += unchecked_nodes_aside(g, newer);
    }
  }
  return count;
}

}  // namespace

int64_t libonnx_since_version(std::string_view domain, std::string_view op_type, int64_t opset) {
  const onnx::OpSchema* schema = libonnx_schema(domain, op_type, opset);
  return schema ? schema->SinceVersion() : -1;
}

std::string libonnx_inference_hazard(const Node& node, int64_t opset,
                                     std::optional<int64_t> input0_rank) {
  const onnx::OpSchema* schema = libonnx_schema(node.domain(), node.op_type(), opset);
  if (!schema) return {};
  for (int i = 0; i < schema->min_input(); ++i) {
    if (!node.input(static_cast<size_t>(i))) {
      return fmt::format("required input {} is missing", i);
    }
  }
  if (const Attribute* axis = node.find_attribute("axis"); axis && axis->type == AttrType::kInt) {
    // Every op's axis lies in [-(rank + 1), rank] (Unsqueeze's and Concat's reach one past);
    // with the rank unknown, libonnx may still learn it, so only sizes no tensor has pass.
    constexpr int64_t kNoTensorHasThisRank = 1024;
    const int64_t bound = input0_rank ? *input0_rank + 1 : kNoTensorHasThisRank;
    if (axis->i < -bound || axis->i > bound) {
      return fmt::format("axis {} is out of range", axis->i);
    }
  }
  return {};
}

std::optional<std::vector<ValueType>> libonnx_infer_node(const Node& node, int64_t opset,
                                                         const NodeInferenceInputs& inputs) {
  const onnx::OpSchema* schema = libonnx_schema(node.domain(), node.op_type(), opset);
  if (!schema || !schema->has_type_and_shape_inference_function()) return std::nullopt;
  // Inference functions index the inputs and outputs their schema promises without checking
  // (a Relu without an output crashed propagating its type). Load checks the counts for the
  // opsets libonnx knows; a newer opset's node reaches here with the newest older schema.
  if (node.inputs().size() < static_cast<size_t>(schema->min_input()) ||
      node.outputs().size() < static_cast<size_t>(schema->min_output())) {
    return std::nullopt;
  }
  NodeInferenceContext context(node, inputs);
  try {
    schema->GetTypeAndShapeInferenceFunction()(context);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("ONNX shape inference: {}", e.what());
  }
  return context.outputs();
}

std::string_view libonnx_version() {
  return ONNX_NAMESPACE::LAST_RELEASE_VERSION;
}

int64_t max_known_opset(std::string_view domain) {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(std::string(canonical_domain(domain)));
  return it == map.end() ? -1 : it->second.second;
}

int64_t newest_defined_opset(std::string_view domain) {
  // onnx 1.23's opset versions (onnx.helper.VERSION_TABLE: ai.onnx 28, ai.onnx.ml 5).
  static const std::map<std::string, int64_t, std::less<>> kNewest = {
      {"", 28}, {"ai.onnx.ml", 5}, {"ai.onnx.preview.training", 1}, {"ai.onnx.preview", 1}};
  auto it = kNewest.find(canonical_domain(domain));
  return it == kNewest.end() ? -1 : it->second;
}

Status check_opsets_supported(const Model& model) {
  return capture([&] {
    for (const OpsetImport& opset : model.opset_imports) {
      const int64_t newest = newest_defined_opset(opset.domain);
      if (newest >= 0 && opset.version > newest) {
        fail(
            "model imports {} opset {}, newer than the {} this build knows (onnx 1.23); "
            "convert it to opset {} or older",
            domain_label(opset.domain), opset.version, newest, newest);
      }
    }
  });
}

namespace {

// True when `schema` takes an attribute `name` it does not declare: ops built with
// AllowUncheckedAttributes (LayerNormalization-17, ATen, custom ops' schemas) and names
// reserved for internal use ("__..."). OpSchema keeps the flag private; its Verify of a node
// holding only that attribute says whether the name is recognized.
bool takes_undeclared_attribute(const onnx::OpSchema& schema, const Node& node,
                                const std::string& name) {
  onnx::NodeProto proto;
  proto.set_op_type(node.op_type());
  proto.set_domain(node.domain());
  // Verify checks the wiring before the attributes: placeholder names pass it (the counts
  // were checked already), so that only the attribute can fail.
  for (size_t i = 0; i < node.inputs().size(); ++i) proto.add_input("x");
  for (size_t i = 0; i < node.outputs().size(); ++i) proto.add_output("y");
  onnx::AttributeProto* attribute = proto.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  try {
    schema.Verify(proto);
  } catch (const std::exception& e) {
    return std::string_view(e.what()).find("Unrecognized attribute") == std::string_view::npos;
  }
  return true;
}

}  // namespace

Status check_node_schemas(const Model& model) {
  return capture([&] {
    for_each_node_recursive(model.graph(), [&](const Node* node) {
      const int64_t opset = opset_version(model.opset_imports, node->domain());
      if (opset < 1 || opset > max_known_opset(node->domain())) return;
      const onnx::OpSchema* schema = libonnx_schema(node->domain(), node->op_type(), opset);
      if (schema == nullptr) return;
      const auto in_range = [](size_t count, int lo, int hi) {
        return count >= static_cast<size_t>(lo) && count <= static_cast<size_t>(hi);
      };
      const auto range = [](int lo, int hi) {
        if (hi == std::numeric_limits<int>::max()) return fmt::format("{} or more", lo);
        return lo == hi ? fmt::format("{}", lo) : fmt::format("{} to {}", lo, hi);
      };
      const size_t inputs = node->inputs().size(), outputs = node->outputs().size();
      const std::string label = node->name().empty()
                                    ? fmt::format("an unnamed {} node", node->op_type())
                                    : fmt::format("node '{}'", node->name());
      if (!in_range(inputs, schema->min_input(), schema->max_input())) {
        fail("{} ({}-{}) has {} inputs, but the op takes {}", label, node->op_type(),
             schema->since_version(), inputs, range(schema->min_input(), schema->max_input()));
      }
      if (!in_range(outputs, schema->min_output(), schema->max_output())) {
        fail("{} ({}-{}) has {} outputs, but the op gives {}", label, node->op_type(),
             schema->since_version(), outputs, range(schema->min_output(), schema->max_output()));
      }
      // Kernels read the attributes they know: one the op does not define, or one of another
      // type (a subgraph on a Relu, ints where an int is due), would be ignored by the run
      // while passes and subgraph walks still see it. ONNX's checker refuses both.
      for (const Attribute& attribute : node->attributes()) {
        if (!attribute.ref_attr_name.empty()) continue;
        auto declared = schema->attributes().find(attribute.name);
        if (declared == schema->attributes().end()) {
          if (takes_undeclared_attribute(*schema, *node, attribute.name)) continue;
          fail("{} ({}-{}) has an attribute '{}' the op does not define", label, node->op_type(),
               schema->since_version(), attribute.name);
        }
        const auto expected = static_cast<AttrType>(declared->second.type);
        if (attribute.type != expected) {
          fail("{} ({}-{}): attribute '{}' is {}, the op takes {}", label, node->op_type(),
               schema->since_version(), attribute.name, attr_type_name(attribute.type),
               attr_type_name(expected));
        }
      }
    });
  });
}

Status check_model(const Model& model, bool full_check, std::vector<std::string>* notes) {
  return capture([&] {
    check_opsets_supported(model).throw_if_error();
    onnx::ModelProto proto = to_proto_for_checks(model);
    // libonnx would check a node of a newer opset against an older schema of its op: such
    // nodes move to a domain of their own, which the checker and inference leave alone.
    std::map<std::string, int64_t> newer;
    for (const auto& opset : proto.opset_import()) {
      const int64_t known = max_known_opset(opset.domain());
      if (known >= 0 && opset.version() > known) {
        newer[std::string(canonical_domain(opset.domain()))] = opset.version();
      }
    }
    size_t skipped = 0;
    if (!newer.empty()) {
      skipped = unchecked_nodes_aside(*proto.mutable_graph(), newer);
      for (auto& function : *proto.mutable_functions()) {
        for (auto& node : *function.mutable_node()) {
          if (newer.count(std::string(canonical_domain(node.domain())))) {
            node.set_domain(kUncheckedDomain);
            ++skipped;
          }
        }
      }
      auto* opset = proto.add_opset_import();
      opset->set_domain(kUncheckedDomain);
      opset->set_version(1);
    }
    if (notes && skipped > 0) {
      notes->push_back(fmt::format(
          "ONNX checker (libonnx {}, opsets up to {}): {} node(s) of newer opsets not checked",
          ONNX_NAMESPACE::LAST_RELEASE_VERSION, max_known_opset(""), skipped));
    }
    try {
      onnx::checker::check_model(proto);
      if (full_check) {
        onnx::ShapeInferenceOptions options{true, 1, false};
        onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), options);
      }
    } catch (const std::exception& e) {
      fail("ONNX checker: {}", e.what());
    }
  });
}

Status infer_shapes(Model& model, const ShapeInferenceOptions& options) {
  return capture([&] {
    check_opsets_supported(model).throw_if_error();
    onnx::ModelProto proto = to_proto_for_checks(model, kOmitDataBytesForShapeInference);
    try {
      onnx::ShapeInferenceOptions onnx_options{options.strict, options.strict ? 1 : 0,
                                               options.data_propagation};
      onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), onnx_options);
    } catch (const std::exception& e) {
      fail("shape inference: {}", e.what());
    }
    apply_types(proto.graph(), model.graph());
  });
}

Status convert_opset_libonnx(Model& model, int64_t target) {
  return capture([&] {
    const int64_t current = model.opset_version("");
    if (current == target) return;
    const int64_t known = max_known_opset("");
    // -1: the model imports no ai.onnx opset at all.
    if (current < 1) {
      fail(
          "the model imports {} (ai.onnx opsets start at 1), so it has no opset to convert from",
          current < 0 ? std::string("no ai.onnx opset") : fmt::format("ai.onnx opset {}", current));
    }
    if (target < 1 || target > known || current > known) {
      fail("libonnx {} converts opsets 1 to {}, not {} to {}", libonnx_version(), known, current,
           target);
    }
    onnx::ModelProto proto;
    onnx_io::WriteContext write;
    onnx_io::model_to_proto(model, proto, write);
    onnx::ModelProto converted;
    try {
      converted = onnx::version_conversion::ConvertVersion(proto, static_cast<int>(target));
    } catch (const std::exception& e) {
      fail("converting from opset {} to {}: {}", current, target, e.what());
    }
    onnx_io::ReadContext read;
    Model result = onnx_io::model_from_proto(converted, read);
    result.source_path = model.source_path;
    model = std::move(result);
  });
}

}  // namespace onnxkit

#include "ir/graph_clone.h"

#include "core/status.h"

namespace onnxkit {
namespace {

std::string new_name(const CloneOptions& options, const std::string& name) {
  return options.rename ? options.rename(name) : name;
}

Value* mapped(const CloneOptions& options, Value* value) {
  if (!value) return nullptr;
  auto it = options.value_map->find(value);
  return it == options.value_map->end() ? value : it->second;
}

}  // namespace

Attribute clone_attribute(const Attribute& attribute, Graph* parent, const CloneOptions& options) {
  Attribute copy;
  copy.name = attribute.name;
  copy.type = attribute.type;
  copy.ref_attr_name = attribute.ref_attr_name;
  copy.doc_string = attribute.doc_string;
  copy.f = attribute.f;
  copy.i = attribute.i;
  copy.s = attribute.s;
  copy.t = attribute.t;
  copy.sparse_tensor = attribute.sparse_tensor;
  copy.tp = attribute.tp;
  copy.floats = attribute.floats;
  copy.ints = attribute.ints;
  copy.strings = attribute.strings;
  copy.tensors = attribute.tensors;
  copy.sparse_tensors = attribute.sparse_tensors;
  copy.type_protos = attribute.type_protos;
  if (attribute.g) copy.g = clone_graph(*attribute.g, parent, options);
  for (const auto& g : attribute.graphs) copy.graphs.push_back(clone_graph(*g, parent, options));
  return copy;
}

void clone_nodes_into(const Graph& source, Graph& target, Node* before,
                      const CloneOptions& options) {
  // Producers first: an input is mapped to its copy only once its producer was copied, and
  // files need not list nodes in order (float16 converters append the input Casts last).
  for (const Node* node : source.topological_order()) {
    std::vector<Value*> inputs;
    for (Value* input : node->inputs()) inputs.push_back(mapped(options, input));
    std::vector<std::string> outputs;
    for (const Value* output : node->outputs()) {
      outputs.push_back(output ? new_name(options, output->name()) : std::string());
    }
    std::string name = node->name().empty() ? std::string() : new_name(options, node->name());
    Node* copy = target.add_node(node->op_type(), inputs, outputs, node->domain(), name, before);
    copy->set_doc_string(node->doc_string());
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      if (!node->outputs()[i]) continue;
      copy->output(i)->set_type(node->outputs()[i]->type());
      (*options.value_map)[node->outputs()[i]] = copy->output(i);
    }
    for (const Attribute& attribute : node->attributes()) {
      if (!attribute.ref_attr_name.empty() && options.resolve_reference) {
        const Attribute* actual = options.resolve_reference(attribute.ref_attr_name);
        if (!actual) continue;  // the caller leaves it unset: the op's default applies
        Attribute resolved = clone_attribute(*actual, &target, options);
        resolved.name = attribute.name;
        copy->set_attribute(std::move(resolved));
        continue;
      }
      copy->set_attribute(clone_attribute(attribute, &target, options));
    }
  }
}

std::unique_ptr<Graph> clone_graph(const Graph& source, Graph* parent,
                                   const CloneOptions& options) {
  auto graph = std::make_unique<Graph>(parent);
  graph->set_name(source.name());
  graph->set_doc_string(source.doc_string());
  auto& map = *options.value_map;
  auto copy_value = [&](const Value* value) {
    auto it = map.find(value);
    if (it != map.end() && it->second->graph() == graph.get()) return it->second;
    Value* copy = graph->create_value(new_name(options, value->name()));
    copy->set_type(value->type());
    copy->set_doc_string(value->doc_string());
    map[value] = copy;
    return copy;
  };
  for (const Value* input : source.inputs()) graph->add_input(copy_value(input));
  for (const Value* value : source.initializers()) {
    graph->set_initializer(copy_value(value), value->initializer());
  }
  for (const auto& [value, sparse] : source.sparse_initializers()) {
    graph->add_sparse_initializer(copy_value(value), sparse);
  }
  clone_nodes_into(source, *graph, nullptr, options);
  for (Value* output : source.outputs()) graph->add_output(mapped(options, output));
  for (const Value* value : source.value_info()) {
    auto it = map.find(value);
    if (it != map.end() && it->second->graph() == graph.get()) graph->add_value_info(it->second);
  }
  graph->quantization_annotations() = source.quantization_annotations();
  return graph;
}

}  // namespace onnxkit

namespace onnxkit {

Model clone_model(const Model& model) {
  Model copy;
  copy.ir_version = model.ir_version;
  copy.opset_imports = model.opset_imports;
  copy.producer_name = model.producer_name;
  copy.producer_version = model.producer_version;
  copy.domain = model.domain;
  copy.model_version = model.model_version;
  copy.doc_string = model.doc_string;
  copy.metadata_props = model.metadata_props;
  copy.training_info = model.training_info;
  copy.source_path = model.source_path;
  for (const Function& function : model.functions) {
    Function f;
    f.name = function.name;
    f.domain = function.domain;
    f.doc_string = function.doc_string;
    f.attributes = function.attributes;
    f.opset_imports = function.opset_imports;
    std::unordered_map<const Value*, Value*> map;
    f.body = clone_graph(*function.body, nullptr, CloneOptions{&map, {}, {}});
    copy.functions.push_back(std::move(f));
  }
  std::unordered_map<const Value*, Value*> map;
  copy.replace_graph(clone_graph(model.graph(), nullptr, CloneOptions{&map, {}, {}}));
  return copy;
}

}  // namespace onnxkit

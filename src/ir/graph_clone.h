// Copying nodes, attributes and subgraphs (for function inlining and, later, passes that
// duplicate parts of a graph).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "ir/graph.h"

namespace onnxkit {

struct CloneOptions {
  // Maps source values to their copies; values not in the map are read as they are (outer
  // scope). Filled with every value the clone creates.
  std::unordered_map<const Value*, Value*>* value_map = nullptr;
  // New name for each value the clone creates (default: keep the name).
  std::function<std::string(const std::string&)> rename;
  // Resolves attributes that refer to a caller's attribute (ref_attr_name, inside function
  // bodies): returns the caller's attribute or nullptr to drop it. Unset: keep references.
  std::function<const Attribute*(const std::string& ref_name)> resolve_reference;
};

// A deep copy of `attribute` (subgraphs cloned under `parent`).
Attribute clone_attribute(const Attribute& attribute, Graph* parent, const CloneOptions& options);

// A deep copy of `source` as a subgraph of `parent`.
std::unique_ptr<Graph> clone_graph(const Graph& source, Graph* parent, const CloneOptions& options);

// Copies the nodes of `source` into `target` before `before` (end if nullptr), in
// topological order, creating their outputs in `target`. Inputs are looked up in
// options.value_map.
void clone_nodes_into(const Graph& source, Graph& target, Node* before,
                      const CloneOptions& options);

}  // namespace onnxkit

#include "ir/model.h"

namespace onnxkit {

// A deep copy of the model's structure; tensors share their bytes (copy-on-write).
Model clone_model(const Model& model);

}  // namespace onnxkit

// libonnx's checker and shape inference, wrapped for the rest of onnxkit.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "ir/model.h"

namespace onnxkit {

// The version of the libonnx this build links ("1.12.0").
std::string_view libonnx_version();

// The newest opset of `domain` this build's libonnx knows, or -1 for an unknown domain.
int64_t max_known_opset(std::string_view domain);

// The newest opset of `domain` that onnx 1.23 (the op set this build targets) defines, or -1
// for a domain it does not define.
int64_t newest_defined_opset(std::string_view domain);

// Fails with a clear message when the model imports an opset of a standard domain that is
// newer than onnx 1.23 defines (nothing about its ops could be more than a guess).
Status check_opsets_supported(const Model& model);

// Runs the ONNX checker (full_check adds strict shape inference). libonnx validates opsets up
// to max_known_opset: nodes of a domain whose imported opset is newer are left out of the
// check (the graph's structure is still checked), and `notes`, when given, says how many.
// Each node of the main graph and its subgraphs has as many inputs and outputs as its op's
// schema allows, and only attributes it defines, of their declared types (libonnx's schema,
// for domains and opsets it knows; nodes of newer opsets or other domains are left to their
// kernels). Kernels read the inputs and attributes they know, so an extra one would
// otherwise be ignored by the run but seen by the passes.
Status check_node_schemas(const Model& model);

Status check_model(const Model& model, bool full_check = false,
                   std::vector<std::string>* notes = nullptr);

struct ShapeInferenceOptions {
  bool strict = false;           // fail on inference errors instead of skipping the node
  bool data_propagation = true;  // fold shape computations (Shape -> Gather -> ...)
};

// libonnx's schema of `op_type` for a model importing `opset` of `domain`: its since_version,
// or -1 when libonnx has none. Past the newest opset libonnx knows this is the newest schema it
// has, which may be older than the op's real version at that opset.
int64_t libonnx_since_version(std::string_view domain, std::string_view op_type, int64_t opset);

// Why libonnx's inference must not be asked about `node` ("" when it may): libonnx's inference
// functions trust what its checker verifies and crash on some nodes that break it. The op's
// own rule judges each node first (passes/infer_types.cc), so this covers only the faults of
// every op, with or without a rule: a required input missing (Shape-15) and an axis out of
// range (LayerNormalization-17's loop over the dims up to it). Such a node gets onnxkit's own
// rule, which reports the fault. `input0_rank`: the rank of input 0 where known.
std::string libonnx_inference_hazard(const Node& node, int64_t opset,
                                     std::optional<int64_t> input0_rank);

// What libonnx's inference of one node reads besides the node itself.
struct NodeInferenceInputs {
  std::vector<const ValueType*> types;  // per input; nullptr: omitted or unknown
  std::vector<const Tensor*> values;    // per input; nullptr: not known before running
  // Per input: a shape vector's dims when only some are known (Reshape's target built from
  // Shape ops); nullptr otherwise. libonnx's data propagation reads these.
  std::vector<const SymbolicShape*> symbolic_values;
  // The output types of one of the node's subgraphs for the given input types.
  std::function<std::vector<ValueType>(const Graph&, std::span<const ValueType>)> infer_subgraph;
};

// libonnx's type and shape inference of `node` alone at `opset`: the output types (kNone
// where it says nothing), or nullopt when libonnx has no schema or no inference function for
// the op. Fails with libonnx's message when its inference rejects the node.
std::optional<std::vector<ValueType>> libonnx_infer_node(const Node& node, int64_t opset,
                                                         const NodeInferenceInputs& inputs);

// Runs ONNX's shape inference and records the inferred types on the model's values
// (main graph and subgraphs); new types are listed in each graph's value_info.
Status infer_shapes(Model& model, const ShapeInferenceOptions& options = {});

// Converts the model's ai.onnx opset to `target` with libonnx's version converter (other
// domains are kept); both opsets at most max_known_opset(""). Fails naming the op that has no
// adapter. passes/convert_opset.h goes further up.
Status convert_opset_libonnx(Model& model, int64_t target);

}  // namespace onnxkit

// The type inference engine: gives every value of a model its type (dtype and symbolic shape)
// from the op definitions' rules (ops/type_inference.h) and, where it knows the op's version,
// libonnx's inference.
//
// libonnx 1.12 knows ai.onnx up to opset 17. A node "qualifies" for libonnx when libonnx knows
// its op's version at the model's opset exactly: the model's opset is one libonnx knows, or
// the version onnxkit's registry resolves the opset to is one libonnx has (Relu-14 at opset
// 18; not ReduceMean at 18, whose version 18 libonnx lacks). libonnx's inference functions
// trust its checker and crash on some nodes it would refuse, so the op's own rule judges every
// node before libonnx sees it: a node whose rule throws is reported as that rule's error (a
// warning, or the failure in strict mode) and never given to libonnx. When every node
// qualifies and every rule accepts its node (a trial walk of the rules, undone after), libonnx
// infers the whole model as before (with its data propagation; unchanged for opset <= 17).
// Otherwise the engine walks each graph in topological order itself: a qualifying node keeps
// libonnx's inference of that node alone (libonnx_infer_node over the IR), any other node gets its
// registered rule, and a node with neither leaves its outputs as they were (counted as unknown).
//
// The walk backs each rule with the types known so far and the values known before running:
// initializers, Constant outputs, and small computations on them (shape vectors of Shape,
// Gather, Concat, ... evaluated by the ops' shape-vector rules, and other deterministic nodes
// of small constant inputs evaluated by their reference kernels). Types are recorded as
// libonnx's inference records them: merged into what the value had (a known dim is not
// forgotten), listed in the graph's value_info, dims that stay unknown named with fresh
// unk__N symbols; a graph input's or output's declared known dims are never replaced.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/model.h"
#include "ops/registry.h"

namespace onnxkit {

struct TypeInferenceOptions {
  // Keep libonnx's inference for the nodes it knows (see the top of this file); false: the
  // rules alone (what tests compare libonnx against).
  bool use_libonnx = true;
  // Fail on the first node whose inference fails, instead of a warning.
  bool strict = false;
};

struct TypeInferenceReport {
  size_t by_rule = 0;                 // nodes inferred by their op definition's rule
  size_t by_libonnx = 0;              // nodes inferred by libonnx (all of them in whole-model mode)
  size_t unknown = 0;                 // nodes with neither (or whose inference failed)
  std::vector<std::string> warnings;  // one per node whose inference failed
};

Result<TypeInferenceReport> infer_types(Model& model, const OpRegistry& registry,
                                        const TypeInferenceOptions& options = {});

}  // namespace onnxkit

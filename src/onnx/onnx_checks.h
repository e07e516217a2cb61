// libonnx's checker and shape inference, wrapped for the rest of onnxkit.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"
#include "ir/model.h"

namespace onnxkit {

// The newest opset of `domain` this build's libonnx knows, or -1 for an unknown domain.
int64_t max_known_opset(std::string_view domain);

// Fails with a clear message when the model imports an opset of a standard domain that is
// newer than libonnx knows (schemas, checker and shape inference would be guesses).
Status check_opsets_supported(const Model& model);

// Runs the ONNX checker (full_check adds strict shape inference).
Status check_model(const Model& model, bool full_check = false);

struct ShapeInferenceOptions {
  bool strict = false;           // fail on inference errors instead of skipping the node
  bool data_propagation = true;  // fold shape computations (Shape -> Gather -> ...)
};

// Runs ONNX's shape inference and records the inferred types on the model's values
// (main graph and subgraphs); new types are listed in each graph's value_info.
Status infer_shapes(Model& model, const ShapeInferenceOptions& options = {});

// Converts the model's ai.onnx opset to `target` with libonnx's version converter (other
// domains are kept). Fails naming the op that has no adapter.
Status convert_opset(Model& model, int64_t target);

}  // namespace onnxkit

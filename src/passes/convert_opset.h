// Converting a model's ai.onnx opset (simplify's --target-opset).
//
// libonnx 1.12's version converter knows opsets up to 17; above that onnxkit adapts the
// model one opset at a time, as ONNX's own version converter does (onnx 1.23's
// version_converter/convert.h): an op whose new version changed how it is written gets its
// adapter (17->18: Reduce* axes attribute -> input, Split gets num_outputs; 19->20: DFT's axis
// attribute -> input, GridSample's mode names; 20->21: GroupNormalization's per-group scale
// and bias -> per-channel), and every other op's new version reads the same node the same way
// (new types, new optional attributes or inputs with defaults that keep the old behaviour), so
// the step only changes the opset the model imports.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "ir/model.h"

namespace onnxkit {

// The newest ai.onnx opset convert_opset converts to.
inline constexpr int64_t kNewestTargetOpset = 28;

// Converts the model's ai.onnx opset to `target` (other domains are kept): downwards and up
// to 17 with libonnx's converter, upwards past 17 with onnxkit's adapters. A model above 17
// converts only upwards. Fails naming the op that has no adapter.
Status convert_opset(Model& model, int64_t target);

// The upward steps alone: from the model's opset (17 or newer) to `target`.
Status upgrade_opset(Model& model, int64_t target);

}  // namespace onnxkit

// onnxkit's public C++ API: everything an embedding program needs, in one include.
//
//   #include <onnxkit/onnxkit.h>
//   auto model = onnxkit::load_model("model.onnx");
//   if (!model) { std::cerr << model.error(); return 1; }
//   onnxkit::ModelStats stats = onnxkit::compute_model_stats(model.value());
//
// Link against the `onnxkit_lib` CMake target.
#pragma once

#include "core/status.h"       // Status, Result<T>, Error
#include "ir/model.h"          // Model, Graph, Node, Value, Tensor
#include "ir/model_stats.h"    // compute_model_stats
#include "ir/verifier.h"       // verify_model
#include "onnx/model_io.h"     // load_model, save_model
#include "onnx/onnx_checks.h"  // check_model, infer_shapes

// onnxkit's public C++ API: everything an embedding program needs, in one include.
//
//   #include <onnxkit/onnxkit.h>
//
//   auto model = onnxkit::load_model("model.onnx");           // Result<Model>
//   if (!model) { std::cerr << model.error() << "\n"; return 1; }
//   auto report = onnxkit::simplify(model.value(), {});        // optional
//   auto session = onnxkit::Session::create(std::move(model).value());
//   if (!session) { std::cerr << session.error() << "\n"; return 1; }
//   onnxkit::Tensor x = onnxkit::Tensor::from_vector(onnxkit::DType::kFloat, {1, 3}, data);
//   auto outputs = session.value()->run({{"input", x}});       // Result<NamedValues>
//   const onnxkit::Tensor& y = outputs.value()[0].second.tensor();
//   // y.dtype(), y.shape(), y.data<float>()
//
// Functions that can fail return Status or Result<T> (onnxkit/status.h) with a message
// that names what is at fault. Misuse throws onnxkit::Error instead: Result::value() on an
// error, RuntimeValue::tensor() on a sequence, a Tensor with a negative dim.
//
// Link against the `onnxkit::onnxkit` CMake target (find_package(onnxkit) once installed,
// or `onnxkit_lib` in-tree); its include path is this folder's parent.
#pragma once

#include "onnxkit/dtype.h"          // DType
#include "onnxkit/memory_stats.h"   // MemoryPoolStats, MemoryPlanStats
#include "onnxkit/model.h"          // Model
#include "onnxkit/model_io.h"       // load_model, save_model, LoadOptions, SaveOptions
#include "onnxkit/optimization.h"   // OptimizationLevel, KernelTier, PipelineResult
#include "onnxkit/quantize.h"       // quantize, QuantizeOptions, QuantizeReport
#include "onnxkit/runtime_value.h"  // RuntimeValue: a run's input or output
#include "onnxkit/session.h"        // Session, SessionOptions, RunOptions, NamedValues
#include "onnxkit/simplify.h"       // simplify, SimplifyOptions, SimplifyReport
#include "onnxkit/status.h"         // Status, Result<T>, Error
#include "onnxkit/tensor.h"         // Tensor, Shape
#include "onnxkit/value_info.h"     // ValueInfo (Session::inputs / outputs), Dim

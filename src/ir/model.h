// A whole model (onnxkit/model.h) with its graph IR and model-local functions.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "onnxkit/model.h"

namespace onnxkit {

// The version of `domain` that `opsets` import ("" and "ai.onnx" are the same), or -1.
int64_t opset_version(const std::vector<OpsetImport>& opsets, std::string_view domain);

// A model-local function (FunctionProto). Its body is a Graph whose inputs and
// outputs are the function's formal parameters (untyped).
struct Function {
  std::string name;
  std::string domain;
  std::string doc_string;
  std::vector<std::string> attributes;  // names of the attributes it accepts
  std::vector<OpsetImport> opset_imports;
  std::unique_ptr<Graph> body;
};

}  // namespace onnxkit

// A whole model (onnxkit/model.h) with its graph IR and model-local functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnxkit/model.h"

namespace onnxkit {

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

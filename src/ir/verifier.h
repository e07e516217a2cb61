// Structural checks of the IR: every input defined, links consistent, acyclic, names
// unique and not shadowing outer scopes. Run after loading and after passes.
#pragma once

#include "core/status.h"
#include "ir/model.h"

namespace onnxkit {

// Checks `graph` and its subgraphs; the error names the node and value at fault.
Status verify_graph(const Graph& graph);
// Checks the main graph and every function body.
Status verify_model(const Model& model);

}  // namespace onnxkit

#include "onnx/schema_functions.h"

#include <onnx/defs/schema.h>

#include "onnx/proto_convert.h"

namespace onnxkit {

std::optional<Function> schema_function_body(const Node& node, int64_t opset) {
  const auto* schema =
      onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), node.domain());
  if (!schema) return std::nullopt;
  onnx::FunctionProto body;
  if (schema->HasFunction()) {
    body = *schema->GetFunction();
  } else if (schema->HasContextDependentFunction()) {
    onnx_io::WriteContext write;
    onnx::NodeProto node_proto;
    onnx_io::node_to_proto(node, node_proto, write);
    std::vector<onnx::TypeProto> input_types;
    for (const Value* input : node.inputs()) {
      onnx::TypeProto type;
      if (input) onnx_io::type_to_proto(input->type(), type);
      input_types.push_back(std::move(type));
    }
    onnx::FunctionBodyBuildContextImpl context(node_proto, input_types);
    if (!schema->BuildContextDependentFunction(context, body)) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (body.name().empty()) body.set_name(node.op_type());
  onnx_io::ReadContext read;
  Function function = onnx_io::function_from_proto(body, read);
  // A schema's body imports the opset it was written for; default to the caller's.
  if (function.opset_imports.empty()) function.opset_imports.push_back({"", opset});
  return function;
}

}  // namespace onnxkit

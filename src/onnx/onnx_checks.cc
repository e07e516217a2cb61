#include "onnx/onnx_checks.h"

#include <onnx/checker.h>
#include <onnx/common/version.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include "onnx/proto_convert.h"

namespace onnxkit {
namespace {

// Tensors this big are never shape inputs; libonnx sees their type and dims only.
constexpr size_t kOmitDataBytes = 1 << 20;
// Shape inference reads data only of shape-like inputs (shapes, axes, pads, scales and
// sizes: a few dozen bytes), so it gets less: copying the weights into the message cost
// every round a copy of the model (EfficientNet-B0's 21 MB of mostly small weights were
// half of its session creation). The checker needs a value field on every tensor.
constexpr size_t kOmitDataBytesForShapeInference = 4096;

onnx::ModelProto to_proto_for_checks(const Model& model, size_t omit_data_bytes = kOmitDataBytes) {
  onnx::ModelProto proto;
  onnx_io::WriteContext context;
  context.omit_data_threshold = omit_data_bytes;
  onnx_io::model_to_proto(model, proto, context);
  return proto;
}

// Copies inferred types from `proto` back onto `graph`, walking both in step.
void apply_types(const onnx::GraphProto& proto, Graph& graph) {
  for (const auto& info : proto.value_info()) {
    Value* value = graph.find_value(info.name());
    if (!value) continue;
    ValueType type = onnx_io::type_from_proto(info.type());
    if (type.kind == ValueType::Kind::kNone) continue;
    value->set_type(std::move(type));
    if (!graph.is_input(value) && !graph.is_output(value)) graph.add_value_info(value);
  }
  for (const auto& output : proto.output()) {
    Value* value = graph.find_value(output.name());
    if (!value || !output.has_type()) continue;
    ValueType type = onnx_io::type_from_proto(output.type());
    if (type.kind != ValueType::Kind::kNone) value->set_type(std::move(type));
  }
  std::vector<Node*> nodes = graph.nodes();
  for (int n = 0; n < proto.node_size() && n < static_cast<int>(nodes.size()); ++n) {
    const auto& node_proto = proto.node(n);
    std::vector<Graph*> subgraphs = nodes[n]->subgraphs();
    size_t next = 0;
    for (const auto& attribute : node_proto.attribute()) {
      if (attribute.has_g() && next < subgraphs.size())
        apply_types(attribute.g(), *subgraphs[next++]);
      for (const auto& g : attribute.graphs()) {
        if (next < subgraphs.size()) apply_types(g, *subgraphs[next++]);
      }
    }
  }
}

}  // namespace

int64_t max_known_opset(std::string_view domain) {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(std::string(canonical_domain(domain)));
  return it == map.end() ? -1 : it->second.second;
}

Status check_opsets_supported(const Model& model) {
  return capture([&] {
    for (const OpsetImport& opset : model.opset_imports) {
      int64_t known = max_known_opset(opset.domain);
      if (known >= 0 && opset.version > known) {
        fail(
            "model imports {} opset {}, newer than the {} this build knows (libonnx {}); "
            "convert it to opset {} or older",
            domain_label(opset.domain), opset.version, known, ONNX_NAMESPACE::LAST_RELEASE_VERSION,
            known);
      }
    }
  });
}

Status check_model(const Model& model, bool full_check) {
  return capture([&] {
    check_opsets_supported(model).throw_if_error();
    onnx::ModelProto proto = to_proto_for_checks(model);
    try {
      onnx::checker::check_model(proto);
      if (full_check) {
        onnx::ShapeInferenceOptions options{true, 1, false};
        onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), options);
      }
    } catch (const std::exception& e) {
      fail("ONNX checker: {}", e.what());
    }
  });
}

Status infer_shapes(Model& model, const ShapeInferenceOptions& options) {
  return capture([&] {
    check_opsets_supported(model).throw_if_error();
    onnx::ModelProto proto = to_proto_for_checks(model, kOmitDataBytesForShapeInference);
    try {
      onnx::ShapeInferenceOptions onnx_options{options.strict, options.strict ? 1 : 0,
                                               options.data_propagation};
      onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), onnx_options);
    } catch (const std::exception& e) {
      fail("shape inference: {}", e.what());
    }
    apply_types(proto.graph(), model.graph());
  });
}

Status convert_opset(Model& model, int64_t target) {
  return capture([&] {
    const int64_t current = model.opset_version("");
    if (current == target) return;
    const int64_t known = max_known_opset("");
    if (target < 1 || target > known) {
      fail("target opset {} is outside what this build knows (1 to {})", target, known);
    }
    onnx::ModelProto proto;
    onnx_io::WriteContext write;
    onnx_io::model_to_proto(model, proto, write);
    onnx::ModelProto converted;
    try {
      converted = onnx::version_conversion::ConvertVersion(proto, static_cast<int>(target));
    } catch (const std::exception& e) {
      fail("converting from opset {} to {}: {}", current, target, e.what());
    }
    onnx_io::ReadContext read;
    Model result = onnx_io::model_from_proto(converted, read);
    result.source_path = model.source_path;
    model = std::move(result);
  });
}

}  // namespace onnxkit

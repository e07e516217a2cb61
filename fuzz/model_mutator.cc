// The structure-aware mutator of the model fuzzers (simplify_fuzzer, run_fuzzer): an input
// that parses as a ModelProto gets one change a model author could make — an attribute's
// value, a declared dim or dtype, a node input rewired to another value, an op type, an
// int64 initializer's values, a node dropped or duplicated — so most mutants get past the
// parser and into the simplifier or the executor. Other inputs get libFuzzer's byte
// mutations.
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using Rng = std::mt19937_64;

constexpr int64_t kInterestingInts[] = {0,
                                        1,
                                        -1,
                                        2,
                                        3,
                                        -2,
                                        4,
                                        7,
                                        16,
                                        255,
                                        256,
                                        65535,
                                        int64_t{1} << 31,
                                        (int64_t{1} << 31) - 1,
                                        int64_t{1} << 32,
                                        INT64_MAX,
                                        INT64_MIN,
                                        INT64_MAX / 2};
constexpr float kInterestingFloats[] = {0.f,
                                        1.f,
                                        -1.f,
                                        0.5f,
                                        2.f,
                                        1e-9f,
                                        1e30f,
                                        -1e30f,
                                        3.4e38f,
                                        std::numeric_limits<float>::infinity(),
                                        -std::numeric_limits<float>::infinity(),
                                        std::numeric_limits<float>::quiet_NaN()};
// Ops whose kernels take shapes, indices or axes from their inputs and attributes.
const char* const kOpTypes[] = {"Add",          "Mul",
                                "Relu",         "Reshape",
                                "Expand",       "Tile",
                                "Gather",       "GatherElements",
                                "Slice",        "Concat",
                                "Transpose",    "Squeeze",
                                "Unsqueeze",    "ConstantOfShape",
                                "Range",        "Pad",
                                "Resize",       "MatMul",
                                "Gemm",         "Conv",
                                "MaxPool",      "AveragePool",
                                "ReduceSum",    "ReduceMean",
                                "Softmax",      "Cast",
                                "Where",        "Split",
                                "TopK",         "ScatterND",
                                "GatherND",     "Shape",
                                "Size",         "Identity",
                                "Flatten",      "Einsum",
                                "CumSum",       "OneHot",
                                "NonZero",      "Trilu",
                                "DepthToSpace", "If",
                                "Loop"};
constexpr int kDtypes[] = {1, 2, 3, 5, 6, 7, 9, 10, 11, 16, 8, 12, 13, 17, 21};

template <typename T, size_t N>
T pick(const T (&values)[N], Rng& rng) {
  return values[rng() % N];
}

int64_t interesting_int(Rng& rng) {
  return rng() % 4 == 0 ? static_cast<int64_t>(rng() % 64) - 8 : pick(kInterestingInts, rng);
}

std::vector<onnx::GraphProto*> graphs_of(onnx::GraphProto* graph) {
  std::vector<onnx::GraphProto*> graphs{graph};
  for (auto& node : *graph->mutable_node()) {
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) {
        auto nested = graphs_of(attribute.mutable_g());
        graphs.insert(graphs.end(), nested.begin(), nested.end());
      }
    }
  }
  return graphs;
}

void mutate_attribute(onnx::AttributeProto& attribute, Rng& rng) {
  switch (attribute.type()) {
    case onnx::AttributeProto::INT:
      attribute.set_i(interesting_int(rng));
      break;
    case onnx::AttributeProto::FLOAT:
      attribute.set_f(pick(kInterestingFloats, rng));
      break;
    case onnx::AttributeProto::INTS:
      if (attribute.ints_size() > 0 && rng() % 3) {
        attribute.set_ints(static_cast<int>(rng() % attribute.ints_size()), interesting_int(rng));
      } else if (rng() % 2 && attribute.ints_size() > 0) {
        attribute.mutable_ints()->RemoveLast();
      } else {
        attribute.add_ints(interesting_int(rng));
      }
      break;
    case onnx::AttributeProto::STRING: {
      static const char* const kStrings[] = {
          "",       "constant",   "reflect", "edge",    "linear",      "nearest", "cubic",
          "NOTSET", "SAME_UPPER", "VALID",   "i,j->ij", "...ii->...i", "bogus"};
      attribute.set_s(pick(kStrings, rng));
      break;
    }
    case onnx::AttributeProto::TENSOR: {
      auto* t = attribute.mutable_t();
      if (rng() % 2) {
        t->set_data_type(pick(kDtypes, rng));
      } else if (t->dims_size() > 0) {
        t->set_dims(static_cast<int>(rng() % t->dims_size()), interesting_int(rng));
      } else {
        t->add_dims(interesting_int(rng));
      }
      break;
    }
    default:
      attribute.set_i(interesting_int(rng));
      break;
  }
}

// Gives `node` an attribute its op's schema (libonnx's, at the model's opset) defines and the
// node lacks, of the declared type, with an interesting value: a mutant load accepts.
void add_schema_attribute(const onnx::ModelProto& model, onnx::NodeProto& node, Rng& rng) {
  int64_t opset = -1;
  for (const auto& import : model.opset_import()) {
    const std::string& domain = import.domain() == "ai.onnx" ? std::string() : import.domain();
    if (domain == node.domain()) opset = import.version();
  }
  if (opset < 1 || opset > std::numeric_limits<int>::max()) return;
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), node.domain());
  if (schema == nullptr) return;
  std::vector<const onnx::OpSchema::Attribute*> missing;
  for (const auto& [name, declared] : schema->attributes()) {
    bool present = false;
    for (const auto& attribute : node.attribute()) present |= attribute.name() == name;
    const bool mutable_type = declared.type == onnx::AttributeProto::INT ||
                              declared.type == onnx::AttributeProto::INTS ||
                              declared.type == onnx::AttributeProto::FLOAT ||
                              declared.type == onnx::AttributeProto::STRING;
    if (!present && mutable_type) missing.push_back(&declared);
  }
  if (missing.empty()) return;
  const onnx::OpSchema::Attribute& declared = *missing[rng() % missing.size()];
  auto* attribute = node.add_attribute();
  attribute->set_name(declared.name);
  attribute->set_type(declared.type);
  if (declared.type == onnx::AttributeProto::INTS) attribute->add_ints(interesting_int(rng));
  mutate_attribute(*attribute, rng);
}

void mutate_value_info(onnx::ValueInfoProto& info, Rng& rng) {
  auto* tensor = info.mutable_type()->mutable_tensor_type();
  if (rng() % 3 == 0) {
    tensor->set_elem_type(pick(kDtypes, rng));
    return;
  }
  auto* shape = tensor->mutable_shape();
  if (shape->dim_size() == 0 || rng() % 4 == 0) {
    shape->add_dim()->set_dim_value(interesting_int(rng) & 0xff);
    return;
  }
  auto* dim = shape->mutable_dim(static_cast<int>(rng() % shape->dim_size()));
  if (rng() % 3 == 0) {
    dim->set_dim_param(rng() % 2 ? "n" : "m");
  } else {
    dim->set_dim_value(rng() % 2 ? interesting_int(rng) : static_cast<int64_t>(rng() % 5));
  }
}

void mutate_initializer(onnx::TensorProto& tensor, Rng& rng) {
  if (tensor.data_type() == onnx::TensorProto::INT64 && tensor.raw_data().size() >= 8) {
    std::string raw = tensor.raw_data();
    const int64_t value = interesting_int(rng);
    std::memcpy(raw.data() + 8 * (rng() % (raw.size() / 8)), &value, 8);
    tensor.set_raw_data(raw);
  } else if (tensor.int64_data_size() > 0) {
    tensor.set_int64_data(static_cast<int>(rng() % tensor.int64_data_size()), interesting_int(rng));
  } else if (tensor.dims_size() > 0 && rng() % 2) {
    tensor.set_dims(static_cast<int>(rng() % tensor.dims_size()), interesting_int(rng) & 0xf);
  } else {
    tensor.set_data_type(pick(kDtypes, rng));
  }
}

// Names a node input may be wired to: graph inputs, initializers, earlier node outputs.
std::vector<std::string> value_names(const onnx::GraphProto& graph) {
  std::vector<std::string> names{""};
  for (const auto& input : graph.input()) names.push_back(input.name());
  for (const auto& initializer : graph.initializer()) names.push_back(initializer.name());
  for (const auto& node : graph.node()) {
    for (const auto& output : node.output()) names.push_back(output);
  }
  return names;
}

void mutate_model(onnx::ModelProto& model, Rng& rng) {
  auto graphs = graphs_of(model.mutable_graph());
  onnx::GraphProto& graph = *graphs[rng() % graphs.size()];
  const int nodes = graph.node_size();
  switch (rng() % 9) {
    case 0:
    case 1: {  // an attribute's value
      if (nodes == 0) break;
      auto& node = *graph.mutable_node(static_cast<int>(rng() % nodes));
      if (node.attribute_size() > 0 && rng() % 4) {
        mutate_attribute(*node.mutable_attribute(static_cast<int>(rng() % node.attribute_size())),
                         rng);
      } else if (rng() % 8) {
        add_schema_attribute(model, node, rng);
      } else {
        // A name the op may not define (load refuses those): the refusal stays covered.
        static const char* const kNames[] = {"axis", "axes", "perm",  "keepdims", "to",
                                             "mode", "pads", "group", "transA",   "value"};
        auto* attribute = node.add_attribute();
        attribute->set_name(pick(kNames, rng));
        attribute->set_type(onnx::AttributeProto::INT);
        attribute->set_i(interesting_int(rng));
      }
      break;
    }
    case 2: {  // a declared dim or dtype
      const int total = graph.input_size() + graph.output_size() + graph.value_info_size();
      if (total == 0) break;
      int index = static_cast<int>(rng() % total);
      if (index < graph.input_size()) {
        mutate_value_info(*graph.mutable_input(index), rng);
      } else if ((index -= graph.input_size()) < graph.output_size()) {
        mutate_value_info(*graph.mutable_output(index), rng);
      } else {
        mutate_value_info(*graph.mutable_value_info(index - graph.output_size()), rng);
      }
      break;
    }
    case 3: {  // wiring
      if (nodes == 0) break;
      auto& node = *graph.mutable_node(static_cast<int>(rng() % nodes));
      auto names = value_names(graph);
      if (node.input_size() > 0 && rng() % 4) {
        node.set_input(static_cast<int>(rng() % node.input_size()), names[rng() % names.size()]);
      } else {
        node.add_input(names[rng() % names.size()]);
      }
      break;
    }
    case 4:  // an op type
      if (nodes > 0)
        graph.mutable_node(static_cast<int>(rng() % nodes))->set_op_type(pick(kOpTypes, rng));
      break;
    case 5:
    case 6:  // an initializer's values, dims or dtype
      if (graph.initializer_size() > 0) {
        mutate_initializer(
            *graph.mutable_initializer(static_cast<int>(rng() % graph.initializer_size())), rng);
      }
      break;
    case 7:  // a node dropped or duplicated
      if (nodes == 0) break;
      if (rng() % 2) {
        graph.mutable_node()->DeleteSubrange(static_cast<int>(rng() % nodes), 1);
      } else {
        *graph.add_node() = graph.node(static_cast<int>(rng() % nodes));
      }
      break;
    default: {  // the opset
      if (model.opset_import_size() > 0) {
        model.mutable_opset_import(0)->set_version(1 + static_cast<int64_t>(rng() % 23));
      }
      break;
    }
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto model;
  // One in eight mutants stays byte-level, so the parser's own edges keep being explored.
  if (rng() % 8 == 0 || !model.ParseFromArray(data, static_cast<int>(size)) || !model.has_graph()) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  const int changes = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < changes; ++i) mutate_model(model, rng);
  std::string bytes;
  if (!model.SerializeToString(&bytes) || bytes.size() > max_size) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

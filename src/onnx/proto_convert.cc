#include "onnx/proto_convert.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/low_precision.h"
#include "core/resource_limits.h"
#include "core/status.h"

namespace onnxkit::onnx_io {
namespace {

// ------------------------------------------------------------------ tensors

template <typename Field>
void check_count(const onnx::TensorProto& proto, const Field& field, int64_t expected,
                 int64_t per_element = 1) {
  if (static_cast<int64_t>(field.size()) != expected * per_element) {
    fail("tensor '{}': holds {} values, its shape {} needs {}", proto.name(), field.size(),
         shape_to_string(std::vector<int64_t>(proto.dims().begin(), proto.dims().end())),
         expected * per_element);
  }
}

// Copies typed-field values (ONNX's int32_data etc.) into the tensor's element type.
template <typename To, typename Field>
void fill_from_field(Tensor& tensor, const Field& field) {
  To* out = tensor.mutable_data<To>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<To>(field.Get(i));
}

void fill_from_typed_fields(const onnx::TensorProto& proto, Tensor& tensor) {
  const int64_t n = tensor.numel();
  switch (tensor.dtype()) {
    case DType::kFloat:
      check_count(proto, proto.float_data(), n);
      fill_from_field<float>(tensor, proto.float_data());
      break;
    case DType::kComplex64:
      check_count(proto, proto.float_data(), n, 2);
      fill_from_field<float>(tensor, proto.float_data());
      break;
    case DType::kDouble:
      check_count(proto, proto.double_data(), n);
      fill_from_field<double>(tensor, proto.double_data());
      break;
    case DType::kComplex128:
      check_count(proto, proto.double_data(), n, 2);
      fill_from_field<double>(tensor, proto.double_data());
      break;
    case DType::kInt64:
      check_count(proto, proto.int64_data(), n);
      fill_from_field<int64_t>(tensor, proto.int64_data());
      break;
    case DType::kUInt32:
      check_count(proto, proto.uint64_data(), n);
      fill_from_field<uint32_t>(tensor, proto.uint64_data());
      break;
    case DType::kUInt64:
      check_count(proto, proto.uint64_data(), n);
      fill_from_field<uint64_t>(tensor, proto.uint64_data());
      break;
    case DType::kInt32:
      check_count(proto, proto.int32_data(), n);
      fill_from_field<int32_t>(tensor, proto.int32_data());
      break;
    case DType::kInt16:
      check_count(proto, proto.int32_data(), n);
      fill_from_field<int16_t>(tensor, proto.int32_data());
      break;
    case DType::kInt8:
      check_count(proto, proto.int32_data(), n);
      fill_from_field<int8_t>(tensor, proto.int32_data());
      break;
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16:  // the 16 bits of each element, held in an int32
      check_count(proto, proto.int32_data(), n);
      fill_from_field<uint16_t>(tensor, proto.int32_data());
      break;
    case DType::kUInt8:
    case DType::kBool:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0:
      check_count(proto, proto.int32_data(), n);
      fill_from_field<uint8_t>(tensor, proto.int32_data());
      break;
    case DType::kFloat6E2M3:
    case DType::kFloat6E3M2: {  // one code per int32, its low 6 bits
      check_count(proto, proto.int32_data(), n);
      uint8_t* out = tensor.mutable_data<uint8_t>();
      for (int i = 0; i < proto.int32_data_size(); ++i) out[i] = proto.int32_data(i) & 0x3f;
      break;
    }
    case DType::kUInt4:
    case DType::kInt4:
    case DType::kFloat4E2M1:
    case DType::kUInt2:
    case DType::kInt2: {  // each int32 holds one byte of the packed stream
      const auto bytes = static_cast<int64_t>(serialized_size(tensor.dtype(), n));
      check_count(proto, proto.int32_data(), bytes);
      std::vector<uint8_t> packed(static_cast<size_t>(bytes));
      for (int i = 0; i < proto.int32_data_size(); ++i) {
        packed[static_cast<size_t>(i)] = static_cast<uint8_t>(proto.int32_data(i));
      }
      unpack_elements(tensor.dtype(), packed.data(), n, tensor.mutable_data<uint8_t>());
      break;
    }
    default:
      fail("tensor '{}': unsupported data type {}", proto.name(), dtype_name(tensor.dtype()));
  }
}

std::string external_entry(const onnx::TensorProto& proto, std::string_view key) {
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == key) return entry.value();
  }
  return {};
}

uint64_t parse_external_number(const onnx::TensorProto& proto, std::string_view key,
                               uint64_t fallback) {
  std::string text = external_entry(proto, key);
  if (text.empty()) return fallback;
  try {
    size_t used = 0;
    unsigned long long value = std::stoull(text, &used);
    if (used != text.size() || text[0] == '-') throw std::invalid_argument(text);
    return value;
  } catch (const std::exception&) {
    fail("tensor '{}': external data {} '{}' is not a number", proto.name(), key, text);
  }
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, ReadContext& context,
                         std::shared_ptr<Buffer> payload) {
  if (!dtype_is_known(proto.data_type())) {
    fail("tensor '{}': unknown data type {}", proto.name(), proto.data_type());
  }
  const DType dtype = static_cast<DType>(proto.data_type());
  Shape shape(proto.dims().begin(), proto.dims().end());
  for (int64_t dim : shape) {
    if (dim < 0)
      fail("tensor '{}': negative dimension in {}", proto.name(), shape_to_string(shape));
  }
  Tensor tensor;
  // Bytes in the file: the sub-byte types are packed there, one byte per element in memory.
  const bool packed = dtype_is_packed(dtype);
  int64_t numel = 0;
  size_t nbytes = 0;
  try {
    numel = shape_numel(shape);
    // Checked first: dims whose byte count wraps around must not pass for a small tensor.
    const size_t in_memory = checked_nbytes(dtype, numel, shape_to_string(shape));
    nbytes = dtype == DType::kString ? in_memory : serialized_size(dtype, numel);
  } catch (const Error& e) {
    fail("tensor '{}': {}", proto.name(), e.what());
  }
  auto unpacked = [&](const void* data) {
    Tensor out(dtype, shape);
    unpack_elements(dtype, static_cast<const uint8_t*>(data), numel, out.mutable_data<uint8_t>());
    return out;
  };

  if (dtype == DType::kString) {
    if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
      fail("tensor '{}': string tensors cannot use external data", proto.name());
    }
    check_count(proto, proto.string_data(), numel);
    tensor = Tensor::from_strings(shape, {proto.string_data().begin(), proto.string_data().end()});
  } else if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    if (!context.external_files) {
      fail("tensor '{}': has external data but the model was not loaded from a file", proto.name());
    }
    const std::string location = external_entry(proto, "location");
    const uint64_t offset = parse_external_number(proto, "offset", 0);
    const uint64_t length = parse_external_number(proto, "length", nbytes);
    if (length != nbytes) {
      fail("tensor '{}': external data length {} does not match its shape {} of {} ({} bytes)",
           proto.name(), length, shape_to_string(shape), dtype_name(dtype), nbytes);
    }
    auto view = context.external_files->view(proto.name(), location, offset, length);
    tensor = packed ? unpacked(view->data()) : Tensor::from_buffer(dtype, shape, std::move(view));
  } else if (payload || proto.has_raw_data()) {
    const size_t size = payload ? payload->size() : proto.raw_data().size();
    if (size != nbytes) {
      fail("tensor '{}': raw_data has {} bytes, its shape {} of {} needs {}", proto.name(), size,
           shape_to_string(shape), dtype_name(dtype), nbytes);
    }
    if (packed) {
      tensor = unpacked(payload ? static_cast<const void*>(payload->data())
                                : static_cast<const void*>(proto.raw_data().data()));
    } else if (payload) {
      tensor = Tensor::from_buffer(dtype, shape, std::move(payload));
    } else {
      tensor = Tensor(dtype, shape);
      if (nbytes) std::memcpy(tensor.mutable_raw_data(), proto.raw_data().data(), nbytes);
    }
  } else {
    // Refused before allocating: dims that ask for far more elements than the typed fields
    // hold (at most a few per stored value) must not allocate first and fail later.
    const int64_t stored = proto.float_data_size() + proto.double_data_size() +
                           proto.int32_data_size() + proto.int64_data_size() +
                           proto.uint64_data_size() + proto.string_data_size();
    if (numel > 8 * stored + 8) {
      fail("tensor '{}': holds {} values, its shape {} needs {}", proto.name(), stored,
           shape_to_string(shape), numel);
    }
    tensor = Tensor(dtype, shape);
    fill_from_typed_fields(proto, tensor);
  }
  tensor.set_name(proto.name());
  tensor.set_doc_string(proto.doc_string());
  return tensor;
}

namespace {

void add_external_ref(onnx::TensorProto& proto, const ExternalRef& ref) {
  proto.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* key, std::string value) {
    auto* entry = proto.add_external_data();
    entry->set_key(key);
    entry->set_value(std::move(value));
  };
  add("location", ref.location);
  add("offset", std::to_string(ref.offset));
  add("length", std::to_string(ref.length));
}

// The sub-byte types are packed into raw_data (or the external file) here, so the saver's
// streaming of payloads (for tensors left without data) never sees them. Data omitted for
// the checks (a threshold above 0) stays omitted.
void packed_tensor_to_proto(const Tensor& tensor, onnx::TensorProto& proto, WriteContext& context) {
  const size_t nbytes = serialized_size(tensor.dtype(), tensor.numel());
  if (context.omit_data_threshold > 0 && nbytes >= context.omit_data_threshold) return;
  Tensor packed(DType::kUInt8, {static_cast<int64_t>(nbytes)});
  pack_elements(tensor.dtype(), tensor.data<uint8_t>(), tensor.numel(),
                packed.mutable_data<uint8_t>());
  if (context.external && nbytes >= context.external_threshold) {
    add_external_ref(proto, context.external->append(packed));
    return;
  }
  proto.set_raw_data(packed.raw_data(), nbytes);
}

}  // namespace

void tensor_to_proto(const Tensor& tensor, onnx::TensorProto& proto, WriteContext& context) {
  proto.set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (int64_t dim : tensor.shape()) proto.add_dims(dim);
  if (!tensor.name().empty()) proto.set_name(tensor.name());
  if (!tensor.doc_string().empty()) proto.set_doc_string(tensor.doc_string());
  if (tensor.dtype() == DType::kString) {
    for (const std::string& value : tensor.strings()) proto.add_string_data(value);
    return;
  }
  if (dtype_is_packed(tensor.dtype())) {
    packed_tensor_to_proto(tensor, proto, context);
    return;
  }
  const size_t nbytes = tensor.nbytes();
  if (nbytes >= context.omit_data_threshold) return;
  if (context.external && nbytes >= context.external_threshold) {
    add_external_ref(proto, context.external->append(tensor));
    return;
  }
  proto.set_raw_data(tensor.raw_data(), nbytes);
}

// ------------------------------------------------------------------ types

namespace {

SymbolicShape shape_from_proto(const onnx::TensorShapeProto& proto) {
  std::vector<Dim> dims;
  dims.reserve(proto.dim_size());
  for (const auto& d : proto.dim()) {
    Dim dim;
    if (d.has_dim_value() && d.dim_value() == -1) {
      // Exporters (paddle2onnx, some tf2onnx versions) write -1 for a dim they do not know, as
      // ONNX Runtime reports one: read it as an unknown dim, which is written back without a
      // value.
    } else if (d.has_dim_value()) {
      if (d.dim_value() < 0) {
        fail("declared shape has the negative dim {} at index {}", d.dim_value(), dims.size());
      }
      dim.value = d.dim_value();
    } else if (d.has_dim_param() && d.dim_param() != "?") {
      // "?" is how exporters (paddle2onnx) and viewers write an unknown dim, not a symbol that
      // every "?" shares: rapidocr's classifier declares [-1,3,?,?] and runs at 48x192.
      dim.param = d.dim_param();
    }
    dim.denotation = d.denotation();
    dims.push_back(std::move(dim));
  }
  return dims;
}

void shape_to_proto(const SymbolicShape& shape, onnx::TensorShapeProto& proto) {
  for (const Dim& dim : *shape) {
    auto* d = proto.add_dim();
    if (dim.is_known()) {
      d->set_dim_value(dim.value);
    } else if (!dim.param.empty()) {
      d->set_dim_param(dim.param);
    }
    if (!dim.denotation.empty()) d->set_denotation(dim.denotation);
  }
}

}  // namespace

ValueType type_from_proto(const onnx::TypeProto& proto) {
  ValueType type;
  type.denotation = proto.denotation();
  switch (proto.value_case()) {
    case onnx::TypeProto::kTensorType:
      type.kind = ValueType::Kind::kTensor;
      type.elem_type = static_cast<DType>(proto.tensor_type().elem_type());
      if (proto.tensor_type().has_shape())
        type.shape = shape_from_proto(proto.tensor_type().shape());
      break;
    case onnx::TypeProto::kSparseTensorType:
      type.kind = ValueType::Kind::kSparseTensor;
      type.elem_type = static_cast<DType>(proto.sparse_tensor_type().elem_type());
      if (proto.sparse_tensor_type().has_shape()) {
        type.shape = shape_from_proto(proto.sparse_tensor_type().shape());
      }
      break;
    case onnx::TypeProto::kSequenceType:
      type.kind = ValueType::Kind::kSequence;
      if (proto.sequence_type().has_elem_type()) {
        type.element.push_back(type_from_proto(proto.sequence_type().elem_type()));
      }
      break;
    case onnx::TypeProto::kOptionalType:
      type.kind = ValueType::Kind::kOptional;
      if (proto.optional_type().has_elem_type()) {
        type.element.push_back(type_from_proto(proto.optional_type().elem_type()));
      }
      break;
    case onnx::TypeProto::kMapType:
      type.kind = ValueType::Kind::kMap;
      type.elem_type = static_cast<DType>(proto.map_type().key_type());
      if (proto.map_type().has_value_type()) {
        type.element.push_back(type_from_proto(proto.map_type().value_type()));
      }
      break;
    default:
      type.kind = ValueType::Kind::kNone;
  }
  return type;
}

void type_to_proto(const ValueType& type, onnx::TypeProto& proto) {
  if (!type.denotation.empty()) proto.set_denotation(type.denotation);
  switch (type.kind) {
    case ValueType::Kind::kNone:
      break;
    case ValueType::Kind::kTensor: {
      auto* tensor = proto.mutable_tensor_type();
      tensor->set_elem_type(static_cast<int32_t>(type.elem_type));
      if (type.shape) shape_to_proto(type.shape, *tensor->mutable_shape());
      break;
    }
    case ValueType::Kind::kSparseTensor: {
      auto* tensor = proto.mutable_sparse_tensor_type();
      tensor->set_elem_type(static_cast<int32_t>(type.elem_type));
      if (type.shape) shape_to_proto(type.shape, *tensor->mutable_shape());
      break;
    }
    case ValueType::Kind::kSequence: {
      auto* sequence = proto.mutable_sequence_type();
      if (type.has_element()) type_to_proto(type.element_type(), *sequence->mutable_elem_type());
      break;
    }
    case ValueType::Kind::kOptional: {
      auto* optional = proto.mutable_optional_type();
      if (type.has_element()) type_to_proto(type.element_type(), *optional->mutable_elem_type());
      break;
    }
    case ValueType::Kind::kMap: {
      auto* map = proto.mutable_map_type();
      map->set_key_type(static_cast<int32_t>(type.elem_type));
      if (type.has_element()) type_to_proto(type.element_type(), *map->mutable_value_type());
      break;
    }
  }
}

// ------------------------------------------------------------------ graphs

namespace {

void graph_from_proto(const onnx::GraphProto& proto, Graph& graph, ReadContext& context,
                      bool main_graph);
void graph_to_proto(const Graph& graph, onnx::GraphProto& proto, WriteContext& context);

// ONNX's rules for a sparse tensor: values [NNZ]; int64 indices either [NNZ] (offsets into the
// dense tensor) or [NNZ, rank] (coordinates), inside the dims and strictly increasing. Whoever
// densifies it later writes at these offsets, so they are checked here, once.
void check_sparse(const SparseTensor& sparse, const std::string& name) {
  const std::string shape = shape_to_string(sparse.dims);
  if (std::any_of(sparse.dims.begin(), sparse.dims.end(), [](int64_t d) { return d < 0; })) {
    fail("sparse tensor '{}': dims {} has a negative dim", name, shape);
  }
  int64_t numel = 1;
  for (int64_t dim : sparse.dims) {
    numel = checked_mul(numel, dim, fmt::format("sparse tensor '{}': dims {}", name, shape));
  }
  if (sparse.values.rank() != 1) {
    fail("sparse tensor '{}': values must be 1-D, got shape {}", name,
         shape_to_string(sparse.values.shape()));
  }
  const int64_t nnz = sparse.values.numel();
  const Tensor& indices = sparse.indices;
  const auto rank = static_cast<int64_t>(sparse.dims.size());
  const bool linear = indices.rank() == 1 && indices.shape()[0] == nnz;
  const bool coordinates =
      indices.rank() == 2 && indices.shape()[0] == nnz && indices.shape()[1] == rank;
  if (indices.dtype() != DType::kInt64 || !(linear || coordinates)) {
    fail("sparse tensor '{}': indices must be int64 of shape [{}] or [{}, {}], got {} {}", name,
         nnz, nnz, rank, dtype_name(indices.dtype()), shape_to_string(indices.shape()));
  }
  const int64_t* index = indices.data<int64_t>();
  int64_t previous = -1;
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t offset = 0;
    if (linear) {
      offset = index[k];
      if (offset < 0 || offset >= numel) {
        fail("sparse tensor '{}': index {} is {}, outside its {} elements (dims {})", name, k,
             offset, numel, shape);
      }
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t coordinate = index[k * rank + d];
        if (coordinate < 0 || coordinate >= sparse.dims[d]) {
          fail("sparse tensor '{}': index {} has coordinate {} on axis {}, outside dims {}", name,
               k, coordinate, d, shape);
        }
        offset = offset * sparse.dims[d] + coordinate;
      }
    }
    if (offset <= previous) {
      fail("sparse tensor '{}': indices must be strictly increasing, index {} is not", name, k);
    }
    previous = offset;
  }
}

SparseTensor sparse_from_proto(const onnx::SparseTensorProto& proto, ReadContext& context) {
  SparseTensor sparse;
  sparse.values = tensor_from_proto(proto.values(), context);
  sparse.indices = tensor_from_proto(proto.indices(), context);
  sparse.dims.assign(proto.dims().begin(), proto.dims().end());
  check_sparse(sparse, proto.values().name());
  return sparse;
}

void sparse_to_proto(const SparseTensor& sparse, onnx::SparseTensorProto& proto,
                     WriteContext& context) {
  tensor_to_proto(sparse.values, *proto.mutable_values(), context);
  tensor_to_proto(sparse.indices, *proto.mutable_indices(), context);
  for (int64_t dim : sparse.dims) proto.add_dims(dim);
}

// Older models leave AttributeProto.type unset; tell the type from the field in use.
AttrType infer_attribute_type(const onnx::AttributeProto& proto) {
  if (proto.has_f()) return AttrType::kFloat;
  if (proto.has_i()) return AttrType::kInt;
  if (proto.has_s()) return AttrType::kString;
  if (proto.has_t()) return AttrType::kTensor;
  if (proto.has_g()) return AttrType::kGraph;
  if (proto.has_sparse_tensor()) return AttrType::kSparseTensor;
  if (proto.has_tp()) return AttrType::kTypeProto;
  if (proto.floats_size()) return AttrType::kFloats;
  if (proto.ints_size()) return AttrType::kInts;
  if (proto.strings_size()) return AttrType::kStrings;
  if (proto.tensors_size()) return AttrType::kTensors;
  if (proto.graphs_size()) return AttrType::kGraphs;
  if (proto.sparse_tensors_size()) return AttrType::kSparseTensors;
  if (proto.type_protos_size()) return AttrType::kTypeProtos;
  return AttrType::kUndefined;
}

Attribute attribute_from_proto(const onnx::AttributeProto& proto, Graph& owner,
                               ReadContext& context) {
  Attribute attribute;
  attribute.name = proto.name();
  attribute.ref_attr_name = proto.ref_attr_name();
  attribute.doc_string = proto.doc_string();
  attribute.type = proto.has_type() && proto.type() != onnx::AttributeProto::UNDEFINED
                       ? static_cast<AttrType>(proto.type())
                       : infer_attribute_type(proto);
  attribute.f = proto.f();
  attribute.i = proto.i();
  attribute.s = proto.s();
  // The declared type must hold its value: an empty TENSOR, GRAPH, SPARSE_TENSOR or TYPE_PROTO
  // attribute would load and then save as a tensor of no type or a missing graph that nothing
  // reads back.
  if ((attribute.type == AttrType::kTensor && !proto.has_t()) ||
      (attribute.type == AttrType::kGraph && !proto.has_g()) ||
      (attribute.type == AttrType::kSparseTensor && !proto.has_sparse_tensor()) ||
      (attribute.type == AttrType::kTypeProto && !proto.has_tp())) {
    fail("attribute '{}' is of type {} but holds none", proto.name(),
         attr_type_name(attribute.type));
  }
  if (proto.has_t()) attribute.t = tensor_from_proto(proto.t(), context);
  if (proto.has_g()) {
    attribute.g = std::make_unique<Graph>(&owner);
    graph_from_proto(proto.g(), *attribute.g, context, false);
  }
  if (proto.has_sparse_tensor()) {
    attribute.sparse_tensor = sparse_from_proto(proto.sparse_tensor(), context);
  }
  if (proto.has_tp()) attribute.tp = type_from_proto(proto.tp());
  attribute.floats.assign(proto.floats().begin(), proto.floats().end());
  attribute.ints.assign(proto.ints().begin(), proto.ints().end());
  attribute.strings.assign(proto.strings().begin(), proto.strings().end());
  for (const auto& t : proto.tensors()) attribute.tensors.push_back(tensor_from_proto(t, context));
  for (const auto& g : proto.graphs()) {
    auto graph = std::make_unique<Graph>(&owner);
    graph_from_proto(g, *graph, context, false);
    attribute.graphs.push_back(std::move(graph));
  }
  for (const auto& s : proto.sparse_tensors()) {
    attribute.sparse_tensors.push_back(sparse_from_proto(s, context));
  }
  for (const auto& tp : proto.type_protos()) attribute.type_protos.push_back(type_from_proto(tp));
  return attribute;
}

void attribute_to_proto(const Attribute& attribute, onnx::AttributeProto& proto,
                        WriteContext& context) {
  proto.set_name(attribute.name);
  if (!attribute.ref_attr_name.empty()) proto.set_ref_attr_name(attribute.ref_attr_name);
  if (!attribute.doc_string.empty()) proto.set_doc_string(attribute.doc_string);
  proto.set_type(static_cast<onnx::AttributeProto::AttributeType>(attribute.type));
  // A reference to a caller's attribute carries no value of its own.
  if (!attribute.ref_attr_name.empty()) return;
  switch (attribute.type) {
    case AttrType::kFloat:
      proto.set_f(attribute.f);
      break;
    case AttrType::kInt:
      proto.set_i(attribute.i);
      break;
    case AttrType::kString:
      proto.set_s(attribute.s);
      break;
    case AttrType::kTensor:
      tensor_to_proto(attribute.t, *proto.mutable_t(), context);
      break;
    case AttrType::kGraph:
      graph_to_proto(*attribute.g, *proto.mutable_g(), context);
      break;
    case AttrType::kSparseTensor:
      sparse_to_proto(attribute.sparse_tensor, *proto.mutable_sparse_tensor(), context);
      break;
    case AttrType::kTypeProto:
      type_to_proto(attribute.tp, *proto.mutable_tp());
      break;
    case AttrType::kFloats:
      for (float f : attribute.floats) proto.add_floats(f);
      break;
    case AttrType::kInts:
      for (int64_t i : attribute.ints) proto.add_ints(i);
      break;
    case AttrType::kStrings:
      for (const auto& s : attribute.strings) proto.add_strings(s);
      break;
    case AttrType::kTensors:
      for (const auto& t : attribute.tensors) tensor_to_proto(t, *proto.add_tensors(), context);
      break;
    case AttrType::kGraphs:
      for (const auto& g : attribute.graphs) graph_to_proto(*g, *proto.add_graphs(), context);
      break;
    case AttrType::kSparseTensors:
      for (const auto& s : attribute.sparse_tensors) {
        sparse_to_proto(s, *proto.add_sparse_tensors(), context);
      }
      break;
    case AttrType::kTypeProtos:
      for (const auto& tp : attribute.type_protos) type_to_proto(tp, *proto.add_type_protos());
      break;
    case AttrType::kUndefined:
      break;
  }
}

std::string graph_label(const Graph& graph) {
  return graph.name().empty() ? std::string("graph") : "graph '" + graph.name() + "'";
}

Value* define_value(Graph& graph, const std::string& name) {
  if (Value* existing = graph.find_value(name)) return existing;
  return graph.create_value(name);
}

namespace {

// A value's declared type; errors name the value.
ValueType declared_type(const onnx::ValueInfoProto& info, const char* role) {
  try {
    return type_from_proto(info.type());
  } catch (const Error& e) {
    fail("{} '{}': {}", role, info.name(), e.what());
  }
}

// The first node holding a subgraph nested deeper than kMaxSubgraphDepth, or nullptr.
// Checked before converting anything, so the error names one node, not a chain of them.
const onnx::NodeProto* node_nesting_too_deep(const onnx::GraphProto& graph, int depth) {
  for (const auto& node : graph.node()) {
    for (const auto& attribute : node.attribute()) {
      auto visit = [&](const onnx::GraphProto& subgraph) -> const onnx::NodeProto* {
        if (depth + 1 > kMaxSubgraphDepth) return &node;
        return node_nesting_too_deep(subgraph, depth + 1);
      };
      if (attribute.has_g()) {
        if (const onnx::NodeProto* found = visit(attribute.g())) return found;
      }
      for (const auto& subgraph : attribute.graphs()) {
        if (const onnx::NodeProto* found = visit(subgraph)) return found;
      }
    }
  }
  return nullptr;
}

// An initializer that names a graph input is the input's default value: it must be of the type
// the input declares, or a run would see one type with the default and another when fed.
void check_input_default(const Value& input, const Tensor& tensor) {
  const ValueType& declared = input.type();
  if (!declared.is_tensor()) return;
  bool fits = declared.elem_type == DType::kUndefined || declared.elem_type == tensor.dtype();
  if (fits && declared.shape) {
    fits = declared.shape->size() == tensor.rank();
    for (size_t d = 0; fits && d < tensor.rank(); ++d) {
      const Dim& dim = (*declared.shape)[d];
      fits = !dim.is_known() || dim.value == tensor.shape()[d];
    }
  }
  if (!fits) {
    fail("input '{}' declares {} but its initializer holds {} {}", input.name(),
         value_type_to_string(declared), dtype_name(tensor.dtype()),
         shape_to_string(tensor.shape()));
  }
}

}  // namespace

void graph_from_proto(const onnx::GraphProto& proto, Graph& graph, ReadContext& context,
                      bool main_graph) {
  graph.set_name(proto.name());
  graph.set_doc_string(proto.doc_string());

  for (const auto& input : proto.input()) {
    if (graph.find_value(input.name())) {
      fail("{}: input '{}' is listed twice", graph_label(graph), input.name());
    }
    Value* value = graph.add_input(input.name(), declared_type(input, "input"));
    value->set_doc_string(input.doc_string());
  }
  for (int i = 0; i < proto.initializer_size(); ++i) {
    const auto& initializer = proto.initializer(i);
    if (initializer.name().empty()) fail("{}: initializer {} has no name", graph_label(graph), i);
    std::shared_ptr<Buffer> payload;
    if (main_graph) {
      auto it = context.initializer_payloads.find(static_cast<size_t>(i));
      if (it != context.initializer_payloads.end()) payload = it->second;
    }
    Value* value = define_value(graph, initializer.name());
    if (value->has_initializer()) {
      fail("{}: initializer '{}' is listed twice", graph_label(graph), initializer.name());
    }
    Tensor tensor = tensor_from_proto(initializer, context, std::move(payload));
    if (graph.is_input(value)) check_input_default(*value, tensor);
    graph.set_initializer(value, std::move(tensor));
  }
  for (const auto& sparse : proto.sparse_initializer()) {
    const std::string& name = sparse.values().name();
    if (name.empty()) fail("{}: a sparse initializer has no name", graph_label(graph));
    Value* value = define_value(graph, name);
    graph.add_sparse_initializer(value, sparse_from_proto(sparse, context));
  }
  // Create every node output first, so inputs resolve whatever order the file uses.
  for (const auto& node : proto.node()) {
    for (const auto& output : node.output()) {
      if (output.empty()) continue;
      if (graph.find_value(output)) {
        fail("{}: value '{}' is defined more than once (again as an output of node '{}' [{}])",
             graph_label(graph), output, node.name(), node.op_type());
      }
      graph.create_value(output);
    }
  }
  for (const auto& node_proto : proto.node()) {
    std::vector<std::string> output_names(node_proto.output().begin(), node_proto.output().end());
    Node* node =
        graph.add_node(node_proto.op_type(), {}, output_names,
                       std::string(canonical_domain(node_proto.domain())), node_proto.name());
    node->set_doc_string(node_proto.doc_string());
    for (int i = 0; i < node_proto.input_size(); ++i) {
      const std::string& name = node_proto.input(i);
      Value* value = nullptr;
      if (!name.empty()) {
        value = graph.lookup(name);
        if (!value) {
          fail("{}: {} input {} '{}' is not produced by any node, graph input or initializer",
               graph_label(graph), node->describe(), i, name);
        }
      }
      graph.add_node_input(node, value);
    }
    for (const auto& attribute : node_proto.attribute()) {
      try {
        node->mutable_attributes().push_back(attribute_from_proto(attribute, graph, context));
      } catch (const Error& e) {
        fail("{} attribute '{}': {}", node->describe(), attribute.name(), e.what());
      }
    }
  }
  for (const auto& output : proto.output()) {
    Value* value = graph.lookup(output.name());
    if (!value) {
      fail("{}: output '{}' is not produced by any node, graph input or initializer",
           graph_label(graph), output.name());
    }
    // An output's declared type belongs to the graph that declares it.
    if (value->graph() == &graph) {
      value->set_type(declared_type(output, "output"));
      if (!output.doc_string().empty()) value->set_doc_string(output.doc_string());
    }
    graph.add_output(value);
  }
  for (const auto& info : proto.value_info()) {
    Value* value = define_value(graph, info.name());
    value->set_type(declared_type(info, "value_info"));
    if (!info.doc_string().empty()) value->set_doc_string(info.doc_string());
    graph.add_value_info(value);
  }
  for (const auto& annotation : proto.quantization_annotation()) {
    QuantizationAnnotation entry;
    entry.tensor_name = annotation.tensor_name();
    for (const auto& kv : annotation.quant_parameter_tensor_names()) {
      entry.quant_parameter_tensor_names.emplace_back(kv.key(), kv.value());
    }
    graph.quantization_annotations().push_back(std::move(entry));
  }
}

}  // namespace

void node_to_proto(const Node& node, onnx::NodeProto& node_proto, WriteContext& context) {
  for (const Value* input : node.inputs()) node_proto.add_input(input ? input->name() : "");
  for (const Value* output : node.outputs()) node_proto.add_output(output ? output->name() : "");
  if (!node.name().empty()) node_proto.set_name(node.name());
  node_proto.set_op_type(node.op_type());
  if (!node.domain().empty()) node_proto.set_domain(node.domain());
  for (const Attribute& attribute : node.attributes()) {
    attribute_to_proto(attribute, *node_proto.add_attribute(), context);
  }
  if (!node.doc_string().empty()) node_proto.set_doc_string(node.doc_string());
}

namespace {

void value_info_to_proto(const Value& value, onnx::ValueInfoProto& proto) {
  proto.set_name(value.name());
  if (value.type().kind != ValueType::Kind::kNone || !value.type().denotation.empty()) {
    type_to_proto(value.type(), *proto.mutable_type());
  }
  if (!value.doc_string().empty()) proto.set_doc_string(value.doc_string());
}

void graph_to_proto(const Graph& graph, onnx::GraphProto& proto, WriteContext& context) {
  if (!graph.name().empty()) proto.set_name(graph.name());
  if (!graph.doc_string().empty()) proto.set_doc_string(graph.doc_string());
  for (const Node* node : graph.nodes()) node_to_proto(*node, *proto.add_node(), context);
  for (const Value* value : graph.initializers()) {
    auto* tensor = proto.add_initializer();
    const Tensor& data = value->initializer();
    const size_t saved_threshold = context.omit_data_threshold;
    const bool goes_external = context.external && data.nbytes() >= context.external_threshold;
    if (&graph == context.stream_payloads_of && !goes_external) context.omit_data_threshold = 0;
    tensor_to_proto(data, *tensor, context);
    context.omit_data_threshold = saved_threshold;
    tensor->set_name(value->name());
  }
  for (const auto& [value, sparse] : graph.sparse_initializers()) {
    auto* sparse_proto = proto.add_sparse_initializer();
    sparse_to_proto(sparse, *sparse_proto, context);
    sparse_proto->mutable_values()->set_name(value->name());
  }
  for (const Value* value : graph.inputs()) value_info_to_proto(*value, *proto.add_input());
  for (const Value* value : graph.outputs()) value_info_to_proto(*value, *proto.add_output());
  for (const Value* value : graph.value_info()) {
    value_info_to_proto(*value, *proto.add_value_info());
  }
  for (const auto& annotation : graph.quantization_annotations()) {
    auto* entry = proto.add_quantization_annotation();
    entry->set_tensor_name(annotation.tensor_name);
    for (const auto& [key, value] : annotation.quant_parameter_tensor_names) {
      auto* kv = entry->add_quant_parameter_tensor_names();
      kv->set_key(key);
      kv->set_value(value);
    }
  }
}

std::vector<OpsetImport> opsets_from_proto(
    const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& protos) {
  std::vector<OpsetImport> opsets;
  for (const auto& opset : protos) {
    std::string domain(canonical_domain(opset.domain()));
    // Two versions of one domain leave the ops' meaning to whichever a reader takes.
    for (const OpsetImport& earlier : opsets) {
      if (earlier.domain == domain) {
        fail("opset_import lists domain '{}' twice (versions {} and {})",
             domain.empty() ? "ai.onnx" : domain, earlier.version, opset.version());
      }
    }
    opsets.push_back({std::move(domain), opset.version()});
  }
  return opsets;
}

void opsets_to_proto(const std::vector<OpsetImport>& opsets,
                     google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& protos) {
  for (const OpsetImport& opset : opsets) {
    auto* entry = protos.Add();
    entry->set_domain(opset.domain);
    entry->set_version(opset.version);
  }
}

}  // namespace

Function function_from_proto(const onnx::FunctionProto& proto, ReadContext& context) {
  Function function;
  function.name = proto.name();
  function.domain = canonical_domain(proto.domain());
  function.doc_string = proto.doc_string();
  function.attributes.assign(proto.attribute().begin(), proto.attribute().end());
  function.opset_imports = opsets_from_proto(proto.opset_import());
  function.body = std::make_unique<Graph>();
  function.body->set_name(proto.name());
  // The body reuses the graph reader: formal inputs become untyped graph inputs.
  onnx::GraphProto body;
  for (const auto& input : proto.input()) body.add_input()->set_name(input);
  for (const auto& output : proto.output()) body.add_output()->set_name(output);
  *body.mutable_node() = proto.node();
  graph_from_proto(body, *function.body, context, false);
  function.body->set_name(proto.name());
  return function;
}

namespace {

void function_to_proto(const Function& function, onnx::FunctionProto& proto,
                       WriteContext& context) {
  proto.set_name(function.name);
  if (!function.domain.empty()) proto.set_domain(function.domain);
  if (!function.doc_string.empty()) proto.set_doc_string(function.doc_string);
  for (const Value* input : function.body->inputs()) proto.add_input(input->name());
  for (const Value* output : function.body->outputs()) proto.add_output(output->name());
  for (const auto& attribute : function.attributes) proto.add_attribute(attribute);
  opsets_to_proto(function.opset_imports, *proto.mutable_opset_import());
  onnx::GraphProto body;
  graph_to_proto(*function.body, body, context);
  *proto.mutable_node() = body.node();
}

}  // namespace

Model model_from_proto(const onnx::ModelProto& proto, ReadContext& context) {
  Model model;
  model.ir_version = proto.ir_version();
  model.opset_imports = opsets_from_proto(proto.opset_import());
  model.producer_name = proto.producer_name();
  model.producer_version = proto.producer_version();
  model.domain = proto.domain();
  model.model_version = proto.model_version();
  model.doc_string = proto.doc_string();
  for (const auto& kv : proto.metadata_props())
    model.metadata_props.emplace_back(kv.key(), kv.value());
  for (const auto& info : proto.training_info())
    model.training_info.push_back(info.SerializeAsString());
  for (const auto& function : proto.functions()) {
    try {
      model.functions.push_back(function_from_proto(function, context));
    } catch (const Error& e) {
      fail("function '{}': {}", function.name(), e.what());
    }
  }
  if (const onnx::NodeProto* node = node_nesting_too_deep(proto.graph(), 0)) {
    fail("node '{}' ({}) holds subgraphs nested more than {} levels deep", node->name(),
         node->op_type(), kMaxSubgraphDepth);
  }
  graph_from_proto(proto.graph(), model.graph(), context, true);
  return model;
}

void model_to_proto(const Model& model, onnx::ModelProto& proto, WriteContext& context) {
  proto.set_ir_version(model.ir_version);
  opsets_to_proto(model.opset_imports, *proto.mutable_opset_import());
  if (!model.producer_name.empty()) proto.set_producer_name(model.producer_name);
  if (!model.producer_version.empty()) proto.set_producer_version(model.producer_version);
  if (!model.domain.empty()) proto.set_domain(model.domain);
  if (model.model_version) proto.set_model_version(model.model_version);
  if (!model.doc_string.empty()) proto.set_doc_string(model.doc_string);
  graph_to_proto(model.graph(), *proto.mutable_graph(), context);
  for (const auto& [key, value] : model.metadata_props) {
    auto* kv = proto.add_metadata_props();
    kv->set_key(key);
    kv->set_value(value);
  }
  for (const auto& bytes : model.training_info) {
    if (!proto.add_training_info()->ParseFromString(bytes)) {
      fail("internal: a kept training_info entry no longer parses");
    }
  }
  for (const Function& function : model.functions) {
    function_to_proto(function, *proto.add_functions(), context);
  }
}

}  // namespace onnxkit::onnx_io

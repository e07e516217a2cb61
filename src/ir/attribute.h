// Node attributes: every ONNX attribute type, including subgraphs (owned) and type protos.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/value_type.h"
#include "onnxkit/tensor.h"

namespace onnxkit {

class Graph;

// Numbered as ONNX's AttributeProto.AttributeType.
enum class AttrType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kInt = 2,
  kString = 3,
  kTensor = 4,
  kGraph = 5,
  kFloats = 6,
  kInts = 7,
  kStrings = 8,
  kTensors = 9,
  kGraphs = 10,
  kSparseTensor = 11,
  kSparseTensors = 12,
  kTypeProto = 13,
  kTypeProtos = 14,
};

std::string_view attr_type_name(AttrType type);

// COO sparse tensor as ONNX stores it: values, indices (flat or [NNZ, rank]) and dims.
struct SparseTensor {
  Tensor values;
  Tensor indices;
  std::vector<int64_t> dims;
};

struct Attribute {
  Attribute();
  ~Attribute();
  Attribute(Attribute&&) noexcept;
  Attribute& operator=(Attribute&&) noexcept;

  std::string name;
  AttrType type = AttrType::kUndefined;
  std::string ref_attr_name;  // inside functions: refers to the caller's attribute
  std::string doc_string;

  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::unique_ptr<Graph> g;
  SparseTensor sparse_tensor;
  ValueType tp;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<SparseTensor> sparse_tensors;
  std::vector<ValueType> type_protos;
};

}  // namespace onnxkit

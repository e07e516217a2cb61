// Setting a node's attributes in tests, one line each (shared by the op, kernel and pass
// test helpers).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace onnxkit::testing {

inline void set_int(Node* node, const std::string& name, int64_t value) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kInt;
  a.i = value;
  node->set_attribute(std::move(a));
}

inline void set_float(Node* node, const std::string& name, float value) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kFloat;
  a.f = value;
  node->set_attribute(std::move(a));
}

inline void set_ints(Node* node, const std::string& name, std::vector<int64_t> values) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kInts;
  a.ints = std::move(values);
  node->set_attribute(std::move(a));
}

inline void set_floats(Node* node, const std::string& name, std::vector<float> values) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kFloats;
  a.floats = std::move(values);
  node->set_attribute(std::move(a));
}

inline void set_string(Node* node, const std::string& name, std::string value) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kString;
  a.s = std::move(value);
  node->set_attribute(std::move(a));
}

}  // namespace onnxkit::testing

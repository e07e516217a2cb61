// Setting a node's attributes in tests, one line each (shared by the op, kernel and pass
// test helpers): setters on a Node, and Attr, a copyable description for attribute lists.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace onnxkit::testing {

// Sets a node's attributes: what the op runners and graph builders take.
using SetAttributes = std::function<void(Node*)>;

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

inline void set_strings(Node* node, const std::string& name, std::vector<std::string> values) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kStrings;
  a.strings = std::move(values);
  node->set_attribute(std::move(a));
}

// A copyable attribute description (Attribute itself is move-only).
struct Attr {
  std::string name;
  AttrType type = AttrType::kUndefined;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;

  static Attr Int(std::string name, int64_t value) {
    return {std::move(name), AttrType::kInt, value, 0, {}, {}};
  }
  static Attr Float(std::string name, float value) {
    return {std::move(name), AttrType::kFloat, 0, value, {}, {}};
  }
  static Attr Ints(std::string name, std::vector<int64_t> values) {
    return {std::move(name), AttrType::kInts, 0, 0, {}, std::move(values)};
  }
  static Attr String(std::string name, std::string value) {
    return {std::move(name), AttrType::kString, 0, 0, std::move(value), {}};
  }
  Attribute make() const {
    Attribute a;
    a.name = name;
    a.type = type;
    a.i = i;
    a.f = f;
    a.s = s;
    a.ints = ints;
    return a;
  }
};

// A node's attributes for the graph builders: a list of Attr or a function that sets them.
class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<Attr> list) : list_(list) {}
  Attributes(std::vector<Attr> list) : list_(std::move(list)) {}
  template <typename F, typename = std::enable_if_t<std::is_invocable_v<const F&, Node*>>>
  Attributes(F set) : set_(std::move(set)) {}

  void apply(Node* node) const {
    for (const Attr& a : list_) node->set_attribute(a.make());
    if (set_) set_(node);
  }

 private:
  std::vector<Attr> list_;
  SetAttributes set_;
};

}  // namespace onnxkit::testing

#include "ops/kernel.h"

namespace onnxkit {

const Tensor& KernelContext::input(size_t i) const {
  if (i >= inputs_.size() || !inputs_[i] || inputs_[i]->is_none()) {
    fail("input {} is required but missing", i);
  }
  if (!inputs_[i]->is_tensor())
    fail("input {} must be a tensor, got {}", i, inputs_[i]->describe());
  return inputs_[i]->tensor();
}

const RuntimeValue& KernelContext::input_value(size_t i) const {
  static const RuntimeValue kNone;
  return i < inputs_.size() && inputs_[i] ? *inputs_[i] : kNone;
}

Tensor& KernelContext::allocate_output(size_t i, DType dtype, Shape shape) {
  if (!wants_output(i)) {
    scratch_ = Tensor(dtype, std::move(shape));
    return scratch_;
  }
  *outputs_[i] = RuntimeValue(Tensor(dtype, std::move(shape)));
  return outputs_[i]->mutable_tensor();
}

void KernelContext::set_output(size_t i, Tensor tensor) {
  if (wants_output(i)) *outputs_[i] = RuntimeValue(std::move(tensor));
}

void KernelContext::set_output_value(size_t i, RuntimeValue value) {
  if (wants_output(i)) *outputs_[i] = std::move(value);
}

SubgraphRunner& KernelContext::subgraph_runner() const {
  if (!runner_) fail("internal: no subgraph runner");
  return *runner_;
}

const Frame& KernelContext::frame() const {
  if (!frame_) fail("internal: no frame");
  return *frame_;
}

const Attribute* KernelCreateContext::typed(std::string_view name, AttrType type) const {
  const Attribute* attribute = node_.find_attribute(name);
  if (attribute && attribute->type != type) {
    fail("attribute '{}' must be {}, is {}", name, attr_type_name(type),
         attr_type_name(attribute->type));
  }
  return attribute;
}

int64_t KernelCreateContext::attr_int(std::string_view name, int64_t fallback) const {
  const Attribute* a = typed(name, AttrType::kInt);
  return a ? a->i : fallback;
}

int64_t KernelCreateContext::attr_int(std::string_view name) const {
  const Attribute* a = typed(name, AttrType::kInt);
  if (!a) fail("required attribute '{}' is missing", name);
  return a->i;
}

float KernelCreateContext::attr_float(std::string_view name, float fallback) const {
  const Attribute* a = typed(name, AttrType::kFloat);
  return a ? a->f : fallback;
}

float KernelCreateContext::attr_float(std::string_view name) const {
  const Attribute* a = typed(name, AttrType::kFloat);
  if (!a) fail("required attribute '{}' is missing", name);
  return a->f;
}

std::string KernelCreateContext::attr_string(std::string_view name, std::string fallback) const {
  const Attribute* a = typed(name, AttrType::kString);
  return a ? a->s : fallback;
}

std::string KernelCreateContext::attr_string(std::string_view name) const {
  const Attribute* a = typed(name, AttrType::kString);
  if (!a) fail("required attribute '{}' is missing", name);
  return a->s;
}

std::vector<int64_t> KernelCreateContext::attr_ints(std::string_view name,
                                                    std::vector<int64_t> fallback) const {
  const Attribute* a = typed(name, AttrType::kInts);
  return a ? a->ints : fallback;
}

std::optional<std::vector<int64_t>> KernelCreateContext::attr_ints_opt(
    std::string_view name) const {
  const Attribute* a = typed(name, AttrType::kInts);
  if (!a) return std::nullopt;
  return a->ints;
}

std::vector<float> KernelCreateContext::attr_floats(std::string_view name,
                                                    std::vector<float> fallback) const {
  const Attribute* a = typed(name, AttrType::kFloats);
  return a ? a->floats : fallback;
}

std::vector<std::string> KernelCreateContext::attr_strings(
    std::string_view name, std::vector<std::string> fallback) const {
  const Attribute* a = typed(name, AttrType::kStrings);
  return a ? a->strings : fallback;
}

const Tensor* KernelCreateContext::attr_tensor(std::string_view name) const {
  const Attribute* a = typed(name, AttrType::kTensor);
  return a ? &a->t : nullptr;
}

const Graph* KernelCreateContext::attr_graph(std::string_view name) const {
  const Attribute* a = typed(name, AttrType::kGraph);
  return a ? a->g.get() : nullptr;
}

std::shared_ptr<const CompiledGraph> KernelCreateContext::compile_subgraph(
    const Graph& graph) const {
  if (!compiler_) fail("internal: subgraphs cannot be compiled here");
  return compiler_(graph);
}

}  // namespace onnxkit

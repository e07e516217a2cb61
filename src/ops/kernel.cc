#include "ops/kernel.h"

#include <cstring>

#include "core/memory_pool.h"
#include "core/resource_limits.h"
#include "ops/registry.h"

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

Tensor& KernelContext::allocate(size_t i, DType dtype, Shape shape, bool zero) {
  RuntimeValue* slot = wants_output(i) ? outputs_[i] : nullptr;
  // A bound output (IO binding) arrives holding the caller's memory: write straight there.
  if (slot && slot->is_tensor()) {
    Tensor& bound = slot->mutable_tensor();
    const auto& buffer = bound.buffer();
    if (buffer && buffer->is_external() && buffer->writable() && bound.dtype() == dtype &&
        bound.shape() == shape) {
      if (zero && bound.nbytes()) std::memset(bound.mutable_raw_data(), 0, bound.nbytes());
      return bound;
    }
  }
  Tensor tensor;
  BlockAllocator* pool = runner_ ? runner_->allocator() : nullptr;
  if (dtype == DType::kString || (zero && !pool)) {
    tensor = Tensor(dtype, std::move(shape));
  } else {
    const size_t element = dtype_size(dtype);
    if (element == 0) fail("cannot create an output of type {}", dtype_name(dtype));
    const size_t bytes = checked_nbytes(dtype, shape_numel(shape), shape_to_string(shape));
    auto buffer = pool ? pool->allocate(bytes, zero) : Buffer::allocate_uninitialized(bytes);
    tensor = Tensor::from_buffer(dtype, std::move(shape), std::move(buffer));
  }
  if (!slot) {
    scratch_ = std::move(tensor);
    return scratch_;
  }
  *slot = RuntimeValue(std::move(tensor));
  return slot->mutable_tensor();
}

Tensor& KernelContext::allocate_output(size_t i, DType dtype, Shape shape) {
  return allocate(i, dtype, std::move(shape), true);
}

Tensor& KernelContext::allocate_output_uninitialized(size_t i, DType dtype, Shape shape) {
  return allocate(i, dtype, std::move(shape), false);
}

void* KernelContext::reuse_input_for_output(size_t input, size_t output, DType dtype,
                                            const Shape& shape) {
  if (input >= 64 || !(donatable_inputs_ >> input & 1) || !wants_output(output)) return nullptr;
  const RuntimeValue* value = inputs_[input];
  if (!value || !value->is_tensor()) return nullptr;
  const Tensor& tensor = value->tensor();
  const std::shared_ptr<Buffer>& buffer = tensor.buffer();
  // The slot's tensor must be the only holder: not a constant, a caller's input, a view of
  // another live value, or a bound output.
  if (!buffer || buffer.use_count() != 1 || !buffer->writable() || buffer->is_external() ||
      dtype == DType::kString || tensor.dtype() == DType::kString) {
    return nullptr;
  }
  const size_t bytes = checked_nbytes(dtype, shape_numel(shape), shape_to_string(shape));
  if (bytes != tensor.nbytes() || bytes == 0) return nullptr;
  // A bound output wants the caller's memory instead.
  RuntimeValue* slot = outputs_[output];
  if (slot->is_tensor() && slot->tensor().buffer() && slot->tensor().buffer()->is_external()) {
    return nullptr;
  }
  *slot = RuntimeValue(Tensor::from_buffer(dtype, shape, buffer));
  return buffer->mutable_data();
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

const Attribute& KernelCreateContext::required(std::string_view name, AttrType type) const {
  const Attribute* attribute = typed(name, type);
  if (!attribute) fail("required attribute '{}' is missing", name);
  return *attribute;
}

int64_t KernelCreateContext::attr_int(std::string_view name, int64_t fallback) const {
  const Attribute* a = typed(name, AttrType::kInt);
  return a ? a->i : fallback;
}

int64_t KernelCreateContext::attr_int(std::string_view name) const {
  return required(name, AttrType::kInt).i;
}

float KernelCreateContext::attr_float(std::string_view name, float fallback) const {
  const Attribute* a = typed(name, AttrType::kFloat);
  return a ? a->f : fallback;
}

float KernelCreateContext::attr_float(std::string_view name) const {
  return required(name, AttrType::kFloat).f;
}

std::string KernelCreateContext::attr_string(std::string_view name, std::string fallback) const {
  const Attribute* a = typed(name, AttrType::kString);
  return a ? a->s : fallback;
}

std::string KernelCreateContext::attr_string(std::string_view name) const {
  return required(name, AttrType::kString).s;
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

std::unique_ptr<OpKernel> KernelCreateContext::reference_kernel() const {
  return registry_.create_reference_kernel(*this);
}

}  // namespace onnxkit

// Op family: sequences and optionals (SequenceEmpty ... SequenceMap, Optional,
// OptionalHasElement, OptionalGetElement).
#include <algorithm>

#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

const std::vector<Tensor>& sequence_of(const KernelContext& context, size_t index) {
  const RuntimeValue& value = context.input_value(index);
  if (!value.is_sequence())
    context.fail("input {} must be a sequence, got {}", index, value.describe());
  return value.sequence_items();
}

DType sequence_dtype(const RuntimeValue& value) {
  const auto& items = value.sequence_items();
  return items.empty() ? value.sequence_elem_type() : items[0].dtype();
}

// A position input (scalar int32/int64), checked against [-size, size + extra).
int64_t read_position(const KernelContext& context, size_t index, int64_t size, int64_t extra) {
  const Tensor& tensor = context.input(index);
  if (tensor.numel() != 1) {
    context.fail("position: expected a single value, got shape {}",
                 shape_to_string(tensor.shape()));
  }
  // Read exactly: INT64_MAX through a double would round past int64.
  const int64_t position = read_int64s(tensor, "position")[0];
  if (position < -size || position >= size + extra) {
    context.fail("position {} is out of range for a sequence of {} items", position, size);
  }
  return position < 0 ? position + size : position;
}

class SequenceEmptyKernel : public OpKernel {
 public:
  explicit SequenceEmptyKernel(const KernelCreateContext& context)
      : dtype_(static_cast<DType>(context.attr_int("dtype", static_cast<int64_t>(DType::kFloat)))) {
  }
  void compute(KernelContext& context) const override {
    context.set_output_value(0, RuntimeValue::sequence({}, dtype_));
  }

 private:
  DType dtype_;
};

class SequenceConstructKernel : public OpKernel {
 public:
  explicit SequenceConstructKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    std::vector<Tensor> items;
    for (size_t i = 0; i < context.num_inputs(); ++i) {
      items.push_back(context.input(i));
      if (items.back().dtype() != items[0].dtype()) {
        context.fail("all inputs must share one type: {} and {}", dtype_name(items[0].dtype()),
                     dtype_name(items.back().dtype()));
      }
    }
    DType dtype = items.empty() ? DType::kUndefined : items[0].dtype();
    context.set_output_value(0, RuntimeValue::sequence(std::move(items), dtype));
  }
};

class SequenceInsertKernel : public OpKernel {
 public:
  explicit SequenceInsertKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    std::vector<Tensor> items = sequence_of(context, 0);
    const Tensor& tensor = context.input(1);
    DType dtype = sequence_dtype(context.input_value(0));
    if (dtype != DType::kUndefined && tensor.dtype() != dtype) {
      context.fail("cannot insert a {} tensor into a sequence of {}", dtype_name(tensor.dtype()),
                   dtype_name(dtype));
    }
    const int64_t size = static_cast<int64_t>(items.size());
    int64_t position = context.has_input(2) ? read_position(context, 2, size, 1) : size;
    items.insert(items.begin() + position, tensor);
    context.set_output_value(0, RuntimeValue::sequence(std::move(items), tensor.dtype()));
  }
};

class SequenceEraseKernel : public OpKernel {
 public:
  explicit SequenceEraseKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    std::vector<Tensor> items = sequence_of(context, 0);
    const int64_t size = static_cast<int64_t>(items.size());
    if (size == 0) context.fail("cannot erase from an empty sequence");
    int64_t position = context.has_input(1) ? read_position(context, 1, size, 0) : size - 1;
    items.erase(items.begin() + position);
    context.set_output_value(
        0, RuntimeValue::sequence(std::move(items), sequence_dtype(context.input_value(0))));
  }
};

class SequenceAtKernel : public OpKernel {
 public:
  explicit SequenceAtKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    const auto& items = sequence_of(context, 0);
    int64_t position = read_position(context, 1, static_cast<int64_t>(items.size()), 0);
    context.set_output(0, items[static_cast<size_t>(position)]);
  }
};

class SequenceLengthKernel : public OpKernel {
 public:
  explicit SequenceLengthKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    int64_t size = static_cast<int64_t>(sequence_of(context, 0).size());
    context.set_output(0, Tensor::from_vector<int64_t>(DType::kInt64, {}, {size}));
  }
};

class SplitToSequenceKernel : public OpKernel {
 public:
  explicit SplitToSequenceKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", 0)), keepdims_(context.attr_int("keepdims", 1) != 0) {}
  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const int64_t axis = normalize_axis(axis_, static_cast<int64_t>(input.rank()), "axis");
    const int64_t length = input.shape()[static_cast<size_t>(axis)];
    std::vector<Tensor> items;
    if (!context.has_input(1)) {
      for (int64_t i = 0; i < length; ++i) {
        items.push_back(keepdims_ ? slice_along_axis(input, axis, i, 1)
                                  : select_along_axis(input, axis, i));
      }
    } else {
      const Tensor& split = context.input(1);
      std::vector<int64_t> sizes = read_int64s(split, "split");
      if (split.rank() == 0) {
        const int64_t chunk = sizes.at(0);
        if (chunk <= 0) context.fail("split size must be positive, got {}", chunk);
        sizes.clear();
        for (int64_t start = 0; start < length; start += chunk) {
          sizes.push_back(std::min(chunk, length - start));
        }
      }
      int64_t start = 0;
      for (int64_t size : sizes) {
        if (size < 0 || size > length - start) {
          context.fail("split sizes exceed dim {} of size {}", axis, length);
        }
        items.push_back(slice_along_axis(input, axis, start, size));
        start += size;
      }
      if (start != length) {
        context.fail("split sizes add up to {}, dim {} has size {}", start, axis, length);
      }
    }
    context.set_output_value(0, RuntimeValue::sequence(std::move(items), input.dtype()));
  }

 private:
  int64_t axis_;
  bool keepdims_;
};

class ConcatFromSequenceKernel : public OpKernel {
 public:
  explicit ConcatFromSequenceKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis")), new_axis_(context.attr_int("new_axis", 0) != 0) {}
  void compute(KernelContext& context) const override {
    const auto& items = sequence_of(context, 0);
    if (items.empty()) context.fail("cannot concatenate an empty sequence");
    const std::string what = context.node().describe();
    context.set_output(
        0, new_axis_ ? stack_tensors(items, axis_, what) : concat_tensors(items, axis_, what));
  }

 private:
  int64_t axis_;
  bool new_axis_;
};

// SequenceMap: runs the body once per sequence position; sequence inputs are indexed,
// tensor inputs are passed whole; each body output becomes an output sequence.
class SequenceMapKernel : public OpKernel {
 public:
  explicit SequenceMapKernel(const KernelCreateContext& context) {
    const Graph* body = context.attr_graph("body");
    if (!body) context.fail("required graph attribute 'body' is missing");
    body_ = context.compile_subgraph(*body);
    body_graph_ = body;
  }
  void compute(KernelContext& context) const override {
    const size_t length = sequence_of(context, 0).size();
    for (size_t i = 1; i < context.num_inputs(); ++i) {
      const RuntimeValue& value = context.input_value(i);
      if (value.is_sequence() && value.sequence_items().size() != length) {
        context.fail("input {} has {} items, input 0 has {}", i, value.sequence_items().size(),
                     length);
      }
    }
    std::vector<std::vector<Tensor>> outputs(context.num_outputs());
    for (size_t position = 0; position < length; ++position) {
      std::vector<RuntimeValue> inputs;
      for (size_t i = 0; i < context.num_inputs(); ++i) {
        const RuntimeValue& value = context.input_value(i);
        inputs.push_back(value.is_sequence() ? RuntimeValue(value.sequence_items()[position])
                                             : value);
      }
      auto results = context.subgraph_runner().run(*body_, std::move(inputs), context.frame());
      for (size_t o = 0; o < outputs.size(); ++o) outputs[o].push_back(results.at(o).tensor());
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      const ValueType& type = body_graph_->outputs()[o]->type();
      context.set_output_value(o, RuntimeValue::sequence(std::move(outputs[o]), type.elem_type));
    }
  }

 private:
  std::shared_ptr<const CompiledGraph> body_;
  const Graph* body_graph_ = nullptr;
};

class OptionalKernel : public OpKernel {
 public:
  explicit OptionalKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    context.set_output_value(0, context.input_value(0));
  }
};

class OptionalHasElementKernel : public OpKernel {
 public:
  explicit OptionalHasElementKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    // From opset 18 the input may be omitted (no element) or a tensor or sequence (one).
    const bool has = context.has_input(0) && !context.input_value(0).is_none();
    context.set_output(0, Tensor::from_vector<bool>(DType::kBool, {}, {has}));
  }
};

class OptionalGetElementKernel : public OpKernel {
 public:
  explicit OptionalGetElementKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    const RuntimeValue& value = context.input_value(0);
    if (value.is_none()) context.fail("the optional input holds no element");
    context.set_output_value(0, value);
  }
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

ValueType container_of(ValueType::Kind kind, ValueType element) {
  ValueType type;
  type.kind = kind;
  if (element.kind != ValueType::Kind::kNone) type.element.push_back(std::move(element));
  return type;
}

ValueType sequence_of(ValueType element) {
  return container_of(ValueType::Kind::kSequence, std::move(element));
}

// The element type of input i when it is a sequence (or optional) whose element is known.
const ValueType* element_of(const TypeInferenceContext& context, size_t i) {
  const ValueType* type = context.input_type(i);
  return type && type->has_element() ? &type->element_type() : nullptr;
}

// SequenceEmpty: a sequence of `dtype` (float when absent) tensors.
void infer_sequence_empty(TypeInferenceContext& context) {
  const auto dtype = static_cast<DType>(
      attribute_reader(context).attr_int("dtype", static_cast<int64_t>(DType::kFloat)));
  context.set_output(0, sequence_of(tensor_type(dtype)));
}

// SequenceConstruct: a sequence of what its tensors' types agree on.
void infer_sequence_construct(TypeInferenceContext& context) {
  std::optional<ValueType> element;
  for (size_t i = 0; i < context.num_inputs(); ++i) {
    const ValueType* type = context.input_type(i);
    if (!type) return;
    element = element ? merge_types(*element, *type) : *type;
  }
  if (element) context.set_output(0, sequence_of(*element));
}

// SequenceInsert: the sequence's element type merged with the inserted tensor's.
void infer_sequence_insert(TypeInferenceContext& context) {
  const ValueType* sequence = context.input_type(0);
  const ValueType* tensor = context.input_type(1);
  if (!sequence) return;
  if (!sequence->has_element() || !tensor) {
    context.set_output(0, *sequence);
    return;
  }
  context.set_output(0, sequence_of(merge_types(sequence->element_type(), *tensor)));
}

void infer_sequence_at(TypeInferenceContext& context) {
  if (const ValueType* element = element_of(context, 0)) context.set_output(0, *element);
}

void infer_sequence_length(TypeInferenceContext& context) {
  context.set_output(0, tensor_type(DType::kInt64, std::vector<Dim>{}));
}

// SplitToSequence: tensors of the input's dtype; without `split`, one per index of `axis`
// (that dim 1 with keepdims, dropped without); with it, `axis` of the split's size.
void infer_split_to_sequence(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* dims = input_dims(context, 0);
  if (!dims) {
    context.set_output(0, sequence_of(tensor_type(dtype)));
    return;
  }
  const KernelCreateContext attributes = attribute_reader(context);
  const size_t axis = rule_axis(attributes.attr_int("axis", 0), dims->size());
  std::vector<Dim> element = *dims;
  if (!context.has_input(1)) {
    if (attributes.attr_int("keepdims", 1) != 0) {
      element[axis] = Dim::known(1);
    } else {
      element.erase(element.begin() + static_cast<std::ptrdiff_t>(axis));
    }
  } else {
    const std::optional<std::vector<int64_t>> split = input_ints(context, 1);
    const ValueType* split_type = context.input_type(1);
    const bool scalar = split_type && split_type->shape && split_type->shape->empty();
    // As the kernel refuses them (libonnx's inference divides by a scalar split of 0).
    if (split && scalar && !split->empty() && split->front() <= 0) {
      fail("split size must be positive, got {}", split->front());
    }
    if (split && std::any_of(split->begin(), split->end(), [](int64_t s) { return s < 0; })) {
      fail("split {} has a negative size", shape_to_string(*split));
    }
    // Equal parts of a scalar split but a shorter last one; parts all equal in a list.
    std::optional<int64_t> size;
    if (split && !split->empty() && !scalar &&
        std::all_of(split->begin(), split->end(), [&](int64_t s) { return s == split->front(); })) {
      size = split->front();
    } else if (split && split->size() == 1 && scalar && split->front() > 0 &&
               element[axis].is_known() && element[axis].value % split->front() == 0) {
      size = split->front();
    }
    element[axis] = size ? Dim::known(*size) : Dim{};
  }
  context.set_output(0, sequence_of(tensor_type(dtype, std::move(element))));
}

// ConcatFromSequence: the element's dims, `axis` of unknown size (a new axis with
// new_axis).
void infer_concat_from_sequence(TypeInferenceContext& context) {
  const ValueType* element = element_of(context, 0);
  if (!element || !element->is_tensor()) return;
  if (!element->shape) {
    context.set_output(0, tensor_type(element->elem_type));
    return;
  }
  const KernelCreateContext attributes = attribute_reader(context);
  const bool new_axis = attributes.attr_int("new_axis", 0) != 0;
  std::vector<Dim> dims = *element->shape;
  const size_t axis = rule_axis(attributes.attr_int("axis"), dims.size() + (new_axis ? 1 : 0));
  if (new_axis) {
    dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(axis), Dim{});
  } else {
    dims[axis] = Dim{};
  }
  context.set_output(0, tensor_type(element->elem_type, std::move(dims)));
}

// SequenceMap: the body runs on each position of the sequence inputs (their element types)
// with the other inputs whole; each output is a sequence of the body's output.
void infer_sequence_map(TypeInferenceContext& context) {
  const Graph* body = attribute_reader(context).attr_graph("body");
  if (!body) fail("required graph attribute 'body' is missing");
  std::vector<ValueType> inputs;
  for (size_t i = 0; i < context.num_inputs(); ++i) {
    const ValueType* type = context.input_type(i);
    if (!type) {
      inputs.emplace_back();
    } else if (type->kind == ValueType::Kind::kSequence) {
      inputs.push_back(type->has_element() ? type->element_type() : ValueType{});
    } else {
      inputs.push_back(*type);
    }
  }
  const std::vector<ValueType> outputs = context.infer_subgraph(*body, inputs);
  for (size_t i = 0; i < outputs.size() && i < context.num_outputs(); ++i) {
    context.set_output(i, sequence_of(outputs[i]));
  }
}

// Optional: of the `type` attribute, else of the input's type.
void infer_optional(TypeInferenceContext& context) {
  if (const Attribute* attribute = context.node().find_attribute("type")) {
    context.set_output(0, container_of(ValueType::Kind::kOptional, attribute->tp));
  } else if (const ValueType* type = context.input_type(0)) {
    context.set_output(0, container_of(ValueType::Kind::kOptional, *type));
  }
}

void infer_optional_has_element(TypeInferenceContext& context) {
  context.set_output(0, tensor_type(DType::kBool, std::vector<Dim>{}));
}

// OptionalGetElement: the optional's element; a tensor or sequence input (opset 18) itself.
void infer_optional_get_element(TypeInferenceContext& context) {
  const ValueType* type = context.input_type(0);
  if (!type) return;
  if (type->kind != ValueType::Kind::kOptional) {
    context.set_output(0, *type);
  } else if (type->has_element()) {
    context.set_output(0, type->element_type());
  }
}

}  // namespace

void register_sequence_ops(OpRegistry& registry) {
  registry.add("SequenceEmpty", {11}, kernel_factory<SequenceEmptyKernel>());
  registry.add("SequenceConstruct", {11}, kernel_factory<SequenceConstructKernel>());
  registry.add("SequenceInsert", {11}, kernel_factory<SequenceInsertKernel>());
  registry.add("SequenceErase", {11}, kernel_factory<SequenceEraseKernel>());
  registry.add("SequenceAt", {11}, kernel_factory<SequenceAtKernel>());
  registry.add("SequenceLength", {11}, kernel_factory<SequenceLengthKernel>());
  // SplitToSequence 24 added bfloat16.
  registry.add("SplitToSequence", {11, 24}, kernel_factory<SplitToSequenceKernel>());
  registry.add("ConcatFromSequence", {11}, kernel_factory<ConcatFromSequenceKernel>());
  registry.add("SequenceMap", {17}, kernel_factory<SequenceMapKernel>());
  // 18 let OptionalHasElement and OptionalGetElement take a tensor or sequence as it is
  // (the kernels pass any value); 28 added types to all three.
  registry.add("Optional", {15, 28}, kernel_factory<OptionalKernel>());
  registry.add("OptionalHasElement", {15, 18, 28}, kernel_factory<OptionalHasElementKernel>());
  registry.add("OptionalGetElement", {15, 18, 28}, kernel_factory<OptionalGetElementKernel>());

  // Type inference, every version.
  registry.set_type_rule("", "SequenceEmpty", infer_sequence_empty);
  registry.set_type_rule("", "SequenceConstruct", infer_sequence_construct);
  registry.set_type_rule("", "SequenceInsert", infer_sequence_insert);
  registry.set_type_rule("", "SequenceErase", infer_same_as_input);
  registry.set_type_rule("", "SequenceAt", infer_sequence_at);
  registry.set_type_rule("", "SequenceLength", infer_sequence_length);
  registry.set_type_rule("", "SplitToSequence", infer_split_to_sequence);
  registry.set_type_rule("", "ConcatFromSequence", infer_concat_from_sequence);
  registry.set_type_rule("", "SequenceMap", infer_sequence_map);
  registry.set_type_rule("", "Optional", infer_optional);
  registry.set_type_rule("", "OptionalHasElement", infer_optional_has_element);
  registry.set_type_rule("", "OptionalGetElement", infer_optional_get_element);
}

}  // namespace onnxkit

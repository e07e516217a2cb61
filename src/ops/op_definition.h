// What onnxkit knows about one version of an op, in one place beside its reference kernel:
// the reference kernel's factory and the op's traits, which passes, the runtime and the
// conformance runner ask instead of keeping lists of op types.
//
// Typed attributes and output shapes shared by several kernels of one op (the reference
// kernel, fused ops, optimized kernels) live in the op's own header beside its family file
// (ops/conv_attributes.h, ops/matmul_shape.h, ...); kernels parse attributes once in
// their constructors.
//
// An op that takes part in shape computations also carries its shape-vector rule
// (ops/shape_vector.h), which shape folding evaluates symbolically.
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "ops/kernel.h"
#include "ops/type_inference.h"

namespace onnxkit {

using KernelFactory = std::function<std::unique_ptr<OpKernel>(const KernelCreateContext&)>;

// How an op computes its one output's shape vector from its inputs' (ops/shape_vector.h, for
// shape folding); nullopt when it cannot (not a shape computation, or not one it understands).
struct ShapeVector;
class ShapeVectorContext;
using ShapeVectorRule = std::optional<ShapeVector> (*)(const ShapeVectorContext& context);

// A factory for a kernel class constructed from the create context.
template <typename K>
KernelFactory kernel_factory() {
  return [](const KernelCreateContext& context) -> std::unique_ptr<OpKernel> {
    return std::make_unique<K>(context);
  };
}

// How an op relates the axes of its inputs to those of its outputs, for rewrites that move
// a layout change (a Transpose) through it.
enum class AxisRule {
  kOpaque,       // nothing the passes may rely on
  kElementwise,  // each output element from the inputs' elements at the same index
                 // (inputs broadcast numpy-style): any permutation commutes with the op
  kReduction,    // reduces the axes its `axes` name (attribute, or input 1 when
                 // OpTraits::axes_input); keepdims keeps the rank
  kSingleAxis,   // one `axis` attribute that follows the data (Concat, Softmax from 13)
};

struct OpTraits {
  AxisRule axes = AxisRule::kOpaque;
  // kReduction: the axes come as input 1 instead of an attribute.
  bool axes_input = false;
  // The inputs broadcast against each other numpy-style: where two inputs' aligned dims
  // are both not 1 they are equal (shape folding ties such dims).
  bool broadcasting = false;
  // The inputs may be given in any order (Add, Mul, Max, ...).
  bool commutative = false;
  // The same inputs always give the same outputs. False for the random ops: they are never
  // folded, merged or compared by value.
  bool deterministic = true;
  // Random only when asked to train (Dropout with training_mode): never merged.
  bool random_in_training = false;
  // Marks where a quantized model quantizes (QuantizeLinear & co.): constant folding keeps
  // it, as onnxsim does, so a quantized model stays quantized.
  bool quantization = false;
  // Elementwise ops with f(0) == 0 (0 op 0 == 0 for two inputs): zero padding lanes of a
  // blocked layout stay zero through them.
  bool keeps_zero = false;
};

// Traits shared by many ops.
inline constexpr OpTraits kElementwiseOp{.axes = AxisRule::kElementwise};
inline constexpr OpTraits kZeroKeepingElementwiseOp{.axes = AxisRule::kElementwise,
                                                    .keeps_zero = true};
inline constexpr OpTraits kBroadcastingOp{.axes = AxisRule::kElementwise, .broadcasting = true};
inline constexpr OpTraits kZeroKeepingBroadcastingOp{
    .axes = AxisRule::kElementwise, .broadcasting = true, .keeps_zero = true};
inline constexpr OpTraits kCommutativeBroadcastingOp{
    .axes = AxisRule::kElementwise, .broadcasting = true, .commutative = true};
inline constexpr OpTraits kCommutativeZeroKeepingBroadcastingOp{
    .axes = AxisRule::kElementwise, .broadcasting = true, .commutative = true, .keeps_zero = true};
inline constexpr OpTraits kRandomOp{.deterministic = false};

struct OpDefinition {
  OpDefinition() = default;
  template <typename F>
  requires std::constructible_from<KernelFactory, F> OpDefinition(
      F&& reference_kernel, OpTraits op_traits = {},  // NOLINT: implicit on purpose
      ShapeVectorRule shape_vector_rule = nullptr)
      : reference(std::forward<F>(reference_kernel)),
        traits(op_traits),
        shape_vector(shape_vector_rule) {}

  KernelFactory reference;  // the reference kernel
  OpTraits traits;
  // How its output's shape vector follows from its inputs'; nullptr when the op is no part of
  // shape computations.
  ShapeVectorRule shape_vector = nullptr;
  // How its outputs' types follow from its inputs' (ops/type_inference.h); nullptr while the
  // op has no rule (its outputs stay unknown where libonnx does not know the op either).
  TypeInferenceRule infer_types = nullptr;
  // Checks of a node's attributes against its own arity and its subgraphs' that need no type
  // inference (Scan's num_scan_inputs, the outputs of an If's branches). Run before libonnx's
  // inference, which trusts them, and by the kernel; nullptr where the rule runs first anyway.
  using NodeCheck = void (*)(const KernelCreateContext& context);
  NodeCheck check_node = nullptr;

  // The same definition with `rule` as its type inference: registry.add("Relu", {6, 13, 14},
  // OpDefinition(kernel_factory<ReluKernel>(), kElementwiseOp).with_types(infer_same_as_input)).
  OpDefinition with_types(TypeInferenceRule rule) const& {
    OpDefinition copy = *this;
    copy.infer_types = rule;
    return copy;
  }
  OpDefinition with_types(TypeInferenceRule rule) && {
    infer_types = rule;
    return std::move(*this);
  }
};

}  // namespace onnxkit

// Type and shape inference from the op definitions: how one version of an op maps its inputs'
// types (dtype and symbolic shape) and the values of its constant inputs to its outputs'
// types. It covers every op and version onnxkit registers, at any opset, so simplify, the
// planner and the check work on models newer than libonnx knows; where libonnx knows the
// op's version its inference is kept, and tests compare the two.
//
// A rule reads its node through a TypeInferenceContext that the caller (the inference
// engine) backs with what it knows so far, and sets what it can of each output: an unknown
// input type leaves the outputs that depend on it unset, an unknown dim stays unknown (a
// fresh unnamed Dim), a named dim passes through by name. A rule fails (core/status.h's
// fail) only on inputs that cannot be valid for the op (shapes that do not broadcast, a rank
// the op does not take), naming what is wrong; the engine adds the node.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "ir/value_type.h"
#include "onnxkit/tensor.h"
#include "ops/kernel.h"

namespace onnxkit {

class TypeInferenceContext {
 public:
  virtual ~TypeInferenceContext() = default;

  virtual const Node& node() const = 0;
  // The opset the model imports for the node's domain.
  virtual int64_t opset() const = 0;

  size_t num_inputs() const { return node().inputs().size(); }
  size_t num_outputs() const { return node().outputs().size(); }
  bool has_input(size_t i) const { return i < num_inputs() && node().inputs()[i] != nullptr; }
  bool has_output(size_t i) const { return i < num_outputs() && node().outputs()[i] != nullptr; }

  // The input's type; nullptr when the input is omitted or nothing is known about it.
  virtual const ValueType* input_type(size_t i) const = 0;
  // The input's value when it is known before running (an initializer, a Constant's output,
  // or a value the engine folded); nullptr otherwise.
  virtual const Tensor* input_value(size_t i) const = 0;
  // A 1-D integer input's elements as dims (Reshape's shape, Expand's shape, ...): known
  // numbers, named dims, or unknown (a fresh Dim) for what is only known at run time; nullopt
  // when nothing is known about the input's value. The base reads input_value; the engine
  // also knows the shape computations (Shape -> Gather -> Concat) it evaluated symbolically.
  virtual SymbolicShape input_as_dims(size_t i) const;
  // The output types of a subgraph attribute (If's branches, Loop's and Scan's body) when
  // its inputs have `input_types`; an entry is kNone where nothing is known.
  virtual std::vector<ValueType> infer_subgraph(const Graph& subgraph,
                                                std::span<const ValueType> input_types) = 0;

  // Sets output i (ignored when the output is omitted).
  virtual void set_output(size_t i, ValueType type) = 0;
};

// One op version's rule; see the top of this file.
using TypeInferenceRule = void (*)(TypeInferenceContext& context);

}  // namespace onnxkit

namespace onnxkit {

// Rules many ops share.

// Output 0 has input 0's type (Relu, Neg, Identity, Dropout's output 0, ...).
void infer_same_as_input(TypeInferenceContext& context);
// Output 0 is the numpy-style broadcast of every present input, of input 0's dtype (Add,
// Where's data inputs go through infer_where, ...).
void infer_broadcast(TypeInferenceContext& context);
// Output 0 is the broadcast of every present input, of dtype bool (Equal, Less, And, ...).
void infer_broadcast_bool(TypeInferenceContext& context);

// Helpers for writing rules.

// The numpy-style broadcast of `shapes`; nullopt when a rank is unknown. Fails when two
// known dims (neither 1) differ. Unknown against 1 stays unknown; a named dim against 1 keeps
// its name; two different names give an unknown dim.
SymbolicShape broadcast_shapes(std::span<const SymbolicShape> shapes);
// A tensor type of `dtype` with `shape`.
inline ValueType tensor_type(DType dtype, SymbolicShape shape = std::nullopt) {
  return ValueType::tensor(dtype, std::move(shape));
}
// Input i's shape when its type is a tensor of known rank, else nullptr.
const std::vector<Dim>* input_dims(const TypeInferenceContext& context, size_t i);
// Input i's dims for a rule whose output 0 has input i's dtype: nullptr when its rank is
// unknown, after setting output 0 to that dtype with unknown rank (left unset when the dtype is
// unknown too).
const std::vector<Dim>* ranked_input_dims(TypeInferenceContext& context, size_t i);
// The dims a shape input (Expand's, ConstantOfShape's) gives: input_as_dims when known (fails on
// a negative element), unknown dims of its length when only that is known.
SymbolicShape shape_input_dims(const TypeInferenceContext& context, size_t i);
// Input i's dtype when known, else DType::kUndefined.
DType input_dtype(const TypeInferenceContext& context, size_t i);
// The int64/int32 values of constant input i (axes, pads, sizes, shape); nullopt when the
// input is absent, not constant or not an integer tensor.
std::optional<std::vector<int64_t>> input_ints(const TypeInferenceContext& context, size_t i);
// The value of constant scalar (or one-element) input i as a double, of any numeric dtype;
// nullopt when it is absent, not constant or not one element.
std::optional<double> input_scalar(const TypeInferenceContext& context, size_t i);
// The values of constant numeric input i as doubles (Resize's scales); nullopt when it is
// absent, not constant or not numeric.
std::optional<std::vector<double>> input_doubles(const TypeInferenceContext& context, size_t i);
// The node's attributes read as a kernel constructor reads them (typed, defaults, errors
// naming the node), at the context's opset; valid while `context` is. Lets a rule share an
// op's attribute structs (ConvAttributes, ...) with its kernels.
KernelCreateContext attribute_reader(const TypeInferenceContext& context);

// Symbolic dim arithmetic: a known result where every operand is known, else an unknown dim
// (a named dim survives only where the result is that dim itself).
template <typename F>
Dim map_dim(const Dim& dim, F&& f) {
  return dim.is_known() ? Dim::known(f(dim.value)) : Dim{};
}
// The product of `dims`: known when all are; the one named dim when every other is 1.
Dim dims_product(std::span<const Dim> dims);
// The sum of `dims`: known when all are; the one named dim when every other is 0.
Dim dims_sum(std::span<const Dim> dims);
// Known dims from values.
std::vector<Dim> known_dims(std::span<const int64_t> values);
// `rank` unknown dims.
std::vector<Dim> unknown_dims(size_t rank);
// What two types of one value agree on (If's branches, a sequence's elements, a loop's
// carried value before and after the body): the dtype when equal, each dim where equal
// (else unknown), the rank where equal (else unknown). kNone when either is kNone.
ValueType merge_types(const ValueType& a, const ValueType& b);
// The length of a constant 1-D (or the rank of an unknown-valued) integer input holding one
// value per axis (Reshape's shape, Expand's shape, ...): nullopt unless input i is a tensor
// of known rank 1 and known length.
// Fails on a length above kMaxRankFromLength: a declared [2^40] shape input must not make a
// rule (or libonnx's inference after it) build 2^40 dims, and no model has such a rank.
std::optional<int64_t> input_length(const TypeInferenceContext& context, size_t i);
inline constexpr int64_t kMaxRankFromLength = 4096;
// Axis `axis` of a tensor of `rank` normalized to [0, rank); fails naming `what` when it is
// out of range.
size_t rule_axis(int64_t axis, size_t rank, std::string_view what = "axis");

}  // namespace onnxkit

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
inline ValueType tensor_type(DType dtype, SymbolicShape shape) {
  return ValueType::tensor(dtype, std::move(shape));
}
// Input i's shape when its type is a tensor of known rank, else nullptr.
const std::vector<Dim>* input_dims(const TypeInferenceContext& context, size_t i);
// Input i's dtype when known, else DType::kUndefined.
DType input_dtype(const TypeInferenceContext& context, size_t i);
// The int64/int32 values of constant input i (axes, pads, sizes, shape); nullopt when the
// input is absent, not constant or not an integer tensor.
std::optional<std::vector<int64_t>> input_ints(const TypeInferenceContext& context, size_t i);

}  // namespace onnxkit

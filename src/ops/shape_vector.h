// Shape vectors: the small 1-D (or scalar) integer tensors of shape computations
// (Shape -> Gather -> Concat -> Reshape), evaluated symbolically so that shape folding can
// fold what is known even while other dims stay symbolic.
//
// Each element is a number or a symbolic expression over dims: a named dim ('batch'), an
// unnamed dim (tied to its value and index), or an undecidable result (tied to the value that
// computed it). Expressions are kept as canonical text, so equal text means equal value at
// run time.
//
// An op that can compute shape vectors registers a ShapeVectorRule (ops/op_definition.h) with
// its definition; the rule reads its inputs' vectors through a ShapeVectorContext, which the
// caller (shape folding) backs with its own memoized evaluation.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "onnxkit/tensor.h"

namespace onnxkit {

// One element of a shape vector.
struct SymbolicInt {
  std::optional<int64_t> known;
  std::string expr;               // canonical text when not known: equal text, equal value
  bool nonneg = false;            // >= 0 at run time (dims, products and sums of dims)
  std::set<std::string> symbols;  // named dims it depends on (for --explain)
  std::set<std::string> others;   // unnamed dims and data it depends on

  static SymbolicInt number(int64_t v);
  // Dim `index` of `value`'s type: a number, a named symbol, or an unknown equal only to
  // itself.
  static SymbolicInt dim(const Value* value, size_t index);
  // An element nothing can be said about except that it is what `value`[index] computes
  // from `inputs`.
  static SymbolicInt opaque(const Value* value, size_t index,
                            std::span<const SymbolicInt* const> inputs, bool nonneg);
  // a (op) b for op '+', '-', '*', '/' (Add/Sub/Mul/Div of `dtype`); nullopt when the known
  // result would overflow `dtype` or divide by 0.
  static std::optional<SymbolicInt> arithmetic(char op, const SymbolicInt& a, const SymbolicInt& b,
                                               DType dtype);
  // Max/Min of two elements, when decidable.
  static std::optional<SymbolicInt> extremum(bool max, const SymbolicInt& a, const SymbolicInt& b);

  bool is(int64_t v) const { return known && *known == v; }
  // Equal at run time: the same number, or the same expression.
  bool same_as(const SymbolicInt& other) const;
  // The dim's name when this element is exactly one named dim, else nullptr.
  const std::string* named_dim() const;
  std::string text() const;
  void add_deps(const SymbolicInt& other);
};

// A 1-D or scalar integer (or bool) tensor, element by element.
struct ShapeVector {
  // Shape vectors are short; larger constants are not shape arithmetic.
  static constexpr size_t kMaxElements = 1024;

  DType dtype = DType::kInt64;
  bool scalar = false;
  std::vector<SymbolicInt> elems;
  bool from_shape = false;  // derived from Shape/Size (constant-only vectors are not ours)

  // The vector a constant holds; nullopt for other ranks, dtypes or sizes.
  static std::optional<ShapeVector> from_tensor(const Tensor& tensor);
  // int64 and int32, the dtypes shape arithmetic runs in.
  static bool is_int(DType dtype);
  // `axes` (of Unsqueeze, Squeeze, Slice) names axis 0 of a 1-D vector and nothing else:
  // the only axis that is meaningful here.
  static bool names_axis_zero(const std::vector<int64_t>& axes);

  bool all_known() const;
  // The tensor of a vector whose elements are all known.
  Tensor to_tensor() const;
};

// What an op's shape-vector rule sees: its node, the opset, and its inputs' vectors (which
// the caller evaluates on demand).
class ShapeVectorContext {
 public:
  ShapeVectorContext(const Node& node, int64_t opset) : node_(node), opset_(opset) {}
  virtual ~ShapeVectorContext() = default;

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  // The vector the node's input `index` holds, or nullptr: omitted, past the end, or not a
  // shape vector.
  virtual const ShapeVector* input(size_t index) const = 0;
  // Input `index` as numbers, when it is an integer vector known in full (Gather indices,
  // Slice starts, axes, ...).
  std::optional<std::vector<int64_t>> known_ints(size_t index) const;
  // An INT attribute, or `fallback` when it is absent or of another type.
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  // An INTS attribute, or nullptr when it is absent or of another type.
  const std::vector<int64_t>* attr_ints(std::string_view name) const;

 private:
  const Node& node_;
  int64_t opset_;
};

}  // namespace onnxkit

#include "ops/shape_vector.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace onnxkit {
namespace {

// Length-prefixed so that no two different atoms share a text.
std::string atom_text(char kind, const std::string& name, const void* owner, size_t index) {
  std::string text(1, kind);
  text += std::to_string(name.size());
  text += ':';
  text += name;
  if (owner) {
    text += '@';
    text += std::to_string(reinterpret_cast<uintptr_t>(owner));
    text += '#';
    text += std::to_string(index);
  }
  return text;
}

bool fits(DType dtype, int64_t v) {
  if (dtype == DType::kInt32) {
    return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  }
  if (dtype == DType::kBool) return v == 0 || v == 1;
  return true;
}

}  // namespace

SymbolicInt SymbolicInt::number(int64_t v) {
  SymbolicInt e;
  e.known = v;
  e.nonneg = v >= 0;
  return e;
}

SymbolicInt SymbolicInt::dim(const Value* value, size_t index) {
  const Dim& dim = (*value->type().shape)[index];
  if (dim.is_known()) return number(dim.value);
  SymbolicInt e;
  e.nonneg = true;
  if (!dim.param.empty()) {
    e.expr = atom_text('$', dim.param, nullptr, 0);
    e.symbols.insert(dim.param);
  } else {
    e.expr = atom_text('?', value->name(), value, index);
    std::string what = "unknown dim ";
    what += std::to_string(index);
    what += " of '";
    what += value->name();
    what += '\'';
    e.others.insert(std::move(what));
  }
  return e;
}

SymbolicInt SymbolicInt::opaque(const Value* value, size_t index,
                                std::span<const SymbolicInt* const> inputs, bool nonneg) {
  SymbolicInt e;
  e.expr = atom_text('!', value->name(), value, index);
  e.nonneg = nonneg;
  for (const SymbolicInt* in : inputs) e.add_deps(*in);
  return e;
}

std::optional<SymbolicInt> SymbolicInt::arithmetic(char op, const SymbolicInt& a,
                                                   const SymbolicInt& b, DType dtype) {
  if (a.known && b.known) {
    int64_t x = *a.known, y = *b.known, r = 0;
    bool overflow = false;
    switch (op) {
      case '+':
        overflow = __builtin_add_overflow(x, y, &r);
        break;
      case '-':
        overflow = __builtin_sub_overflow(x, y, &r);
        break;
      case '*':
        overflow = __builtin_mul_overflow(x, y, &r);
        break;
      default:
        if (y == 0) return std::nullopt;
        if (y == -1) {
          overflow = __builtin_sub_overflow(int64_t{0}, x, &r);
        } else {
          r = x / y;  // truncates toward zero, as the integer Div kernel
        }
    }
    if (overflow || !fits(dtype, r)) return std::nullopt;
    return number(r);
  }
  // Identities that hold for every value of the symbolic side.
  switch (op) {
    case '+':
      if (b.is(0)) return a;
      if (a.is(0)) return b;
      break;
    case '-':
      if (b.is(0)) return a;
      if (a.same_as(b)) return number(0);
      break;
    case '*':
      if (b.is(1)) return a;
      if (a.is(1)) return b;
      if (a.is(0) || b.is(0)) return number(0);
      break;
    default:
      if (b.is(1)) return a;
      if (a.same_as(b)) return number(1);  // x / x (x = 0 would fail at run time anyway)
  }
  std::string ta = a.text(), tb = b.text();
  if ((op == '+' || op == '*') && tb < ta) std::swap(ta, tb);
  SymbolicInt e;
  e.expr = std::string("(") + op + " " + ta + " " + tb + ")";
  e.nonneg = op != '-' && a.nonneg && b.nonneg;
  e.add_deps(a);
  e.add_deps(b);
  return e;
}

std::optional<SymbolicInt> SymbolicInt::extremum(bool max, const SymbolicInt& a,
                                                 const SymbolicInt& b) {
  if (a.known && b.known)
    return number(max ? std::max(*a.known, *b.known) : std::min(*a.known, *b.known));
  if (a.same_as(b)) return a;
  // A dim is >= 0: Max(dim, k <= 0) = dim, Min(dim, k <= 0) = k.
  for (int i = 0; i < 2; ++i) {
    const SymbolicInt& sym = i == 0 ? a : b;
    const SymbolicInt& num = i == 0 ? b : a;
    if (num.known && *num.known <= 0 && sym.nonneg) return max ? sym : num;
  }
  return std::nullopt;
}

bool SymbolicInt::same_as(const SymbolicInt& other) const {
  if (known || other.known) return known == other.known;
  return expr == other.expr;
}

const std::string* SymbolicInt::named_dim() const {
  if (known || symbols.size() != 1 || !others.empty()) return nullptr;
  const std::string& name = *symbols.begin();
  return expr == atom_text('$', name, nullptr, 0) ? &name : nullptr;
}

std::string SymbolicInt::text() const {
  if (!known) return expr;
  std::string out = "#";
  out += std::to_string(*known);
  return out;
}

void SymbolicInt::add_deps(const SymbolicInt& other) {
  symbols.insert(other.symbols.begin(), other.symbols.end());
  others.insert(other.others.begin(), other.others.end());
}

std::optional<ShapeVector> ShapeVector::from_tensor(const Tensor& tensor) {
  if (tensor.rank() > 1 || static_cast<size_t>(tensor.numel()) > kMaxElements) {
    return std::nullopt;
  }
  ShapeVector vec;
  vec.dtype = tensor.dtype();
  vec.scalar = tensor.rank() == 0;
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    int64_t v = 0;
    switch (tensor.dtype()) {
      case DType::kInt64:
        v = tensor.data<int64_t>()[i];
        break;
      case DType::kInt32:
        v = tensor.data<int32_t>()[i];
        break;
      case DType::kBool:
        v = tensor.data<bool>()[i] ? 1 : 0;
        break;
      default:
        return std::nullopt;
    }
    vec.elems.push_back(SymbolicInt::number(v));
  }
  return vec;
}

bool ShapeVector::is_int(DType dtype) {
  return dtype == DType::kInt64 || dtype == DType::kInt32;
}

bool ShapeVector::names_axis_zero(const std::vector<int64_t>& axes) {
  return axes.size() == 1 && (axes[0] == 0 || axes[0] == -1);
}

bool ShapeVector::all_known() const {
  return std::all_of(elems.begin(), elems.end(), [](const SymbolicInt& e) { return e.known; });
}

Tensor ShapeVector::to_tensor() const {
  Shape shape;
  if (!scalar) shape.push_back(static_cast<int64_t>(elems.size()));
  std::vector<int64_t> values;
  for (const SymbolicInt& e : elems) values.push_back(*e.known);
  if (dtype == DType::kInt64) return Tensor::from_vector(DType::kInt64, shape, values);
  if (dtype == DType::kInt32) {
    return Tensor::from_vector(DType::kInt32, shape,
                               std::vector<int32_t>(values.begin(), values.end()));
  }
  return Tensor::from_vector(DType::kBool, shape, std::vector<bool>(values.begin(), values.end()));
}

std::optional<std::vector<int64_t>> ShapeVectorContext::known_ints(size_t index) const {
  const ShapeVector* vec = input(index);
  if (!vec || !ShapeVector::is_int(vec->dtype) || !vec->all_known()) return std::nullopt;
  std::vector<int64_t> out;
  for (const SymbolicInt& e : vec->elems) out.push_back(*e.known);
  return out;
}

int64_t ShapeVectorContext::attr_int(std::string_view name, int64_t fallback) const {
  const Attribute* attribute = node_.find_attribute(name);
  return attribute && attribute->type == AttrType::kInt ? attribute->i : fallback;
}

const std::vector<int64_t>* ShapeVectorContext::attr_ints(std::string_view name) const {
  const Attribute* attribute = node_.find_attribute(name);
  return attribute && attribute->type == AttrType::kInts ? &attribute->ints : nullptr;
}

}  // namespace onnxkit

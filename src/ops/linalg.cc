// Op family: linalg — MatMul, Gemm and Einsum, all on top of the blocked GEMM; Det.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/gemm.h"
#include "ops/matmul_shape.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// A writable C buffer for `out`: the tensor itself when the types match, else `storage`;
// finish_output() copies `storage` back.
template <typename T, typename C>
C* output_as(Tensor& out, std::vector<C>& storage) {
  if constexpr (std::is_same_v<T, C>) {
    return out.mutable_data<T>();
  } else {
    storage.assign(static_cast<size_t>(out.numel()), C(0));
    return storage.data();
  }
}
template <typename T, typename C>
void finish_output(Tensor& out, const std::vector<C>& storage) {
  if constexpr (!std::is_same_v<T, C>) {
    T* dst = out.mutable_data<T>();
    for (size_t i = 0; i < storage.size(); ++i) dst[i] = convert_element<T>(storage[i]);
  }
}

// The dtypes MatMul and Gemm accept (float16/bfloat16 run through float).
template <typename F>
void dispatch_matmul(DType dtype, const KernelContext& context, F&& f) {
  switch (dtype) {
    case DType::kInt32:
      return f(TypeTag<int32_t>{});
    case DType::kInt64:
      return f(TypeTag<int64_t>{});
    case DType::kUInt32:
      return f(TypeTag<uint32_t>{});
    case DType::kUInt64:
      return f(TypeTag<uint64_t>{});
    default:
      if (!dtype_is_float(dtype)) {
        context.fail(
            "type {} is not supported (needs float, double, float16, bfloat16, int32, "
            "int64, uint32 or uint64)",
            dtype_name(dtype));
      }
      return dispatch_float(dtype, context.node().op_type(), std::forward<F>(f));
  }
}

// Calls f(offset) for every index of `dims` in row-major order, where offset is the dot
// product of the index with `strides`.
template <typename F>
void for_each_offset(const Shape& dims, const std::vector<int64_t>& strides, F&& f) {
  const int64_t total = shape_numel(dims);
  if (total == 0) return;
  const size_t rank = dims.size();
  std::vector<int64_t> counter(rank, 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < total; ++i) {
    f(offset);
    for (size_t d = rank; d-- > 0;) {
      if (++counter[d] < dims[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (dims[d] - 1);
      counter[d] = 0;
    }
  }
}

// ---------------------------------------------------------------------------------------
// MatMul: numpy matmul semantics (batch dims broadcast, 1-D operands promoted and squeezed).

class MatMulKernel : public OpKernel {
 public:
  explicit MatMulKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    if (a.dtype() != b.dtype()) {
      context.fail("input types differ: {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
    }
    const MatMulShape s = matmul_shape(context.node(), a.shape(), b.shape());
    Tensor& out = context.allocate_output(0, a.dtype(), s.out);
    if (out.numel() == 0) return;

    dispatch_matmul(a.dtype(), context, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      std::vector<C> a_store, b_store, out_store;
      const C* pa = elements_as<T, C>(a, a_store);
      const C* pb = elements_as<T, C>(b, b_store);
      C* po = output_as<T, C>(out, out_store);
      const int64_t m = s.m, k = s.k, n = s.n;
      if (shape_numel(s.b_batch) == 1) {
        // B is one matrix: A's batches stack into one tall product.
        const int64_t rows = shape_numel(s.a_batch) * m;
        gemm<C>(false, false, rows, n, k, C(1), pa, k, pb, n, C(0), po, n);
      } else {
        s.for_each_matrix([&](int64_t index, int64_t a_matrix, int64_t b_matrix) {
          gemm<C>(false, false, m, n, k, C(1), pa + a_matrix * m * k, k, pb + b_matrix * k * n, n,
                  C(0), po + index * m * n, n);
        });
      }
      finish_output<T, C>(out, out_store);
    });
  }
};

// ---------------------------------------------------------------------------------------
// Gemm: Y = alpha * A' * B' + beta * C, C unidirectionally broadcast to (M, N).

class GemmKernel : public OpKernel {
 public:
  explicit GemmKernel(const KernelCreateContext& context)
      : trans_a_(context.attr_int("transA", 0) != 0),
        trans_b_(context.attr_int("transB", 0) != 0),
        alpha_(context.attr_float("alpha", 1.0f)),
        beta_(context.attr_float("beta", 1.0f)),
        c_required_(context.opset() < 11),
        // Before opset 7 C broadcasts only when the `broadcast` attribute says so.
        exact_c_(context.opset() < 7 && context.attr_int("broadcast", 0) == 0) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    if (a.rank() != 2 || b.rank() != 2) {
      context.fail("A and B must be 2-D, got shapes {} and {}", shape_to_string(a.shape()),
                   shape_to_string(b.shape()));
    }
    if (a.dtype() != b.dtype()) {
      context.fail("input types differ: {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
    }
    const MatMulShape s = matmul_shape(context.node(), a.shape(), b.shape(), trans_a_, trans_b_);
    const int64_t m = s.m, k = s.k, n = s.n;
    const bool has_c = context.has_input(2);
    if (!has_c && c_required_) context.fail("input C is required before opset 11");
    const Tensor* c = has_c ? &context.input(2) : nullptr;
    const Shape out_shape{m, n};
    if (c) {
      if (c->dtype() != a.dtype()) {
        context.fail("C has type {} but A has type {}", dtype_name(c->dtype()),
                     dtype_name(a.dtype()));
      }
      if (exact_c_ ? c->shape() != out_shape : !broadcasts_to(c->shape(), out_shape)) {
        context.fail("C of shape {} does not broadcast to the output shape {}{}",
                     shape_to_string(c->shape()), shape_to_string(out_shape),
                     exact_c_ ? " (broadcast=0 needs the exact shape)" : "");
      }
    }
    Tensor& out = context.allocate_output(0, a.dtype(), out_shape);
    if (out.numel() == 0) return;

    dispatch_matmul(a.dtype(), context, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      std::vector<C> a_store, b_store, c_store, out_store;
      const C* pa = elements_as<T, C>(a, a_store);
      const C* pb = elements_as<T, C>(b, b_store);
      C* po = output_as<T, C>(out, out_store);
      const int64_t lda = a.shape()[1];
      const int64_t ldb = b.shape()[1];
      if constexpr (std::is_integral_v<C>) {
        // Integer Gemm: exact when alpha and beta are whole numbers, else through double.
        const bool whole = alpha_ == std::trunc(alpha_) && beta_ == std::trunc(beta_);
        if (whole) {
          if (c) fill_broadcast<C>(elements_as<T, C>(*c, c_store), c->shape(), out_shape, po);
          gemm<C>(trans_a_, trans_b_, m, n, k, static_cast<C>(static_cast<int64_t>(alpha_)), pa,
                  lda, pb, ldb, c ? static_cast<C>(static_cast<int64_t>(beta_)) : C(0), po, n);
        } else {
          gemm<C>(trans_a_, trans_b_, m, n, k, C(1), pa, lda, pb, ldb, C(0), po, n);
          std::vector<C> cb(static_cast<size_t>(m * n), C(0));
          if (c)
            fill_broadcast<C>(elements_as<T, C>(*c, c_store), c->shape(), out_shape, cb.data());
          for (int64_t i = 0; i < m * n; ++i) {
            po[i] = static_cast<C>(static_cast<double>(alpha_) * static_cast<double>(po[i]) +
                                   static_cast<double>(beta_) * static_cast<double>(cb[i]));
          }
        }
      } else {
        if (c) fill_broadcast<C>(elements_as<T, C>(*c, c_store), c->shape(), out_shape, po);
        gemm<C>(trans_a_, trans_b_, m, n, k, static_cast<C>(alpha_), pa, lda, pb, ldb,
                c ? static_cast<C>(beta_) : C(0), po, n);
      }
      finish_output<T, C>(out, out_store);
    });
  }

 private:
  template <typename C>
  static void fill_broadcast(const C* src, const Shape& shape, const Shape& out_shape, C* dst) {
    std::vector<int64_t> strides = broadcast_strides(shape, out_shape);
    int64_t i = 0;
    for_each_offset(out_shape, strides, [&](int64_t offset) { dst[i++] = src[offset]; });
  }

  bool trans_a_;
  bool trans_b_;
  float alpha_;
  float beta_;
  bool c_required_;
  bool exact_c_;
};

// ---------------------------------------------------------------------------------------
// Einsum: operands are reduced (diagonals taken, private labels summed), then contracted
// left to right, each pair as one batched GEMM over [batch, kept-left, summed] x
// [batch, summed, kept-right].

constexpr int kLetterLabels = 52;  // a-z then A-Z; ellipsis dims use ids from 52 on

struct EinsumTerm {
  std::vector<int> labels;  // letter ids, in order
  int ellipsis_at = -1;     // index in `labels` where "..." stands, -1 if none
};

// An intermediate operand: contiguous, one dim per (distinct) label. A dim may be 1 where
// the label is larger elsewhere (broadcast).
template <typename C>
struct EinsumOperand {
  std::vector<C> data;
  std::vector<int> labels;
  Shape dims;
};

char label_char(int label) {
  return label < 26 ? static_cast<char>('a' + label) : static_cast<char>('A' + label - 26);
}

class EinsumKernel : public OpKernel {
 public:
  explicit EinsumKernel(const KernelCreateContext& context) {
    std::string equation;
    for (char ch : context.attr_string("equation")) {
      if (ch != ' ') equation += ch;
    }
    const size_t arrow = equation.find("->");
    const std::string lhs = equation.substr(0, arrow);
    size_t start = 0;
    while (true) {
      const size_t comma = lhs.find(',', start);
      terms_.push_back(parse_term(context, lhs.substr(start, comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    std::array<int, kLetterLabels> counts{};
    bool any_ellipsis = false;
    for (const EinsumTerm& term : terms_) {
      for (int label : term.labels) ++counts[label];
      any_ellipsis = any_ellipsis || term.ellipsis_at >= 0;
    }
    if (arrow != std::string::npos) {
      output_ = parse_term(context, equation.substr(arrow + 2));
      std::array<int, kLetterLabels> seen{};
      for (int label : output_.labels) {
        if (counts[label] == 0) {
          context.fail("output label '{}' does not appear in any input term", label_char(label));
        }
        if (seen[label]++) context.fail("output label '{}' repeats", label_char(label));
      }
    } else {
      // Implicit output: ellipsis first, then labels seen exactly once, sorted.
      if (any_ellipsis) output_.ellipsis_at = 0;
      for (int label = 0; label < kLetterLabels; ++label) {
        if (counts[label] == 1) output_.labels.push_back(label);
      }
      std::sort(output_.labels.begin(), output_.labels.end(),
                [](int x, int y) { return label_char(x) < label_char(y); });
    }
  }

  // The parsed equation (the type inference reads it too).
  const std::vector<EinsumTerm>& terms() const { return terms_; }
  const EinsumTerm& output() const { return output_; }

  // One label per dim of a term whose operand has `own` ellipsis dims, `ellipsis_rank` the
  // most any operand has (ellipsis dims are right-aligned).
  static std::vector<int> expand_term(const EinsumTerm& term, int64_t own, int64_t ellipsis_rank) {
    std::vector<int> labels;
    for (size_t j = 0; j <= term.labels.size(); ++j) {
      if (static_cast<int>(j) == term.ellipsis_at) {
        for (int64_t e = ellipsis_rank - own; e < ellipsis_rank; ++e) {
          labels.push_back(kLetterLabels + static_cast<int>(e));
        }
      }
      if (j < term.labels.size()) labels.push_back(term.labels[j]);
    }
    return labels;
  }

  void compute(KernelContext& context) const override {
    if (context.num_inputs() != terms_.size()) {
      context.fail("equation has {} input terms but the node has {} inputs", terms_.size(),
                   context.num_inputs());
    }
    const DType dtype = context.input(0).dtype();
    for (size_t i = 1; i < terms_.size(); ++i) {
      if (context.input(i).dtype() != dtype) {
        context.fail("input types differ: {} and {}", dtype_name(dtype),
                     dtype_name(context.input(i).dtype()));
      }
    }
    // Expand each term to one label per dim; ellipsis dims are right-aligned across inputs.
    int64_t ellipsis_rank = 0;
    for (size_t i = 0; i < terms_.size(); ++i) {
      const int64_t rank = static_cast<int64_t>(context.input(i).rank());
      const int64_t letters = static_cast<int64_t>(terms_[i].labels.size());
      if (terms_[i].ellipsis_at < 0 ? rank != letters : rank < letters) {
        context.fail("input {} has rank {} but its term names {} dimensions{}", i, rank, letters,
                     terms_[i].ellipsis_at < 0 ? "" : " plus an ellipsis");
      }
      ellipsis_rank = std::max(ellipsis_rank, rank - letters);
    }
    std::vector<std::vector<int>> input_labels(terms_.size());
    std::vector<int64_t> sizes(kLetterLabels + ellipsis_rank, -1);
    for (size_t i = 0; i < terms_.size(); ++i) {
      const Shape& shape = context.input(i).shape();
      const int64_t own = static_cast<int64_t>(shape.size() - terms_[i].labels.size());
      input_labels[i] = expand_term(terms_[i], own, ellipsis_rank);
      for (size_t d = 0; d < shape.size(); ++d) {
        int64_t& size = sizes[input_labels[i][d]];
        if (size == -1 || size == 1) {
          size = shape[d];
        } else if (shape[d] != size && shape[d] != 1) {
          context.fail("dimension {} of input {} is {} but label '{}' has size {} elsewhere", d, i,
                       shape[d], describe_label(input_labels[i][d]), size);
        }
      }
    }
    const std::vector<int> out_labels = expand_term(output_, ellipsis_rank, ellipsis_rank);
    Shape out_shape;
    for (int label : out_labels) out_shape.push_back(sizes[label]);
    Tensor& out = context.allocate_output(0, dtype, out_shape);

    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = std::conditional_t<std::is_integral_v<T>, uint64_t, ComputeType<T>>;
      contract_all<T, C>(context, input_labels, out_labels, out);
    };
    if (!dtype_is_float(dtype) && !dtype_is_integer(dtype)) {
      context.fail("type {} is not supported (needs a numeric type)", dtype_name(dtype));
    }
    dispatch_numeric(dtype, "Einsum", run);
  }

 private:
  static EinsumTerm parse_term(const KernelCreateContext& context, const std::string& text) {
    EinsumTerm term;
    for (size_t i = 0; i < text.size(); ++i) {
      const char ch = text[i];
      if (ch >= 'a' && ch <= 'z') {
        term.labels.push_back(ch - 'a');
      } else if (ch >= 'A' && ch <= 'Z') {
        term.labels.push_back(26 + ch - 'A');
      } else if (ch == '.' && text.compare(i, 3, "...") == 0 && term.ellipsis_at < 0) {
        term.ellipsis_at = static_cast<int>(term.labels.size());
        i += 2;
      } else {
        context.fail("bad equation term '{}': unexpected '{}' at position {}", text, ch, i);
      }
    }
    return term;
  }

  // One label per dim: `own` ellipsis dims take the last `own` of `ellipsis_rank` ids.
  static std::string describe_label(int label) {
    if (label < kLetterLabels) return std::string(1, label_char(label));
    return "...#" + std::to_string(label - kLetterLabels);
  }

  // Input i as an operand with distinct labels: repeated labels become a diagonal, and
  // labels not in `keep` are summed out.
  template <typename T, typename C>
  static EinsumOperand<C> reduce_input(const Tensor& input, const std::vector<int>& labels,
                                       const std::vector<bool>& keep) {
    using Acc = std::conditional_t<std::is_floating_point_v<C>, double, C>;
    const std::vector<int64_t> strides = contiguous_strides(input.shape());
    std::vector<int> distinct;
    Shape kept_dims, summed_dims;
    std::vector<int64_t> kept_strides, summed_strides;
    EinsumOperand<C> result;
    for (size_t d = 0; d < labels.size(); ++d) {
      const auto first = std::find(labels.begin(), labels.end(), labels[d]) - labels.begin();
      if (static_cast<size_t>(first) != d) continue;
      int64_t stride = 0;
      for (size_t e = d; e < labels.size(); ++e) {
        if (labels[e] == labels[d]) stride += strides[e];
      }
      if (keep[labels[d]]) {
        result.labels.push_back(labels[d]);
        kept_dims.push_back(input.shape()[d]);
        kept_strides.push_back(stride);
      } else {
        summed_dims.push_back(input.shape()[d]);
        summed_strides.push_back(stride);
      }
    }
    result.dims = kept_dims;
    result.data.resize(static_cast<size_t>(shape_numel(kept_dims)));
    std::vector<int64_t> summed_offsets;
    for_each_offset(summed_dims, summed_strides,
                    [&](int64_t offset) { summed_offsets.push_back(offset); });
    const T* src = input.data<T>();
    size_t i = 0;
    for_each_offset(kept_dims, kept_strides, [&](int64_t base) {
      Acc sum = Acc(0);
      for (int64_t offset : summed_offsets)
        sum += static_cast<Acc>(to_compute<C>(src[base + offset]));
      result.data[i++] = static_cast<C>(sum);
    });
    return result;
  }

  template <typename C, typename T>
  static C to_compute(T value) {
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      return static_cast<float>(value);
    } else {
      return static_cast<C>(value);  // signed -> uint64 wraps modulo 2^64, as intended
    }
  }

  // Copies `op` into the label order `order` with dims `dims` (a dim of op that is 1 is
  // broadcast to the requested size).
  template <typename C>
  static std::vector<C> arrange(const EinsumOperand<C>& op, const std::vector<int>& order,
                                const Shape& dims) {
    const std::vector<int64_t> own = contiguous_strides(op.dims);
    std::vector<int64_t> strides;
    for (int label : order) {
      const size_t d = std::find(op.labels.begin(), op.labels.end(), label) - op.labels.begin();
      strides.push_back(op.dims[d] == 1 ? 0 : own[d]);
    }
    std::vector<C> data;
    data.reserve(static_cast<size_t>(shape_numel(dims)));
    for_each_offset(dims, strides, [&](int64_t offset) { data.push_back(op.data[offset]); });
    return data;
  }

  template <typename C>
  static EinsumOperand<C> contract(const EinsumOperand<C>& left, const EinsumOperand<C>& right,
                                   const std::vector<bool>& needed) {
    auto find_dim = [](const EinsumOperand<C>& op, int label) -> int64_t {
      const auto it = std::find(op.labels.begin(), op.labels.end(), label);
      return it == op.labels.end() ? -1 : op.dims[it - op.labels.begin()];
    };
    std::vector<int> batch, left_only, summed, right_only;
    Shape batch_dims, left_dims, summed_dims, right_dims;
    for (int label : left.labels) {
      const int64_t l = find_dim(left, label);
      const int64_t r = find_dim(right, label);
      if (r < 0) {
        left_only.push_back(label);
        left_dims.push_back(l);
      } else {
        const int64_t size = l == 1 ? r : l;
        (needed[label] ? batch : summed).push_back(label);
        (needed[label] ? batch_dims : summed_dims).push_back(size);
      }
    }
    for (int label : right.labels) {
      if (find_dim(left, label) < 0) {
        right_only.push_back(label);
        right_dims.push_back(find_dim(right, label));
      }
    }
    auto concat = [](auto x, const auto& y, const auto& z) {
      x.insert(x.end(), y.begin(), y.end());
      x.insert(x.end(), z.begin(), z.end());
      return x;
    };
    const std::vector<C> a =
        arrange(left, concat(batch, left_only, summed), concat(batch_dims, left_dims, summed_dims));
    const std::vector<C> b = arrange(right, concat(batch, summed, right_only),
                                     concat(batch_dims, summed_dims, right_dims));
    const int64_t nb = shape_numel(batch_dims);
    const int64_t m = shape_numel(left_dims);
    const int64_t k = shape_numel(summed_dims);
    const int64_t n = shape_numel(right_dims);
    EinsumOperand<C> result;
    result.labels = concat(batch, left_only, right_only);
    result.dims = concat(batch_dims, left_dims, right_dims);
    result.data.assign(static_cast<size_t>(nb * m * n), C(0));
    for (int64_t i = 0; i < nb && m * n > 0; ++i) {
      const C* pa = a.data() + i * m * k;
      const C* pb = b.data() + i * k * n;
      C* pc = result.data.data() + i * m * n;
      if (m * n * k > 512) {
        gemm<C>(false, false, m, n, k, C(1), pa, k, pb, n, C(0), pc, n);
        continue;
      }
      // Tiny products (elementwise, outer, dot over many batches): packing costs more.
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t p = 0; p < k; ++p) {
          const C value = pa[r * k + p];
          for (int64_t c = 0; c < n; ++c) pc[r * n + c] += value * pb[p * n + c];
        }
      }
    }
    return result;
  }

  template <typename T, typename C>
  void contract_all(KernelContext& context, const std::vector<std::vector<int>>& input_labels,
                    const std::vector<int>& out_labels, Tensor& out) const {
    size_t max_label = kLetterLabels;
    for (int label : out_labels) max_label = std::max(max_label, static_cast<size_t>(label) + 1);
    for (const auto& labels : input_labels) {
      for (int label : labels) max_label = std::max(max_label, static_cast<size_t>(label) + 1);
    }
    // needed_after[i]: labels of the output and of inputs after i.
    std::vector<std::vector<bool>> needed_after(input_labels.size(),
                                                std::vector<bool>(max_label, false));
    std::vector<bool> needed(max_label, false);
    for (int label : out_labels) needed[label] = true;
    for (size_t i = input_labels.size(); i-- > 0;) {
      needed_after[i] = needed;
      for (int label : input_labels[i]) needed[label] = true;
    }
    EinsumOperand<C> acc;
    for (size_t i = 0; i < input_labels.size(); ++i) {
      // Keep what the output, a later input, or an earlier one (now in acc) uses.
      std::vector<bool> keep = needed_after[i];
      for (int label : acc.labels) keep[label] = true;
      EinsumOperand<C> op = reduce_input<T, C>(context.input(i), input_labels[i], keep);
      acc = i == 0 ? std::move(op) : contract(acc, op, needed_after[i]);
    }
    // Every remaining label is an output label; lay them out in output order.
    std::vector<C> data = arrange(acc, out_labels, out.shape());
    T* dst = out.mutable_data<T>();
    for (size_t i = 0; i < data.size(); ++i) dst[i] = convert_element<T>(data[i]);
  }

  std::vector<EinsumTerm> terms_;
  EinsumTerm output_;
};

// Det: determinants of the trailing M x M matrices, by LU decomposition with partial
// pivoting in double precision.
class DetKernel : public OpKernel {
 public:
  explicit DetKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.rank() < 2)
      context.fail("input must have rank >= 2, got shape {}", shape_to_string(x.shape()));
    const int64_t m = x.shape()[x.rank() - 1];
    if (x.shape()[x.rank() - 2] != m) {
      context.fail("input shape {} does not end in square matrices", shape_to_string(x.shape()));
    }
    const Shape batch_shape(x.shape().begin(), x.shape().end() - 2);
    Tensor& y = context.allocate_output(0, x.dtype(), batch_shape);
    const int64_t count = shape_numel(batch_shape);
    dispatch_float(x.dtype(), "Det", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      const size_t size = static_cast<size_t>(m);
      std::vector<double> a(size * size);
      for (int64_t b = 0; b < count; ++b) {
        const T* src = px + b * m * m;
        for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(src[i]);
        py[b] = static_cast<T>(determinant(a, size));
      }
    });
  }

 private:
  // Destroys `a` (row-major n x n).
  static double determinant(std::vector<double>& a, size_t n) {
    double det = 1;
    for (size_t k = 0; k < n; ++k) {
      size_t pivot = k;
      for (size_t i = k + 1; i < n; ++i) {
        if (std::fabs(a[i * n + k]) > std::fabs(a[pivot * n + k])) pivot = i;
      }
      const double p = a[pivot * n + k];
      if (p == 0) return 0.0;  // singular (NaN pivots fall through and propagate)
      if (pivot != k) {
        std::swap_ranges(a.begin() + static_cast<ptrdiff_t>(k * n),
                         a.begin() + static_cast<ptrdiff_t>((k + 1) * n),
                         a.begin() + static_cast<ptrdiff_t>(pivot * n));
        det = -det;
      }
      det *= p;
      for (size_t i = k + 1; i < n; ++i) {
        const double f = a[i * n + k] / p;
        if (f == 0) continue;
        for (size_t j = k + 1; j < n; ++j) a[i * n + j] -= f * a[k * n + j];
      }
    }
    return det;
  }
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// MatMul: numpy matmul's dims (matmul_dims).
void infer_matmul(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* a = input_dims(context, 0);
  const std::vector<Dim>* b = input_dims(context, 1);
  context.set_output(
      0, tensor_type(dtype, a && b ? SymbolicShape(matmul_dims(*a, *b)) : std::nullopt));
}

// Gemm: [M, N] of op(A) and op(B).
void infer_gemm(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* a = input_dims(context, 0);
  const std::vector<Dim>* b = input_dims(context, 1);
  const KernelCreateContext attributes = attribute_reader(context);
  const bool trans_a = attributes.attr_int("transA", 0) != 0;
  const bool trans_b = attributes.attr_int("transB", 0) != 0;
  std::vector<Dim> out(2);
  if (a) {
    if (a->size() != 2) fail("A must have rank 2, got {}", a->size());
    out[0] = (*a)[trans_a ? 1 : 0];
  }
  if (b) {
    if (b->size() != 2) fail("B must have rank 2, got {}", b->size());
    out[1] = (*b)[trans_b ? 0 : 1];
  }
  if (a && b) out = matmul_dims(*a, *b, trans_a, trans_b);
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// Einsum: each output label's size from the inputs (a 1 broadcasts), ellipsis dims
// right-aligned across the inputs, as the kernel lays them out (EinsumKernel::expand_term).
void infer_einsum(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const EinsumKernel equation(attribute_reader(context));
  const std::vector<EinsumTerm>& terms = equation.terms();
  if (terms.size() != context.num_inputs()) {
    fail("equation has {} input terms but the node has {} inputs", terms.size(),
         context.num_inputs());
  }
  int64_t ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::vector<Dim>* dims = input_dims(context, i);
    if (!dims) {
      if (terms[i].ellipsis_at >= 0) {
        context.set_output(0, tensor_type(dtype));
        return;
      }
      continue;
    }
    const auto rank = static_cast<int64_t>(dims->size());
    const auto letters = static_cast<int64_t>(terms[i].labels.size());
    if (terms[i].ellipsis_at < 0 ? rank != letters : rank < letters) {
      fail("input {} has rank {} but its term names {} dimensions", i, rank, letters);
    }
    ellipsis_rank = std::max(ellipsis_rank, rank - letters);
  }
  // Per label: its size where some input gives one other than 1, 1 where all give 1.
  std::map<int, std::vector<Dim>> sizes;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::vector<Dim>* dims = input_dims(context, i);
    if (!dims) {
      for (int label : terms[i].labels) sizes[label].emplace_back();
      continue;
    }
    const auto own = static_cast<int64_t>(dims->size() - terms[i].labels.size());
    const std::vector<int> labels = EinsumKernel::expand_term(terms[i], own, ellipsis_rank);
    for (size_t d = 0; d < labels.size(); ++d) sizes[labels[d]].push_back((*dims)[d]);
  }
  std::vector<Dim> out;
  for (int label : EinsumKernel::expand_term(equation.output(), ellipsis_rank, ellipsis_rank)) {
    std::vector<SymbolicShape> each;
    for (const Dim& dim : sizes[label]) each.push_back(std::vector<Dim>{dim});
    out.push_back(each.empty() ? Dim::known(1) : (*broadcast_shapes(each))[0]);
  }
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// Det: the batch dims, without the square matrices' two.
void infer_det(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  const std::vector<Dim>* dims = ranked_input_dims(context, 0);
  if (!dims) return;
  if (dims->size() < 2) fail("input must have rank >= 2, got {}", dims->size());
  context.set_output(0, tensor_type(dtype, std::vector<Dim>(dims->begin(), dims->end() - 2)));
}

}  // namespace

void register_linalg_ops(OpRegistry& registry) {
  registry.add("MatMul", {1, 9, 13}, kernel_factory<MatMulKernel>());
  registry.add("Gemm", {1, 6, 7, 9, 11, 13}, kernel_factory<GemmKernel>());
  // Einsum 28 and Det 22 added bfloat16.
  registry.add("Einsum", {12, 28}, kernel_factory<EinsumKernel>());
  registry.add("Det", {11, 22}, kernel_factory<DetKernel>());

  // Type inference, every version.
  registry.set_type_rule("", "MatMul", infer_matmul);
  registry.set_type_rule("", "Gemm", infer_gemm);
  registry.set_type_rule("", "Einsum", infer_einsum);
  registry.set_type_rule("", "Det", infer_det);
}

}  // namespace onnxkit

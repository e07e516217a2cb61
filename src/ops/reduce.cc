// Op family: reductions (ReduceSum, ReduceMean, ... ReduceLogSumExp), ArgMax/ArgMin,
// TopK, CumSum and CumProd.
//
// Reductions view the input as blocks: dims are merged into alternating runs of kept and
// reduced dims; the last run, when kept, is the contiguous `inner` block accumulated as a
// row, so the common [outer, reduced, inner] layout streams through memory in order and
// any other axis set goes through small offset tables (still linear in the input size).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/float_to_integer.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

template <typename T>
constexpr bool kIsFloating = kIsHalf<T> || std::is_floating_point_v<T>;

// The type sums accumulate in: double for floats; 64-bit integers (wrapping, like the
// narrow type would after truncation) for integers.
template <typename T>
using Wide = std::conditional_t<kIsFloating<T>, double,
                                std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

template <typename T>
Wide<T> widen(T value) {
  if constexpr (kIsHalf<T>) {
    return static_cast<double>(static_cast<float>(value));
  } else {
    return static_cast<Wide<T>>(value);
  }
}

// Integer arithmetic wraps modulo 2^64 (no signed-overflow UB); floats are plain.
template <typename W>
W wide_add(W a, W b) {
  if constexpr (std::is_integral_v<W>) {
    return static_cast<W>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}
template <typename W>
W wide_mul(W a, W b) {
  if constexpr (std::is_integral_v<W>) {
    return static_cast<W>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}
template <typename W>
W wide_abs(W a) {
  if constexpr (std::is_unsigned_v<W>) {
    return a;
  } else if constexpr (std::is_integral_v<W>) {
    return a < 0 ? static_cast<W>(0 - static_cast<uint64_t>(a)) : a;
  } else {
    return std::fabs(a);
  }
}

template <typename T, typename From>
T narrow(From value) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                std::is_floating_point_v<From>) {
    // An integer's L2 norm or log sum in double: NaN (the log of a negative sum), -inf (of
    // an empty set) or past int64 convert as Cast converts them.
    return float_to_integer<T>(value);
  } else {
    return convert_element<T>(value);
  }
}

// ---------------------------------------------------------------------------------------
// Reduction operations: init() the accumulator, step() once per element, finish() with the
// number of reduced elements.

template <typename T>
struct SumOp {
  using Acc = Wide<T>;
  static Acc init() { return Acc{0}; }
  static void step(Acc& acc, T x) { acc = wide_add(acc, widen(x)); }
  static T finish(Acc acc, int64_t) { return narrow<T>(acc); }
};

template <typename T>
struct MeanOp {
  using Acc = Wide<T>;
  static Acc init() { return Acc{0}; }
  static void step(Acc& acc, T x) { acc = wide_add(acc, widen(x)); }
  static T finish(Acc acc, int64_t count) {
    if constexpr (std::is_integral_v<Acc>) {
      if (count == 0) return T{};  // no integer NaN
      return narrow<T>(acc / static_cast<Acc>(count));
    } else {
      return narrow<T>(acc / static_cast<double>(count));  // 0/0 = NaN for an empty set
    }
  }
};

template <typename T>
struct ProdOp {
  using Acc = Wide<T>;
  static Acc init() { return Acc{1}; }
  static void step(Acc& acc, T x) { acc = wide_mul(acc, widen(x)); }
  static T finish(Acc acc, int64_t) { return narrow<T>(acc); }
};

template <typename T>
struct L1Op {
  using Acc = Wide<T>;
  static Acc init() { return Acc{0}; }
  static void step(Acc& acc, T x) { acc = wide_add(acc, wide_abs(widen(x))); }
  static T finish(Acc acc, int64_t) { return narrow<T>(acc); }
};

template <typename T>
struct SumSquareOp {
  using Acc = Wide<T>;
  static Acc init() { return Acc{0}; }
  static void step(Acc& acc, T x) {
    const Acc w = widen(x);
    acc = wide_add(acc, wide_mul(w, w));
  }
  static T finish(Acc acc, int64_t) { return narrow<T>(acc); }
};

// L2 and the log reductions go through double for integers too (the result is real).
template <typename T>
struct L2Op {
  using Acc = double;
  static Acc init() { return 0.0; }
  static void step(Acc& acc, T x) {
    const double v = static_cast<double>(to_compute(x));
    acc += v * v;
  }
  static T finish(Acc acc, int64_t) { return narrow<T>(std::sqrt(acc)); }
};

template <typename T>
struct LogSumOp {
  using Acc = double;
  static Acc init() { return 0.0; }
  static void step(Acc& acc, T x) { acc += static_cast<double>(to_compute(x)); }
  static T finish(Acc acc, int64_t) { return narrow<T>(std::log(acc)); }
};

// log(sum(exp(x))) in one pass without overflow: keeps the running max m and
// s = sum(exp(x - m)), rescaling s when the max grows.
struct LogSumExpAcc {
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0.0;
};

template <typename T>
struct LogSumExpOp {
  using Acc = LogSumExpAcc;
  static Acc init() { return {}; }
  static void step(Acc& acc, T x) {
    const double v = static_cast<double>(to_compute(x));
    if (v == -std::numeric_limits<double>::infinity()) return;  // exp(-inf) adds nothing
    if (v > acc.max) {
      acc.sum = acc.sum * std::exp(acc.max - v) + 1.0;
      acc.max = v;
    } else if (v == acc.max) {
      acc.sum += 1.0;  // also covers +inf twice (inf - inf would be NaN)
    } else {
      acc.sum += std::exp(v - acc.max);  // NaN v (or max) propagates here
    }
  }
  static T finish(const Acc& acc, int64_t) { return narrow<T>(acc.max + std::log(acc.sum)); }
};

// Max/Min propagate NaN (as numpy does); an empty set gives the identity of the
// comparison: -inf/+inf for floats, the type's lowest/highest value for integers. Bools
// accumulate as bytes (a row of them is a vector).
template <typename T>
using ExtremeAcc = std::conditional_t<std::is_same_v<T, bool>, uint8_t, ComputeType<T>>;

template <typename T>
struct MaxOp {
  using Acc = ExtremeAcc<T>;
  static Acc init() {
    if constexpr (kIsFloating<T>) return -std::numeric_limits<Acc>::infinity();
    return std::numeric_limits<Acc>::lowest();
  }
  static void step(Acc& acc, T x) {
    const Acc v = to_compute(x);
    if (v > acc || v != v) acc = v;
  }
  static T finish(Acc acc, int64_t) { return narrow<T>(acc); }
};

template <typename T>
struct MinOp {
  using Acc = ExtremeAcc<T>;
  static Acc init() {
    if constexpr (kIsFloating<T>) return std::numeric_limits<Acc>::infinity();
    if constexpr (std::is_same_v<T, bool>) return Acc{1};
    return std::numeric_limits<Acc>::max();
  }
  static void step(Acc& acc, T x) {
    const Acc v = to_compute(x);
    if (v < acc || v != v) acc = v;
  }
  static T finish(Acc acc, int64_t) { return narrow<T>(acc); }
};

// ---------------------------------------------------------------------------------------
// Reduction plan: which offsets each output element reads.

// Row-major offsets of every index of the dims `sizes` with element strides `strides`.
std::vector<int64_t> offset_table(const std::vector<int64_t>& sizes,
                                  const std::vector<int64_t>& strides) {
  std::vector<int64_t> table{0};
  for (size_t d = 0; d < sizes.size(); ++d) {
    std::vector<int64_t> next;
    next.reserve(table.size() * static_cast<size_t>(sizes[d]));
    for (int64_t base : table) {
      for (int64_t i = 0; i < sizes[d]; ++i) next.push_back(base + i * strides[d]);
    }
    table = std::move(next);
  }
  return table;
}

struct ReducePlan {
  int64_t inner = 1;                  // contiguous kept elements at the end
  std::vector<int64_t> kept_offsets;  // one per output row of `inner` elements
  std::vector<int64_t> reduced_offsets;
  bool reduced_contiguous = false;  // reduced_offsets are 0, 1, 2, ... (inner == 1)
  int64_t count = 1;                // reduced elements per output element
};

// `reduced[d]` marks the dims to reduce. Dims of size 1 are dropped and neighbouring dims
// of the same kind are merged, so the tables stay as small as the layout allows.
ReducePlan make_plan(const Shape& shape, const std::vector<bool>& reduced) {
  struct Run {
    int64_t size;
    bool reduced;
  };
  std::vector<Run> runs;
  ReducePlan plan;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) plan.count *= shape[d];
    if (shape[d] == 1) continue;
    if (!runs.empty() && runs.back().reduced == reduced[d]) {
      runs.back().size *= shape[d];
    } else {
      runs.push_back({shape[d], static_cast<bool>(reduced[d])});
    }
  }
  if (!runs.empty() && !runs.back().reduced) {
    plan.inner = runs.back().size;
    runs.pop_back();
  }
  // Element strides of the runs, the inner block counting as the innermost stride.
  std::vector<int64_t> kept_sizes, kept_strides, reduced_sizes, reduced_strides;
  int64_t stride = plan.inner;
  for (size_t r = runs.size(); r-- > 0;) {
    auto& sizes = runs[r].reduced ? reduced_sizes : kept_sizes;
    auto& strides = runs[r].reduced ? reduced_strides : kept_strides;
    sizes.insert(sizes.begin(), runs[r].size);
    strides.insert(strides.begin(), stride);
    stride *= runs[r].size;
  }
  plan.kept_offsets = offset_table(kept_sizes, kept_strides);
  plan.reduced_contiguous = reduced_sizes.size() == 1 && reduced_strides[0] == 1;
  if (!plan.reduced_contiguous) plan.reduced_offsets = offset_table(reduced_sizes, reduced_strides);
  return plan;
}

template <template <typename> class OpT, typename T>
void run_reduction(const T* x, T* y, const ReducePlan& plan) {
  using Op = OpT<T>;
  using Acc = typename Op::Acc;
  const int64_t inner = plan.inner;
  if (inner == 1) {
    // Each output reads a set of scalars: one accumulator, no scratch row.
    for (size_t k = 0; k < plan.kept_offsets.size(); ++k) {
      const T* base = x + plan.kept_offsets[k];
      Acc acc = Op::init();
      if (plan.reduced_contiguous) {
        for (int64_t r = 0; r < plan.count; ++r) Op::step(acc, base[r]);
      } else {
        for (int64_t offset : plan.reduced_offsets) Op::step(acc, base[offset]);
      }
      y[k] = Op::finish(acc, plan.count);
    }
    return;
  }
  // Each output is a row of `inner` elements accumulated from contiguous input rows.
  std::vector<Acc> row(static_cast<size_t>(inner));
  for (size_t k = 0; k < plan.kept_offsets.size(); ++k) {
    std::fill(row.begin(), row.end(), Op::init());
    const T* base = x + plan.kept_offsets[k];
    for (int64_t offset : plan.reduced_offsets) {
      const T* src = base + offset;
      for (int64_t i = 0; i < inner; ++i) Op::step(row[static_cast<size_t>(i)], src[i]);
    }
    T* dst = y + static_cast<int64_t>(k) * inner;
    for (int64_t i = 0; i < inner; ++i)
      dst[i] = Op::finish(row[static_cast<size_t>(i)], plan.count);
  }
}

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

template <ReduceKind kKind>
class ReduceKernel : public OpKernel {
 public:
  explicit ReduceKernel(const KernelCreateContext& context) {
    keepdims_ = context.attr_int("keepdims", 1) != 0;
    noop_with_empty_axes_ = context.attr_int("noop_with_empty_axes", 0) != 0;
    // ReduceSum took axes as an input from opset 13, the others from opset 18.
    axes_from_input_ = context.opset() >= (kKind == ReduceKind::kSum ? 13 : 18);
    if (!axes_from_input_) axes_ = context.attr_ints("axes");
    // Opset 28 took the integer types away from the log reductions.
    float_only_ =
        (kKind == ReduceKind::kLogSum || kKind == ReduceKind::kLogSumExp) && context.opset() >= 28;
  }

  void compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    const int64_t rank = static_cast<int64_t>(data.rank());
    std::vector<int64_t> axes = axes_;
    if (axes_from_input_ && context.has_input(1)) axes = read_int64s(context.input(1), "axes");
    if (axes.empty() && noop_with_empty_axes_) {
      context.set_output(0, data);
      return;
    }
    std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
    for (int64_t axis : axes) {
      if (axis < -rank || axis >= rank) {
        context.fail("axis {} is out of range for rank {}", axis, rank);
      }
      const size_t d = static_cast<size_t>(axis < 0 ? axis + rank : axis);
      if (reduced[d]) context.fail("axis {} appears more than once in axes", axis);
      reduced[d] = true;
    }
    Shape out_shape;
    for (size_t d = 0; d < data.shape().size(); ++d) {
      if (!reduced[d]) {
        out_shape.push_back(data.shape()[d]);
      } else if (keepdims_) {
        out_shape.push_back(1);
      }
    }
    if (float_only_ && !dtype_is_float(data.dtype())) {
      context.fail("type {} is not supported (needs a floating-point type from opset 28)",
                   dtype_name(data.dtype()));
    }
    Tensor& out = context.allocate_output(0, data.dtype(), out_shape);
    if (out.numel() == 0) return;
    const ReducePlan plan = make_plan(data.shape(), reduced);
    const auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = data.data<T>();
      T* y = out.mutable_data<T>();
      if constexpr (kKind == ReduceKind::kMax) run_reduction<MaxOp>(x, y, plan);
      if constexpr (kKind == ReduceKind::kMin) run_reduction<MinOp>(x, y, plan);
      if constexpr (!std::is_same_v<T, bool>) {
        if constexpr (kKind == ReduceKind::kSum) run_reduction<SumOp>(x, y, plan);
        if constexpr (kKind == ReduceKind::kMean) run_reduction<MeanOp>(x, y, plan);
        if constexpr (kKind == ReduceKind::kProd) run_reduction<ProdOp>(x, y, plan);
        if constexpr (kKind == ReduceKind::kL1) run_reduction<L1Op>(x, y, plan);
        if constexpr (kKind == ReduceKind::kL2) run_reduction<L2Op>(x, y, plan);
        if constexpr (kKind == ReduceKind::kLogSum) run_reduction<LogSumOp>(x, y, plan);
        if constexpr (kKind == ReduceKind::kLogSumExp) run_reduction<LogSumExpOp>(x, y, plan);
        if constexpr (kKind == ReduceKind::kSumSquare) run_reduction<SumSquareOp>(x, y, plan);
      }
    };
    // ReduceMax and ReduceMin take bool from opset 20 (any and all); the kernel takes it at
    // every version.
    if constexpr (kKind == ReduceKind::kMax || kKind == ReduceKind::kMin) {
      dispatch_numeric_bool(data.dtype(), context.node().op_type(), run);
    } else {
      dispatch_numeric(data.dtype(), context.node().op_type(), run);
    }
  }

 private:
  bool keepdims_ = true;
  bool noop_with_empty_axes_ = false;
  bool axes_from_input_ = false;
  bool float_only_ = false;
  std::vector<int64_t> axes_;
};

// ---------------------------------------------------------------------------------------
// Ops along one axis: the input viewed as [outer, n, inner].

struct AxisView {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

AxisView axis_view(const Shape& shape, size_t axis) {
  AxisView view;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < axis) view.outer *= shape[d];
    if (d == axis) view.n = shape[d];
    if (d > axis) view.inner *= shape[d];
  }
  return view;
}

// Checks `axis` against `rank` and maps it into [0, rank).
size_t checked_axis(const KernelContext& context, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    context.fail("axis {} is out of range for rank {}", axis, rank);
  }
  return static_cast<size_t>(axis < 0 ? axis + rank : axis);
}

// NaN-aware "a comes before b": NaN counts as larger than every number (so ArgMax and
// TopK(largest) pick NaN first, as numpy's argmax does).
template <typename C>
bool greater(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

template <bool kMax>
class ArgExtremeKernel : public OpKernel {
 public:
  explicit ArgExtremeKernel(const KernelCreateContext& context) {
    axis_ = context.attr_int("axis", 0);
    keepdims_ = context.attr_int("keepdims", 1) != 0;
    select_last_index_ = context.attr_int("select_last_index", 0) != 0;
  }

  void compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    const size_t axis = checked_axis(context, axis_, static_cast<int64_t>(data.rank()));
    Shape out_shape = data.shape();
    if (keepdims_) {
      out_shape[axis] = 1;
    } else {
      out_shape.erase(out_shape.begin() + static_cast<ptrdiff_t>(axis));
    }
    const AxisView view = axis_view(data.shape(), axis);
    Tensor& out = context.allocate_output(0, DType::kInt64, out_shape);
    if (out.numel() == 0) return;
    if (view.n == 0) {
      context.fail("cannot take {} over axis {} of size 0", context.node().op_type(), axis_);
    }
    int64_t* y = out.mutable_data<int64_t>();
    dispatch_numeric(data.dtype(), context.node().op_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      const T* x = data.data<T>();
      // "v replaces the best so far": strictly better, or equal when the last index wins.
      auto better = [&](C v, C best) {
        const bool strictly = kMax ? greater(v, best) : greater(best, v);
        if (strictly) return true;
        if (!select_last_index_) return false;
        if constexpr (std::is_floating_point_v<C>) {
          if (std::isnan(v) && std::isnan(best)) return true;
        }
        return v == best;
      };
      // Rows of `inner` best values, scanned along n in memory order.
      std::vector<C> best(static_cast<size_t>(view.inner));
      for (int64_t o = 0; o < view.outer; ++o) {
        const T* block = x + o * view.n * view.inner;
        int64_t* dst = y + o * view.inner;
        for (int64_t i = 0; i < view.inner; ++i) {
          best[static_cast<size_t>(i)] = to_compute(block[i]);
          dst[i] = 0;
        }
        for (int64_t j = 1; j < view.n; ++j) {
          const T* row = block + j * view.inner;
          for (int64_t i = 0; i < view.inner; ++i) {
            const C v = to_compute(row[i]);
            if (better(v, best[static_cast<size_t>(i)])) {
              best[static_cast<size_t>(i)] = v;
              dst[i] = j;
            }
          }
        }
      }
    });
  }

 private:
  int64_t axis_ = 0;
  bool keepdims_ = true;
  bool select_last_index_ = false;
};

// TopK: the k largest (or smallest) along an axis, ties broken by the lower index.
class TopKKernel : public OpKernel {
 public:
  explicit TopKKernel(const KernelCreateContext& context) {
    axis_ = context.attr_int("axis", -1);
    k_from_input_ = context.opset() >= 10;
    if (!k_from_input_) {
      k_ = context.attr_int("k");
      if (k_ < 0) context.fail("k must not be negative, got {}", k_);
    }
    largest_ = context.attr_int("largest", 1) != 0;
    // Output is always sorted: a valid order for sorted=0 too.
  }

  void compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    const size_t axis = checked_axis(context, axis_, static_cast<int64_t>(data.rank()));
    int64_t k = k_;
    if (k_from_input_) {
      const std::vector<int64_t> ks = read_int64s(context.input(1), "K");
      if (ks.size() != 1) context.fail("K must hold exactly one value, got {}", ks.size());
      k = ks[0];
    }
    const AxisView view = axis_view(data.shape(), axis);
    if (k < 0 || k > view.n) {
      context.fail("k {} is out of range for axis {} of size {}", k, axis_, view.n);
    }
    Shape out_shape = data.shape();
    out_shape[axis] = k;
    Tensor& values = context.allocate_output(0, data.dtype(), out_shape);
    Tensor& indices = context.allocate_output(1, DType::kInt64, out_shape);
    if (values.numel() == 0) return;
    int64_t* yi = indices.mutable_data<int64_t>();
    dispatch_numeric(data.dtype(), context.node().op_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      const T* x = data.data<T>();
      T* yv = values.mutable_data<T>();
      std::vector<C> lane(static_cast<size_t>(view.n));
      std::vector<int64_t> order(static_cast<size_t>(view.n));
      // A strict total order on (value, index): the ranking, then the lower index.
      auto before = [&](int64_t a, int64_t b) {
        const C va = lane[static_cast<size_t>(a)];
        const C vb = lane[static_cast<size_t>(b)];
        if (largest_ ? greater(va, vb) : greater(vb, va)) return true;
        if (largest_ ? greater(vb, va) : greater(va, vb)) return false;
        return a < b;
      };
      const auto middle = order.begin() + static_cast<ptrdiff_t>(k);
      for (int64_t o = 0; o < view.outer; ++o) {
        for (int64_t i = 0; i < view.inner; ++i) {
          const T* src = x + o * view.n * view.inner + i;
          for (int64_t j = 0; j < view.n; ++j) {
            lane[static_cast<size_t>(j)] = to_compute(src[j * view.inner]);
          }
          std::iota(order.begin(), order.end(), int64_t{0});
          std::partial_sort(order.begin(), middle, order.end(), before);
          const int64_t dst = o * k * view.inner + i;
          for (int64_t j = 0; j < k; ++j) {
            const int64_t index = order[static_cast<size_t>(j)];
            yv[dst + j * view.inner] = src[index * view.inner];
            yi[dst + j * view.inner] = index;
          }
        }
      }
    });
  }

 private:
  int64_t axis_ = -1;
  bool k_from_input_ = true;
  int64_t k_ = 0;
  bool largest_ = true;
};

// CumSum / CumProd: running sums or products along the axis given as input 1 (exclusive /
// reverse variants).
template <bool kProduct>
class CumulativeKernel : public OpKernel {
 public:
  explicit CumulativeKernel(const KernelCreateContext& context) {
    exclusive_ = context.attr_int("exclusive", 0) != 0;
    reverse_ = context.attr_int("reverse", 0) != 0;
  }

  void compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    const std::vector<int64_t> axes = read_int64s(context.input(1), "axis");
    if (axes.size() != 1) context.fail("axis must hold exactly one value, got {}", axes.size());
    const size_t axis = checked_axis(context, axes[0], static_cast<int64_t>(data.rank()));
    const AxisView view = axis_view(data.shape(), axis);
    Tensor& out = context.allocate_output(0, data.dtype(), data.shape());
    if (out.numel() == 0) return;
    dispatch_numeric(data.dtype(), context.node().op_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using W = Wide<T>;
      const T* x = data.data<T>();
      T* y = out.mutable_data<T>();
      // Running sums (products) for a row of `inner` lanes, walking the axis in memory order.
      std::vector<W> sums(static_cast<size_t>(view.inner));
      for (int64_t o = 0; o < view.outer; ++o) {
        std::fill(sums.begin(), sums.end(), kProduct ? W{1} : W{0});
        const int64_t block = o * view.n * view.inner;
        for (int64_t step = 0; step < view.n; ++step) {
          const int64_t j = reverse_ ? view.n - 1 - step : step;
          const T* src = x + block + j * view.inner;
          T* dst = y + block + j * view.inner;
          for (int64_t i = 0; i < view.inner; ++i) {
            W& sum = sums[static_cast<size_t>(i)];
            const W next = kProduct ? wide_mul(sum, widen(src[i])) : wide_add(sum, widen(src[i]));
            dst[i] = narrow<T>(exclusive_ ? sum : next);
            sum = next;
          }
        }
      }
    });
  }

 private:
  bool exclusive_ = false;
  bool reverse_ = false;
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// The reductions: axes from the attribute (before opset 13 for ReduceSum, 18 for the others)
// or input 1; none given reduces every axis, unless noop_with_empty_axes.
void infer_reduction(TypeInferenceContext& context) {
  const ValueType* type = context.input_type(0);
  if (!type || !type->is_tensor()) return;
  const KernelCreateContext attributes = attribute_reader(context);
  const bool keepdims = attributes.attr_int("keepdims", 1) != 0;
  const std::vector<Dim>* dims = input_dims(context, 0);
  std::optional<std::vector<int64_t>> axes;
  if (context.has_input(1)) {
    axes = input_ints(context, 1);
    if (!axes) {
      // Axes unknown before running: with keepdims the rank stays.
      context.set_output(0, tensor_type(type->elem_type,
                                        keepdims && dims ? SymbolicShape(unknown_dims(dims->size()))
                                                         : std::nullopt));
      return;
    }
  } else {
    axes = attributes.attr_ints("axes");
  }
  if (axes->empty() && attributes.attr_int("noop_with_empty_axes", 0) != 0) {
    context.set_output(0, *type);
    return;
  }
  if (!dims) {
    context.set_output(0, tensor_type(type->elem_type));
    return;
  }
  std::vector<bool> reduced(dims->size(), axes->empty());
  for (int64_t axis : *axes) reduced[rule_axis(axis, dims->size(), "axes")] = true;
  std::vector<Dim> out;
  for (size_t d = 0; d < dims->size(); ++d) {
    if (!reduced[d]) {
      out.push_back((*dims)[d]);
    } else if (keepdims) {
      out.push_back(Dim::known(1));
    }
  }
  context.set_output(0, tensor_type(type->elem_type, std::move(out)));
}

// ArgMax, ArgMin: int64 indices, `axis` reduced (kept as 1 with keepdims).
void infer_arg_extreme(TypeInferenceContext& context) {
  if (!context.input_type(0)) return;
  const KernelCreateContext attributes = attribute_reader(context);
  const std::vector<Dim>* dims = input_dims(context, 0);
  if (!dims) {
    context.set_output(0, tensor_type(DType::kInt64));
    return;
  }
  const size_t axis = rule_axis(attributes.attr_int("axis", 0), dims->size());
  std::vector<Dim> out = *dims;
  if (attributes.attr_int("keepdims", 1) != 0) {
    out[axis] = Dim::known(1);
  } else {
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
  }
  context.set_output(0, tensor_type(DType::kInt64, std::move(out)));
}

// TopK: values and int64 indices, `axis` cut to k (an attribute before opset 10, input K
// after).
void infer_top_k(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const KernelCreateContext attributes = attribute_reader(context);
  const std::vector<Dim>* dims = input_dims(context, 0);
  SymbolicShape out;
  if (dims) {
    const size_t axis = rule_axis(attributes.attr_int("axis", -1), dims->size());
    out = *dims;
    Dim k;
    if (context.opset() < 10) {
      k = Dim::known(attributes.attr_int("k"));
    } else if (const std::optional<std::vector<int64_t>> ks = input_ints(context, 1)) {
      if (ks->size() != 1) fail("K must hold exactly one value, got {}", ks->size());
      k = Dim::known((*ks)[0]);
    }
    (*out)[axis] = k;
  }
  context.set_output(0, tensor_type(dtype, out));
  context.set_output(1, tensor_type(DType::kInt64, out));
}

}  // namespace

void register_reduce_ops(OpRegistry& registry) {
  // Reductions keep axis order (AxisRule::kReduction); their axes moved from an attribute
  // to input 1 in opset 13 (ReduceSum) and 18 (the others).
  constexpr OpTraits kAxesAttribute{.axes = AxisRule::kReduction};
  constexpr OpTraits kAxesInput{.axes = AxisRule::kReduction, .axes_input = true};
  auto add_reduction = [&](std::string op_type, int64_t axes_input_since,
                           std::vector<int64_t> versions, const KernelFactory& factory) {
    if (std::ranges::find(versions, axes_input_since) == versions.end()) {
      versions.push_back(axes_input_since);
    }
    std::ranges::sort(versions);
    for (int64_t since : versions) {
      registry.add("", op_type, since,
                   OpDefinition(factory, since >= axes_input_since ? kAxesInput : kAxesAttribute));
    }
  };
  add_reduction("ReduceSum", 13, {1, 11}, kernel_factory<ReduceKernel<ReduceKind::kSum>>());
  add_reduction("ReduceMean", 18, {1, 11, 13}, kernel_factory<ReduceKernel<ReduceKind::kMean>>());
  // ReduceMax and ReduceMin 20 added bool; the log reductions 28 dropped the integer types.
  add_reduction("ReduceMax", 18, {1, 11, 12, 13, 20},
                kernel_factory<ReduceKernel<ReduceKind::kMax>>());
  add_reduction("ReduceMin", 18, {1, 11, 12, 13, 20},
                kernel_factory<ReduceKernel<ReduceKind::kMin>>());
  add_reduction("ReduceProd", 18, {1, 11, 13}, kernel_factory<ReduceKernel<ReduceKind::kProd>>());
  add_reduction("ReduceL1", 18, {1, 11, 13}, kernel_factory<ReduceKernel<ReduceKind::kL1>>());
  add_reduction("ReduceL2", 18, {1, 11, 13}, kernel_factory<ReduceKernel<ReduceKind::kL2>>());
  add_reduction("ReduceLogSum", 18, {1, 11, 13, 28},
                kernel_factory<ReduceKernel<ReduceKind::kLogSum>>());
  add_reduction("ReduceLogSumExp", 18, {1, 11, 13, 28},
                kernel_factory<ReduceKernel<ReduceKind::kLogSumExp>>());
  add_reduction("ReduceSumSquare", 18, {1, 11, 13},
                kernel_factory<ReduceKernel<ReduceKind::kSumSquare>>());
  registry.add("ArgMax", {1, 11, 12, 13}, kernel_factory<ArgExtremeKernel<true>>());
  registry.add("ArgMin", {1, 11, 12, 13}, kernel_factory<ArgExtremeKernel<false>>());
  // TopK 24 added bfloat16.
  registry.add("TopK", {1, 10, 11, 24}, kernel_factory<TopKKernel>());
  registry.add("CumSum", {11, 14}, kernel_factory<CumulativeKernel<false>>());
  registry.add(
      "CumProd", {26},
      OpDefinition(kernel_factory<CumulativeKernel<true>>()).with_types(infer_same_as_input));

  // Type inference, every version.
  registry.set_type_rule("", "ReduceSum", infer_reduction);
  registry.set_type_rule("", "ReduceMean", infer_reduction);
  registry.set_type_rule("", "ReduceMax", infer_reduction);
  registry.set_type_rule("", "ReduceMin", infer_reduction);
  registry.set_type_rule("", "ReduceProd", infer_reduction);
  registry.set_type_rule("", "ReduceL1", infer_reduction);
  registry.set_type_rule("", "ReduceL2", infer_reduction);
  registry.set_type_rule("", "ReduceLogSum", infer_reduction);
  registry.set_type_rule("", "ReduceLogSumExp", infer_reduction);
  registry.set_type_rule("", "ReduceSumSquare", infer_reduction);
  registry.set_type_rule("", "ArgMax", infer_arg_extreme);
  registry.set_type_rule("", "ArgMin", infer_arg_extreme);
  registry.set_type_rule("", "TopK", infer_top_k);
  registry.set_type_rule("", "CumSum", infer_same_as_input);
}

}  // namespace onnxkit

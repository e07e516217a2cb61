// See dnnl_int8.h. Two cores, Int8MatMul (A [rows, K] x constant B [K, N]) and Int8Conv
// (NCHW x constant W), each giving the exact int32 accumulators of (A - a_zp) x (B - b_zp);
// the op kernels below turn them into int32 (MatMulInteger, ConvInteger), requantized int8
// (QLinearMatMul, QLinearConv) or float (MatMulIntegerToFloat, ConvIntegerToFloat). What they
// decline (weights that are not initializers, per-row activation zero points, batched B, float8)
// runs on the node's reference kernel.
#include "kernels/dnnl_int8.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "kernels/dnnl_common.h"
#include "kernels/dnnl_conv.h"
#include "kernels/dnnl_matmul.h"
#include "kernels/int8_depthwise.h"
#include "kernels/int8_kernel_util.h"
#include "kernels/integer_epilogue.h"
#include "kernels/quantize_simd.h"
#include "ops/channels_last_ops.h"
#include "ops/conv_attributes.h"
#include "ops/fused_ops.h"
#include "ops/registry.h"

namespace onnxkit {

namespace {

std::atomic<int> forced_split{-1};
std::atomic<Int8ConvKernel> conv_kernel{Int8ConvKernel::kByOutputSize};

bool onednn_has_vnni() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  constexpr unsigned kAvx512Vnni = 0x40, kAvx2Vnni = 0x400;  // their bits in dnnl_cpu_isa_t
  return (isa & kAvx512Vnni) != 0 || (isa & kAvx2Vnni) != 0;
}

}  // namespace

bool int8_weights_split() {
  const int forced = forced_split.load(std::memory_order_relaxed);
  if (forced >= 0) return forced != 0;
  static const bool split = !onednn_has_vnni();
  return split;
}

Int8SplitOverride::Int8SplitOverride(bool split) : previous_(forced_split.load()) {
  forced_split.store(split ? 1 : 0);
}
Int8SplitOverride::~Int8SplitOverride() {
  forced_split.store(previous_);
}

Int8ConvKernelOverride::Int8ConvKernelOverride(Int8ConvKernel kernel)
    : previous_(conv_kernel.exchange(kernel)) {}
Int8ConvKernelOverride::~Int8ConvKernelOverride() {
  conv_kernel.store(previous_);
}

namespace {

using dnnl::memory;
using Dims = memory::dims;

// ---------------------------------------------------------------------------------------
// Small helpers.

// 16 * high + low = v, both in [-8, 8]: products of a u8 with either half never saturate
// VPMADDUBSW's int16 pair sums (255 * 8 * 2 = 4080).
int8_t high_part(int32_t v) {
  return static_cast<int8_t>((v + 8) >> 4);
}
int8_t low_part(int32_t v) {
  return static_cast<int8_t>(v - 16 * high_part(v));
}

// One value per channel from a per-tensor or per-channel parameter.
template <typename V>
std::vector<V> expanded(std::vector<V> values, int64_t count) {
  if (values.size() == 1) values.assign(static_cast<size_t>(count), values[0]);
  return values;
}

// dst[c * 16 + q] = src[q * stride + c] for c, q < 16, in 4 x 4 SSE2 transposes (the x86-64
// baseline): the scalar loop was most of ResNet-50 ConvInteger's epilogue.
void transpose_16x16(const int32_t* src, int64_t stride, int32_t* dst) {
  for (int q0 = 0; q0 < 16; q0 += 4) {
    for (int c0 = 0; c0 < 16; c0 += 4) {
      __m128 r[4];
      for (int i = 0; i < 4; ++i) {
        r[i] = _mm_castsi128_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (q0 + i) * stride + c0)));
      }
      _MM_TRANSPOSE4_PS(r[0], r[1], r[2], r[3]);
      for (int i = 0; i < 4; ++i) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (c0 + i) * 16 + q0),
                         _mm_castps_si128(r[i]));
      }
    }
  }
}

// An int8 operand as oneDNN sees it: its bytes and whether they are s8.
// An s8 operand as u8 (shifted by 128 into scratch; `zero_point` moves with it), for the
// split path: oneDNN 2.6's s8-source convolutions with a source zero point gave wrong
// results below VNNI (AVX2), where its u8 ones are right.
Int8Data shifted_to_u8(Int8Data x, int64_t n, int32_t& zero_point) {
  if (!x.is_signed) return x;
  auto* out = static_cast<uint8_t*>(
      dnnl_util::scratch_buffer(dnnl_util::ScratchRole::kInt8Shifted, static_cast<size_t>(n)));
  const auto* in = static_cast<const uint8_t*>(x.data);
  parallel_for(n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = in[i] ^ 0x80;
  });
  zero_point += 128;
  return {out, false};
}

// [N, spatial..., C] <-> [N, C, spatial...] (shapes of rank >= 3).
Shape channels_first(const Shape& channels_last_shape) {
  Shape shape{channels_last_shape[0], channels_last_shape.back()};
  shape.insert(shape.end(), channels_last_shape.begin() + 1, channels_last_shape.end() - 1);
  return shape;
}
Shape channels_last(const Shape& channels_first_shape) {
  Shape shape{channels_first_shape[0]};
  shape.insert(shape.end(), channels_first_shape.begin() + 2, channels_first_shape.end());
  shape.push_back(channels_first_shape[1]);
  return shape;
}

// ---------------------------------------------------------------------------------------
// A [rows, K] u8 x constant B [K, N].

class Int8MatMul {
 public:
  // `b` u8 / s8 [K, N]; `zero_points` one value or N.
  Int8MatMul(const Tensor& b, const std::vector<int32_t>& zero_points, bool split)
      : k_(b.shape()[0]), n_(b.shape()[1]), split_(split), columns_(split ? 2 * n_ : n_) {
    const int shift = b.dtype() == DType::kUInt8 ? 128 : 0;
    const std::vector<int32_t> raw = int8_values(b);
    values_.resize(static_cast<size_t>(k_ * columns_));
    column_sums_.assign(static_cast<size_t>(n_), 0);
    for (int64_t r = 0; r < k_; ++r) {
      for (int64_t j = 0; j < n_; ++j) {
        const int32_t v = raw[static_cast<size_t>(r * n_ + j)] - shift;
        column_sums_[j] += v;
        if (split_) {
          values_[r * columns_ + j] = high_part(v);
          values_[r * columns_ + n_ + j] = low_part(v);
        } else {
          values_[r * columns_ + j] = static_cast<int8_t>(v);
        }
      }
    }
    zero_points_ = expanded(zero_points, n_);
    for (int32_t& zp : zero_points_) {
      zp -= shift;
      has_zero_points_ = has_zero_points_ || zp != 0;
    }
  }

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }

  // consume(row, acc) for each row of A, acc holding the N exact accumulators of
  // (A[row] - a_zp) x (B - b_zp) (int32, wrapping); called from several threads.
  template <typename Consume>
  void run(Int8Data a, int64_t rows, int32_t a_zp, Consume&& consume) const {
    if (split_) a = shifted_to_u8(a, rows * k_, a_zp);
    auto* product = static_cast<int32_t*>(
        dnnl_util::scratch_buffer(dnnl_util::ScratchRole::kInt8Product,
                                  static_cast<size_t>(rows * columns_) * sizeof(int32_t)));
    std::shared_ptr<const Plan> plan = plan_for(rows, a.is_signed);
    {
      const memory src = dnnl_util::rebound_memory(plan->owner, 0, plan->src, a.data);
      const memory dst = dnnl_util::rebound_memory(plan->owner, 1, plan->dst, product);
      const memory weights =
          plan->packed ? packed_[a.is_signed]->memory
                       : dnnl_util::rebound_memory(plan->owner, 2, plan->weights, values_.data());
      dnnl_util::ExecArgs args;
      args.add(DNNL_ARG_SRC, src).add(DNNL_ARG_WEIGHTS, weights).add(DNNL_ARG_DST, dst);
      dnnl_util::execute(plan->primitive, plan->scratchpad, plan->owner, args);
    }
    const int64_t n = n_, k = k_;
    const uint32_t azp = static_cast<uint32_t>(a_zp);
    parallel_for(rows, std::max<int64_t>(1, 8192 / n), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        int32_t* p = product + row * columns_;
        uint32_t rest = 0;  // sum over k of (A[row] - a_zp), for B's zero points
        if (has_zero_points_) {
          int32_t sum = 0;
          if (a.is_signed) {
            const int8_t* ar = static_cast<const int8_t*>(a.data) + row * k;
            for (int64_t i = 0; i < k; ++i) sum += ar[i];
          } else {
            const uint8_t* ar = static_cast<const uint8_t*>(a.data) + row * k;
            for (int64_t i = 0; i < k; ++i) sum += ar[i];
          }
          rest = static_cast<uint32_t>(sum) - static_cast<uint32_t>(k) * azp;
        }
        // In place: the row's accumulators over its raw products (a wide row, GPT-2's
        // 50257-column LM head, stays in cache between this and `consume`).
        integer_epilogue::correct_products(
            p, split_ ? p + n : nullptr, n, a_zp, column_sums_.data(),
            has_zero_points_ ? zero_points_.data() : nullptr, static_cast<int32_t>(rest), p);
        consume(row, static_cast<const int32_t*>(p));
      }
    });
  }

  // y[row, j] = float((A[row] - a_zp) x B[:, j]) * (scales ? scales[j] : scale)
  // (+ bias[j]): oneDNN writes the float products (source zero point applied) straight into
  // y, and the scaling goes over them in place: no int32 product in memory, which for a wide
  // B (GPT-2's 50257-column LM head) is as much traffic again as the output. Only without
  // B zero points and split weights; false (nothing written) then, or when oneDNN has no
  // fast kernel for it.
  bool run_float(Int8Data a, int64_t rows, int32_t a_zp, float scale, const float* scales,
                 const float* bias, float* y) const {
    if (split_ || has_zero_points_) return false;
    std::shared_ptr<const Plan> plan = plan_for(rows, a.is_signed, true);
    if (!plan->supported) return false;
    {
      const memory src = dnnl_util::rebound_memory(plan->owner, 0, plan->src, a.data);
      const memory dst = dnnl_util::rebound_memory(plan->owner, 1, plan->dst, y);
      const memory zp =
          dnnl_util::wrap(memory::desc({1}, memory::data_type::s32, memory::format_tag::x), &a_zp);
      dnnl_util::ExecArgs args;
      args.add(DNNL_ARG_SRC, src)
          .add(DNNL_ARG_WEIGHTS, packed_float_[a.is_signed]->memory)
          .add(DNNL_ARG_DST, dst)
          .add(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp);
      dnnl_util::execute(plan->primitive, plan->scratchpad, plan->owner, args);
    }
    const int64_t n = n_;
    parallel_for(rows, std::max<int64_t>(1, 8192 / n), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        integer_epilogue::scale_floats(y + row * n, n, scale, scales, bias);
      }
    });
    return true;
  }

  // Builds the primitive (and packs B) for `rows` before the first run.
  void prepare(int64_t rows, bool a_signed) const {
    try {
      plan_for(rows, a_signed);
    } catch (const dnnl::error&) {
      // Left to the first run, which reports it naming the node.
    }
  }

 private:
  struct Plan {
    dnnl::matmul primitive;
    memory::desc src, weights, dst, scratchpad;
    bool packed = false;
    bool supported = true;  // float plans: false when oneDNN declined
    uint64_t owner = dnnl_util::new_memory_owner();
  };

  // `float_dst`: run_float's plan, else the int32 product's.
  std::shared_ptr<const Plan> plan_for(int64_t rows, bool a_signed, bool float_dst = false) const {
    std::lock_guard lock(mutex_);
    const std::array<int64_t, 4> key{rows, max_threads(), a_signed, float_dst};
    auto found = plans_.find(key);
    if (found != plans_.end()) return found->second;
    if (plans_.size() >= 64) plans_.clear();
    auto plan = std::make_shared<const Plan>(float_dst ? make_float_plan(rows, a_signed)
                                                       : make_plan(rows, a_signed));
    plans_.emplace(key, plan);
    return plan;
  }

  // Called with mutex_ held: the f32-destination matmul with a run-time source zero point,
  // on B packed once more in the layout that carries its column sums for that zero point
  // (oneDNN's brgemm; with run-time output scales it falls back to slower kernels, so the
  // scales are applied after, in place).
  Plan make_float_plan(int64_t rows, bool a_signed) const {
    Plan plan;
    plan.src = memory::desc({rows, k_}, a_signed ? memory::data_type::s8 : memory::data_type::u8,
                            memory::format_tag::ab);
    plan.dst = memory::desc({rows, n_}, memory::data_type::f32, memory::format_tag::ab);
    dnnl::primitive_attr attr = dnnl_util::user_scratchpad_attr();
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    std::optional<dnnl_util::OwnedMemory>& packed = packed_float_[a_signed];
    try {
      const memory::desc weights =
          packed ? packed->memory.get_desc()
                 : memory::desc({k_, n_}, memory::data_type::s8, memory::format_tag::any);
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(plan.src, weights, plan.dst), attr,
                                            dnnl_util::cpu_engine());
      // Only a JIT kernel: oneDNN 2.6 takes its reference matmul for some shapes and
      // attributes, orders of magnitude slower than the int32 path.
      if (std::string(pd.impl_info_str()).find("ref") != std::string::npos) {
        plan.supported = false;
        return plan;
      }
      if (!packed) {
        packed = dnnl_util::owned_memory(pd.weights_desc());
        dnnl::stream stream = dnnl_util::make_stream();
        memory plain = dnnl_util::wrap(
            memory::desc({k_, n_}, memory::data_type::s8, memory::format_tag::ab), values_.data());
        dnnl::reorder(plain, packed->memory).execute(stream, plain, packed->memory);
        stream.wait();
      }
      plan.weights = pd.weights_desc();
      plan.scratchpad = pd.scratchpad_desc();
      plan.primitive = dnnl::matmul(pd);
      plan.packed = true;
    } catch (const dnnl::error&) {
      plan.supported = false;
    }
    return plan;
  }

  // Called with mutex_ held (it may create packed_).
  // oneDNN packs B per source type (an s8 source adds compensation to the packed layout).
  Plan make_plan(int64_t rows, bool a_signed) const {
    Plan plan;
    plan.src = memory::desc({rows, k_}, a_signed ? memory::data_type::s8 : memory::data_type::u8,
                            memory::format_tag::ab);
    std::optional<dnnl_util::OwnedMemory>& packed = packed_[a_signed];
    plan.dst = memory::desc({rows, columns_}, memory::data_type::s32, memory::format_tag::ab);
    const memory::desc plain({k_, columns_}, memory::data_type::s8, memory::format_tag::ab);
    const dnnl::primitive_attr attr = dnnl_util::user_scratchpad_attr();
    auto make_pd = [&](const memory::desc& weights) {
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(plan.src, weights, plan.dst), attr,
                                          dnnl_util::cpu_engine());
    };
    dnnl::matmul::primitive_desc pd;
    if (!packed) {
      pd = make_pd(memory::desc({k_, columns_}, memory::data_type::s8, memory::format_tag::any));
      packed = dnnl_util::owned_memory(pd.weights_desc());
      dnnl::stream stream = dnnl_util::make_stream();
      memory from = dnnl_util::wrap(plain, values_.data());
      dnnl::reorder(from, packed->memory).execute(stream, from, packed->memory);
      stream.wait();
      plan.packed = true;
    } else {
      try {
        pd = make_pd(packed->memory.get_desc());
        plan.packed = true;
      } catch (const dnnl::error&) {
        pd = make_pd(plain);  // no kernel for that layout at this shape
      }
    }
    plan.weights = pd.weights_desc();
    plan.scratchpad = pd.scratchpad_desc();
    plan.primitive = dnnl::matmul(pd);
    return plan;
  }

  int64_t k_, n_;
  bool split_;
  int64_t columns_;                   // N, or 2N when split (high parts, then low parts)
  std::vector<int8_t> values_;        // [K, columns] plain
  std::vector<int32_t> column_sums_;  // of B - shift, per column
  std::vector<int32_t> zero_points_;  // b_zp - shift, per column
  bool has_zero_points_ = false;
  mutable std::mutex mutex_;
  mutable std::map<std::array<int64_t, 4>, std::shared_ptr<const Plan>> plans_;
  // B packed for a u8 and for an s8 A, written once each, under mutex_.
  mutable std::array<std::optional<dnnl_util::OwnedMemory>, 2> packed_;
  // B packed for run_float (with its column sums for the source zero point), per A type.
  mutable std::array<std::optional<dnnl_util::OwnedMemory>, 2> packed_float_;
};

// ---------------------------------------------------------------------------------------
// X [N, C, spatial...] u8 (zero point x_zp) convolved with constant W [M, C / group, k...].
//
// oneDNN subtracts x_zp itself (a runtime source zero point, which also treats the padding
// as x_zp, as ConvInteger wants). W's zero points come back through one extra output
// channel per group whose weights are all 1: it sums (x - x_zp) over each window, and
// acc = product - w_zp[m] * that sum. Split weights put each group's high parts, then its
// low parts, then that channel in a row.

class Int8Conv {
 public:
  Int8Conv(const ConvAttributes& attrs, const Tensor& w, const std::vector<int32_t>& zero_points,
           bool split)
      : attrs_(attrs),
        w_shape_(w.shape()),
        group_(attrs.group),
        maps_(w.shape()[0]),
        group_maps_(maps_ / group_),
        split_(split) {
    const int shift = w.dtype() == DType::kUInt8 ? 128 : 0;
    zero_points_ = expanded(zero_points, maps_);
    for (int32_t& zp : zero_points_) {
      zp -= shift;
      ones_ = ones_ || zp != 0;
    }
    slots_ = (split_ ? 2 : 1) * group_maps_ + (ones_ ? 1 : 0);
    const int64_t per_map = maps_ == 0 ? 0 : w.numel() / maps_;
    const std::vector<int32_t> raw = int8_values(w);
    values_.assign(static_cast<size_t>(group_ * slots_ * per_map), 0);
    for (int64_t g = 0; g < group_; ++g) {
      int8_t* base = values_.data() + g * slots_ * per_map;
      for (int64_t j = 0; j < group_maps_; ++j) {
        const int32_t* from = raw.data() + (g * group_maps_ + j) * per_map;
        for (int64_t i = 0; i < per_map; ++i) {
          const int32_t v = from[i] - shift;
          if (split_) {
            base[j * per_map + i] = high_part(v);
            base[(group_maps_ + j) * per_map + i] = low_part(v);
          } else {
            base[j * per_map + i] = static_cast<int8_t>(v);
          }
        }
      }
      if (ones_) std::fill_n(base + (slots_ - 1) * per_map, per_map, int8_t{1});
    }
    Dims dims;
    if (group_ > 1) dims.push_back(group_);
    dims.push_back(slots_);
    dims.insert(dims.end(), w_shape_.begin() + 1, w_shape_.end());
    weights_dims_ = dims;
  }

  // The output shape for X of `x_shape`, nullopt when the window does not fit (the
  // reference kernel says why).
  std::optional<Shape> output_shape(const Shape& x_shape) const {
    if (x_shape.size() != w_shape_.size()) return std::nullopt;
    const std::optional<dnnl_util::Window> window =
        dnnl_util::conv_window(attrs_, x_shape, w_shape_);
    if (!window) return std::nullopt;
    return window->y_shape;
  }

  // Whether the accumulators are the product itself (no split, no weight zero points).
  bool direct() const { return !split_ && !ones_; }

  // False when oneDNN has no convolution for this shape (the caller runs the reference).
  // Otherwise calls consume(image, map, first, count, acc) for runs of `count` <= 16
  // output positions of one output channel, acc holding their exact accumulators of
  // (x - x_zp) conv (w - w_zp), from several threads. The primitive writes channels-last
  // int32; each block of positions is transposed in L1 on its way out, which cost a third of
  // an NCHW reorder of the int32 product (ResNet-50: 38 -> ~12 ms per run, one thread).
  template <typename Consume>
  bool run(Int8Data x, const Shape& x_shape, int32_t x_zp, Consume&& consume) const {
    std::shared_ptr<const Plan> plan;
    const int32_t* d = product(x, x_shape, x_zp, plan);
    if (!d) return false;

    constexpr int64_t kBlock = 16;
    const int64_t plane = shape_numel(plan->out_spatial);
    const int64_t images = x_shape[0];
    const int64_t channels = group_ * slots_;
    const int64_t blocks = (plane + kBlock - 1) / kBlock;
    const int64_t min_items = std::max<int64_t>(1, 65536 / (kBlock * channels));
    parallel_for(images * blocks, min_items, [&](int64_t begin, int64_t end) {
      std::vector<int32_t> tile(static_cast<size_t>(channels * kBlock));
      std::vector<int32_t> acc(kBlock);
      for (int64_t item = begin; item < end; ++item) {
        const int64_t image = item / blocks;
        const int64_t first = (item % blocks) * kBlock;
        const int64_t count = std::min(kBlock, plane - first);
        const int32_t* from = d + (image * plane + first) * channels;
        // 16 x 16 sub-blocks keep both sides of the transposition within a few cache lines.
        for (int64_t c0 = 0; c0 < channels; c0 += kBlock) {
          const int64_t width = std::min(kBlock, channels - c0);
          if (width == kBlock && count == kBlock) {
            transpose_16x16(from + c0, channels, tile.data() + c0 * kBlock);
            continue;
          }
          for (int64_t q = 0; q < count; ++q) {
            const int32_t* row = from + q * channels + c0;
            int32_t* column = tile.data() + c0 * kBlock + q;
            for (int64_t c = 0; c < width; ++c) column[c * kBlock] = row[c];
          }
        }
        for (int64_t m = 0; m < maps_; ++m) {
          const int64_t g = m / group_maps_, j = m % group_maps_;
          const int32_t* base = tile.data() + g * slots_ * kBlock;
          const int32_t* high = base + j * kBlock;
          if (direct()) {
            consume(image, m, first, count, high);
            continue;
          }
          const int32_t* low = base + (group_maps_ + j) * kBlock;
          const int32_t* sums = base + (slots_ - 1) * kBlock;
          const uint32_t zp = static_cast<uint32_t>(zero_points_[m]);
          for (int64_t q = 0; q < count; ++q) {
            uint32_t v = split_
                             ? 16u * static_cast<uint32_t>(high[q]) + static_cast<uint32_t>(low[q])
                             : static_cast<uint32_t>(high[q]);
            if (ones_) v -= zp * static_cast<uint32_t>(sums[q]);
            acc[q] = static_cast<int32_t>(v);
          }
          consume(image, m, first, count, acc.data());
        }
      }
    });
    return true;
  }

  // QLinearConv's requantization, when its scales and zero point are constants: oneDNN
  // then writes int8 itself (output scales, destination zero point, int32 bias), a quarter
  // of the int32 product's traffic and no per-block requantization (MobileNetV2: that
  // epilogue was half the time). Rounding as the reference: float(acc + bias) * multiplier
  // to nearest even, plus the zero point, saturated.
  struct Requantization {
    std::vector<float> multipliers;  // per output channel
    std::vector<int32_t> bias;       // per output channel, or empty
    int32_t zero_point = 0;
    bool is_signed = false;  // s8 output
  };
  void set_requantization(Requantization requantization) {
    if (direct()) requantization_ = std::move(requantization);
  }
  bool requantizes() const { return requantization_.has_value(); }

  // With set_requantization: the int8 output at `y` (NCHW, or channels-last after
  // set_channels_last); false as run().
  bool run_requantized(Int8Data x, const Shape& x_shape, int32_t x_zp, void* y) const {
    std::shared_ptr<const Plan> plan = plan_for(x_shape, x.is_signed, x_zp != 0);
    if (!plan->supported) return false;
    const uint64_t owner = plan->owner;
    memory src = source(*plan, x);
    void* d = channels_last_ ? y
                             : dnnl_util::scratch_buffer(dnnl_util::ScratchRole::kInt8Product,
                                                         plan->dst.get_size());
    // Memory objects cached per plan and thread (creating one costs about as much as a
    // small primitive's bookkeeping, and a conv needs up to five).
    const memory dst = dnnl_util::rebound_memory(owner, kDstRole, plan->dst, d);
    dnnl_util::ExecArgs args;
    args.add(DNNL_ARG_SRC, src).add(DNNL_ARG_WEIGHTS, plan->packed_weights).add(DNNL_ARG_DST, dst);
    memory src_zp, bias;
    if (x_zp != 0) {
      src_zp = zero_point_memory(owner, kSrcZeroPointRole, x_zp);
      args.add(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, src_zp);
    }
    if (!requantization_->bias.empty()) {
      bias = dnnl_util::reused_memory(owner, kBiasRole, plan->bias, requantization_->bias.data());
      args.add(DNNL_ARG_BIAS, bias);
    }
    dnnl_util::execute(plan->primitive, plan->scratchpad, owner, args);
    if (channels_last_) return true;
    const int64_t images = x_shape[0], positions = shape_numel(plan->out_spatial);
    for (int64_t n = 0; n < images; ++n) {
      quantize_simd::transpose_bytes(static_cast<const uint8_t*>(d) + n * positions * maps_,
                                     positions, maps_,
                                     static_cast<uint8_t*>(y) + n * positions * maps_);
    }
    return true;
  }

  // X and Y in memory channels-last ([N, spatial..., C]; shapes passed in stay [N, C,
  // spatial...]); call before the first run.
  void set_channels_last() { channels_last_ = true; }

  // Channels-last: as run(), but consume(image, position, acc) gets the accumulators of
  // all output channels of one output position.
  template <typename Consume>
  bool run_rows(Int8Data x, const Shape& x_shape, int32_t x_zp, Consume&& consume) const {
    std::shared_ptr<const Plan> plan;
    const int32_t* d = product(x, x_shape, x_zp, plan);
    if (!d) return false;
    const int64_t rows = x_shape[0] * shape_numel(plan->out_spatial);
    const int64_t plane = shape_numel(plan->out_spatial);
    const int64_t channels = group_ * slots_;
    parallel_for(rows, std::max<int64_t>(1, 8192 / channels), [&](int64_t begin, int64_t end) {
      std::vector<int32_t> acc(static_cast<size_t>(maps_));
      for (int64_t row = begin; row < end; ++row) {
        const int32_t* from = d + row * channels;
        if (direct()) {
          consume(row / plane, row % plane, from);
          continue;
        }
        for (int64_t m = 0; m < maps_; ++m) {
          const int32_t* base = from + (m / group_maps_) * slots_;
          const int64_t j = m % group_maps_;
          uint32_t v = split_ ? 16u * static_cast<uint32_t>(base[j]) +
                                    static_cast<uint32_t>(base[group_maps_ + j])
                              : static_cast<uint32_t>(base[j]);
          if (ones_) {
            v -= static_cast<uint32_t>(zero_points_[m]) * static_cast<uint32_t>(base[slots_ - 1]);
          }
          acc[m] = static_cast<int32_t>(v);
        }
        consume(row / plane, row % plane, acc.data());
      }
    });
    return true;
  }

  // Builds the primitive (and packs W) before the first run.
  void prepare(const Shape& x_shape, bool x_signed, bool x_zero_point) const {
    try {
      plan_for(x_shape, x_signed, x_zero_point);
    } catch (const dnnl::error&) {
    }
  }

 private:
  struct Plan {
    bool supported = false;
    dnnl::convolution_forward primitive;
    memory::desc user_src, src, weights, dst, scratchpad;
    std::optional<dnnl::reorder> src_reorder;
    memory::desc src_reorder_scratchpad;
    bool src_channels_last = false;  // src is plain NHWC: transpose_bytes, not src_reorder
    memory::desc user_dst;           // requantized plans: NCHW int8, transposed from dst
    memory::desc bias;               // requantized plans with a bias: s32 [maps]
    memory packed_weights;           // W in `weights`' layout
    Shape out_spatial;
    uint64_t owner = dnnl_util::new_memory_owner();
  };

  // The primitive's int32 product of X (channels-last, group * slots_ channels) in scratch,
  // with `plan` set; nullptr when oneDNN has no convolution for this shape.
  const int32_t* product(Int8Data x, const Shape& x_shape, int32_t x_zp,
                         std::shared_ptr<const Plan>& plan) const {
    if (split_) x = shifted_to_u8(x, shape_numel(x_shape), x_zp);
    plan = plan_for(x_shape, x.is_signed, x_zp != 0);
    if (!plan->supported) return nullptr;
    memory src = source(*plan, x);
    auto* d = static_cast<int32_t*>(
        dnnl_util::scratch_buffer(dnnl_util::ScratchRole::kInt8Product, plan->dst.get_size()));
    const memory dst = dnnl_util::rebound_memory(plan->owner, kDstRole, plan->dst, d);
    dnnl_util::ExecArgs args;
    args.add(DNNL_ARG_SRC, src).add(DNNL_ARG_WEIGHTS, plan->packed_weights).add(DNNL_ARG_DST, dst);
    memory zp_memory;
    if (x_zp != 0) {
      zp_memory = zero_point_memory(plan->owner, kSrcZeroPointRole, x_zp);
      args.add(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_memory);
    }
    dnnl_util::execute(plan->primitive, plan->scratchpad, plan->owner, args);
    return d;
  }

  // X in the primitive's layout (reordered into scratch when that is not NCHW).
  // Channels-last sources are transposed by quantize_simd::transpose_bytes: oneDNN 2.6's
  // int8 NCHW <-> NHWC reorders (jit:uni) took ~6x longer than MobileNetV2's convolutions.
  memory source(const Plan& plan, Int8Data x) const {
    memory src = dnnl_util::rebound_memory(plan.owner, kSrcRole, plan.user_src, x.data);
    if (!plan.src_reorder && !plan.src_channels_last) return src;
    void* data =
        dnnl_util::scratch_buffer(dnnl_util::ScratchRole::kInt8Reordered, plan.src.get_size());
    memory reordered = dnnl_util::reused_memory(plan.owner, kReorderedRole, plan.src, data);
    if (plan.src_channels_last) {
      const auto& dims = plan.user_src.dims();
      const int64_t images = dims[0], channels = dims[1];
      const int64_t positions = shape_numel(Shape(dims.begin() + 2, dims.end()));
      for (int64_t n = 0; n < images; ++n) {
        quantize_simd::transpose_bytes(
            static_cast<const uint8_t*>(x.data) + n * channels * positions, channels, positions,
            static_cast<uint8_t*>(data) + n * channels * positions);
      }
      return reordered;
    }
    dnnl_util::execute(*plan.src_reorder, plan.src_reorder_scratchpad, plan.owner,
                       dnnl_util::ExecArgs().add(DNNL_ARG_FROM, src).add(DNNL_ARG_TO, reordered));
    return reordered;
  }

  // Roles of the memory objects cached per plan (dnnl_util::reused_memory).
  static constexpr int kSrcRole = 0, kReorderedRole = 1, kDstRole = 2, kBiasRole = 3,
                       kSrcZeroPointRole = 4;

  // A one-value s32 memory holding `value`: the cached object points at this thread's slot,
  // which the call sets before the primitive runs.
  static memory zero_point_memory(uint64_t owner, int role, int32_t value) {
    static const memory::desc one({1}, memory::data_type::s32, memory::format_tag::x);
    thread_local int32_t slot;
    slot = value;
    return dnnl_util::reused_memory(owner, role, one, &slot);
  }

  static memory::format_tag plain_tag(size_t rank) {
    using tag = memory::format_tag;
    return rank == 3 ? tag::ncw : rank == 4 ? tag::nchw : tag::ncdhw;
  }
  static memory::format_tag channels_last_tag(size_t rank) {
    using tag = memory::format_tag;
    return rank == 3 ? tag::nwc : rank == 4 ? tag::nhwc : tag::ndhwc;
  }

  // `x_zero_point`: whether X's zero point is not 0. A zero point of 0 leaves the
  // source zero-point attribute out: oneDNN 2.6 then takes brgconv for kernels larger than
  // 1x1 (with it, only jit_int8: ResNet-50's 3x3 convs at 7x7 and 14x14 ~20% slower), and
  // its 1x1 convs skip the compensation (3-8%).
  std::shared_ptr<const Plan> plan_for(const Shape& x_shape, bool x_signed,
                                       bool x_zero_point) const {
    std::vector<int64_t> key(x_shape.begin(), x_shape.end());
    key.push_back(max_threads());
    key.push_back(x_signed);
    key.push_back(x_zero_point);
    return plans_.get(key, [&] { return make_plan(x_shape, x_signed, x_zero_point); });
  }

  Plan make_plan(const Shape& x_shape, bool x_signed, bool x_zero_point) const {
    Plan plan;
    const size_t rank = x_shape.size();
    if (rank < 3 || rank > 5) return plan;
    const std::optional<dnnl_util::Window> window =
        dnnl_util::conv_window(attrs_, x_shape, w_shape_);
    if (!window) return plan;
    plan.out_spatial.assign(window->y_shape.begin() + 2, window->y_shape.end());
    Dims dst_dims{x_shape[0], group_ * slots_};
    dst_dims.insert(dst_dims.end(), plan.out_spatial.begin(), plan.out_spatial.end());
    const memory::format_tag tag = channels_last_ ? channels_last_tag(rank) : plain_tag(rank);
    using dt = memory::data_type;
    const dt src_type = x_signed ? dt::s8 : dt::u8;
    plan.user_src = memory::desc(dnnl_util::to_dims(x_shape), src_type, tag);
    dnnl::primitive_attr attr = dnnl_util::user_scratchpad_attr();
    if (x_zero_point) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    // Channels-last callers hand over the layout the int8 kernels want; others let oneDNN
    // choose (and transpose into it).
    const memory::desc any_src = channels_last_ ? plan.user_src
                                                : memory::desc(dnnl_util::to_dims(x_shape),
                                                               src_type, memory::format_tag::any);
    const memory::desc any_weights(weights_dims_, dt::s8, memory::format_tag::any);
    dt dst_type = dt::s32;
    memory::desc bias;
    if (requantization_) {
      dst_type = requantization_->is_signed ? dt::s8 : dt::u8;
      plan.user_dst = memory::desc(dst_dims, dst_type, tag);
      const bool per_channel = requantization_->multipliers.size() > 1;
      attr.set_output_scales(per_channel ? 1 << 1 : 0, requantization_->multipliers);
      // Round before the zero point is added, as MLAS does (round(v) + zp): oneDNN adds a
      // destination zero point in float and rounds the sum, which differs at near-ties. So
      // the zero point is a post-op after the rounding (an integer plus an integer, exact in
      // float below 2^24, beyond which both saturate); as a post-op rather than oneDNN's
      // destination zero point it costs ~2% less of a 1x1 conv. Without a zero point the
      // conversion to int8 rounds to nearest even by itself (after saturating, which
      // commutes with that rounding), and the post-ops and their 3-5% are left out
      // (ResNet-50's ReLU outputs all have zero point 0).
      if (requantization_->zero_point != 0) {
        dnnl::post_ops rounding;
        rounding.append_eltwise(1.0f, dnnl::algorithm::eltwise_round, 0.0f, 0.0f);
        rounding.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 1.0f,
                                static_cast<float>(requantization_->zero_point));
        attr.set_post_ops(rounding);
      }
      if (!requantization_->bias.empty())
        bias = memory::desc({maps_}, dt::s32, memory::format_tag::x);
    }
    const memory::desc channels_last_dst(dst_dims, dst_type, channels_last_tag(rank));
    // Named: a primitive descriptor's iterator (next_impl) reads the op descriptor it was
    // made from.
    std::optional<dnnl::convolution_forward::desc> desc;
    dnnl::convolution_forward::primitive_desc pd;
    try {
      desc.emplace(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_src,
                   any_weights, bias, channels_last_dst, window->strides, window->dilations,
                   window->pad_begin, window->pad_end);
      pd = dnnl::convolution_forward::primitive_desc(*desc, attr, dnnl_util::cpu_engine());
    } catch (const dnnl::error&) {
      return plan;  // e.g. no implementation takes a source zero point for this shape
    }
    if (channels_last_ && wants_direct_kernel(plan.out_spatial)) {
      if (std::optional<dnnl::convolution_forward::primitive_desc> direct =
              direct_kernel(*desc, attr)) {
        pd = *direct;
      }
    }
    plan.src = pd.src_desc();
    plan.dst = pd.dst_desc();
    plan.weights = pd.weights_desc();
    plan.scratchpad = pd.scratchpad_desc();
    plan.primitive = dnnl::convolution_forward(pd);
    auto reorder = [&](const memory::desc& from, const memory::desc& to, memory::desc& scratchpad) {
      dnnl::reorder::primitive_desc rpd(dnnl_util::cpu_engine(), from, dnnl_util::cpu_engine(), to,
                                        dnnl_util::user_scratchpad_attr());
      scratchpad = rpd.scratchpad_desc();
      return dnnl::reorder(rpd);
    };
    plan.src_channels_last =
        !channels_last_ &&
        plan.src == memory::desc(dnnl_util::to_dims(x_shape), src_type, channels_last_tag(rank));
    if (plan.src != plan.user_src && !plan.src_channels_last) {
      plan.src_reorder = reorder(plan.user_src, plan.src, plan.src_reorder_scratchpad);
    }
    plan.packed_weights = packed(plan.weights);  // pack now, outside any run
    plan.bias = bias;
    plan.supported = true;
    return plan;
  }

  static bool wants_direct_kernel(const Shape& out_spatial) {
    switch (conv_kernel.load(std::memory_order_relaxed)) {
      case Int8ConvKernel::kBrgemm:
        return false;
      case Int8ConvKernel::kDirect:
        return true;
      case Int8ConvKernel::kByOutputSize:
        break;
    }
    return shape_numel(out_spatial) >= 28 * 28;
  }

  // The first of oneDNN's implementations for `desc` that is neither a brgemm kernel nor a
  // reference or gemm one (which are far slower); nullopt when there is none (below
  // AVX-512 oneDNN lists no brgemm kernel anyway).
  static std::optional<dnnl::convolution_forward::primitive_desc> direct_kernel(
      const dnnl::convolution_forward::desc& desc, const dnnl::primitive_attr& attr) {
    dnnl::convolution_forward::primitive_desc pd(desc, attr, dnnl_util::cpu_engine());
    do {
      const std::string impl = pd.impl_info_str();
      if (impl.find("brg") != std::string::npos) continue;
      if (impl.find("jit") == std::string::npos || impl.find("gemm") != std::string::npos) break;
      return pd;
    } while (pd.next_impl());
    return std::nullopt;
  }

  // W in layout `desc`, reordered once per layout and kept.
  memory packed(const memory::desc& desc) const {
    std::lock_guard lock(packed_mutex_);
    for (const auto& [layout, owned] : packed_) {
      if (layout == desc) return owned.memory;
    }
    using tag = memory::format_tag;
    const size_t rank = weights_dims_.size() - (group_ > 1 ? 1 : 0);
    const tag plain = group_ > 1 ? (rank == 3   ? tag::goiw
                                    : rank == 4 ? tag::goihw
                                                : tag::goidhw)
                                 : (rank == 3   ? tag::oiw
                                    : rank == 4 ? tag::oihw
                                                : tag::oidhw);
    dnnl_util::OwnedMemory owned = dnnl_util::owned_memory(desc);
    dnnl::stream stream = dnnl_util::make_stream();
    memory from =
        dnnl_util::wrap(memory::desc(weights_dims_, memory::data_type::s8, plain), values_.data());
    dnnl::reorder(from, owned.memory).execute(stream, from, owned.memory);
    stream.wait();
    packed_.emplace_back(desc, owned);
    return owned.memory;
  }

  ConvAttributes attrs_;
  Shape w_shape_;
  int64_t group_, maps_, group_maps_;
  bool split_;
  bool channels_last_ = false;        // X and Y channels-last in memory
  bool ones_ = false;                 // some w_zp - shift is not 0: the window-sum channel is there
  int64_t slots_ = 0;                 // output channels per group in the primitive
  std::vector<int8_t> values_;        // [group, slots, C / group, k...]
  std::vector<int32_t> zero_points_;  // w_zp - shift, per output channel
  Dims weights_dims_;
  std::optional<Requantization> requantization_;
  dnnl_util::PlanCache<Plan> plans_;
  mutable std::mutex packed_mutex_;
  mutable std::vector<std::pair<memory::desc, dnnl_util::OwnedMemory>> packed_;
};

// The float product of kernels/int8_kernel_util.h on Int8MatMul.
class Int8MatMulFloatProduct final : public Int8FloatProduct {
 public:
  Int8MatMulFloatProduct(const Tensor& b, const std::vector<int32_t>& zero_points)
      : matmul_(b, zero_points, int8_weights_split()) {}
  int64_t k() const override { return matmul_.k(); }
  int64_t n() const override { return matmul_.n(); }
  void run(Int8Data a, int64_t rows, int32_t a_zp, float scale, const float* scales,
           const float* bias, float* y) const override {
    if (matmul_.run_float(a, rows, a_zp, scale, scales, bias, y)) return;
    const int64_t n = matmul_.n();
    matmul_.run(a, rows, a_zp, [&](int64_t row, const int32_t* acc) {
      integer_epilogue::scale_to_float(acc, n, scale, scales, bias, y + row * n);
    });
  }

 private:
  Int8MatMul matmul_;
};

// ---------------------------------------------------------------------------------------
// Kernels. Each factory returns nullptr (the reference kernel runs the node) unless the
// weights and their parameters are initializers of the shapes handled here.

class MatMulIntegerKernel : public Int8KernelBase {
 public:
  static std::unique_ptr<OpKernel> create(const KernelCreateContext& context) {
    if (!constant_matmul_weights(context, 1, 3)) return nullptr;
    return std::make_unique<MatMulIntegerKernel>(context);
  }

  explicit MatMulIntegerKernel(const KernelCreateContext& context)
      : Int8KernelBase(context),
        matmul_(*constant(context, 1),
                present(context, 3) ? int8_values(*constant(context, 3)) : std::vector<int32_t>{0},
                int8_weights_split()) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const auto rows = rows_of(a, matmul_.k());
    const Tensor* a_zp = context.has_input(2) ? &context.input(2) : nullptr;
    if (!is_int8(a.dtype()) || !rows ||
        (a_zp && (a_zp->numel() != 1 || a_zp->dtype() != a.dtype()))) {
      decline(context);
      return;
    }
    Tensor& out =
        context.allocate_output_uninitialized(0, DType::kInt32, matmul_out_shape(a, matmul_.n()));
    if (out.numel() == 0) return;
    const int32_t zp = a_zp ? int8_scalar(*a_zp) : 0;
    const Int8Data a_data = int8_data(a);
    int32_t* y = out.mutable_data<int32_t>();
    const int64_t n = matmul_.n();
    matmul_.run(a_data, *rows, zp, [&](int64_t row, const int32_t* acc) {
      std::memcpy(y + row * n, acc, static_cast<size_t>(n) * sizeof(int32_t));
    });
  }

 private:
  Int8MatMul matmul_;
};

// y = quantize(float(acc) * (a_scale * b_scale[j] / y_scale), y_zp), as ORT's MLAS and the
// reference kernel compute it.
class QLinearMatMulKernel : public Int8KernelBase {
 public:
  static std::unique_ptr<OpKernel> create(const KernelCreateContext& context) {
    if (!constant_matmul_weights(context, 3, 5)) return nullptr;
    const Tensor* b_scale = constant(context, 4);
    const int64_t n = constant(context, 3)->shape()[1];
    if (!b_scale || b_scale->dtype() != DType::kFloat || !per_channel_shape(*b_scale, n)) {
      return nullptr;
    }
    return std::make_unique<QLinearMatMulKernel>(context);
  }

  explicit QLinearMatMulKernel(const KernelCreateContext& context)
      : Int8KernelBase(context),
        matmul_(*constant(context, 3), int8_values(*constant(context, 5)), int8_weights_split()),
        b_scales_(expanded(float_values(*constant(context, 4)), matmul_.n())) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& a_scale = context.input(1);
    const Tensor& a_zp = context.input(2);
    const Tensor& y_scale = context.input(6);
    const Tensor& y_zp = context.input(7);
    const auto rows = rows_of(a, matmul_.k());
    const bool handled = is_int8(a.dtype()) && rows && a_zp.dtype() == a.dtype() &&
                         a_zp.numel() == 1 && a_scale.dtype() == DType::kFloat &&
                         a_scale.numel() == 1 && y_scale.dtype() == DType::kFloat &&
                         y_scale.numel() == 1 && is_int8(y_zp.dtype()) && y_zp.numel() == 1;
    if (!handled) {
      decline(context);
      return;
    }
    const int64_t n = matmul_.n();
    std::vector<float> multipliers(static_cast<size_t>(n));
    const float as = a_scale.data<float>()[0], ys = y_scale.data<float>()[0];
    for (int64_t j = 0; j < n; ++j) multipliers[j] = as * b_scales_[j] / ys;
    const int32_t out_zp = int8_scalar(y_zp);
    Tensor& out = context.allocate_output_uninitialized(0, y_zp.dtype(), matmul_out_shape(a, n));
    if (out.numel() == 0) return;
    const int32_t zp = int8_scalar(a_zp);
    const Int8Data a_data = int8_data(a);
    if (out.dtype() == DType::kUInt8) {
      uint8_t* y = out.mutable_data<uint8_t>();
      matmul_.run(a_data, *rows, zp, [&](int64_t row, const int32_t* acc) {
        quantize_simd::requantize_u8(acc, n, 0, nullptr, 0, multipliers.data(), out_zp,
                                     y + row * n);
      });
    } else {
      int8_t* y = out.mutable_data<int8_t>();
      matmul_.run(a_data, *rows, zp, [&](int64_t row, const int32_t* acc) {
        quantize_simd::requantize_s8(acc, n, 0, nullptr, 0, multipliers.data(), out_zp,
                                     y + row * n);
      });
    }
  }

 private:
  Int8MatMul matmul_;
  std::vector<float> b_scales_;
};

// The float epilogue of MatMulIntegerToFloat / ConvIntegerToFloat (ops/fused_ops.h):
// y = float(acc) * scale + bias, over `n` outputs of one row / plane whose channel is fixed
// (`channel` >= 0) or the element's index (`channel` < 0, a matmul row).
struct FloatEpilogue {
  const float* scales = nullptr;  // one value, or one per channel
  bool per_channel = false;
  const float* bias = nullptr;  // one per channel, or null

  void apply(const int32_t* acc, int64_t n, int64_t channel, float* y) const {
    if (channel >= 0) {
      const float s = scales[per_channel ? channel : 0];
      const float b = bias ? bias[channel] : 0.0f;
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(acc[i]) * s;
      if (bias) {
        for (int64_t i = 0; i < n; ++i) y[i] += b;
      }
      return;
    }
    integer_epilogue::scale_to_float(acc, n, scales[0], per_channel ? scales : nullptr, bias, y);
  }
};

// Scale (input 4, float, 1 or `channels` values) and Bias (input 5, a constant float with
// `channels` values, optional) at creation: false when not so.
bool float_epilogue_inputs(const KernelCreateContext& context, int64_t channels) {
  if (!present(context, 4)) return false;
  if (present(context, 5)) {
    const Tensor* bias = constant(context, 5);
    if (!bias || bias->dtype() != DType::kFloat || bias->numel() != channels) return false;
  }
  return true;
}

std::vector<float> bias_values(const KernelCreateContext& context) {
  return present(context, 5) ? float_values(*constant(context, 5)) : std::vector<float>{};
}

class MatMulIntegerToFloatKernel : public Int8KernelBase {
 public:
  static std::unique_ptr<OpKernel> create(const KernelCreateContext& context) {
    if (!constant_matmul_weights(context, 1, 3)) return nullptr;
    if (!float_epilogue_inputs(context, constant(context, 1)->shape()[1])) return nullptr;
    return std::make_unique<MatMulIntegerToFloatKernel>(context);
  }

  explicit MatMulIntegerToFloatKernel(const KernelCreateContext& context)
      : Int8KernelBase(context),
        matmul_(*constant(context, 1),
                present(context, 3) ? int8_values(*constant(context, 3)) : std::vector<int32_t>{0},
                int8_weights_split()),
        bias_(bias_values(context)) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const auto rows = rows_of(a, matmul_.k());
    const Tensor* a_zp = context.has_input(2) ? &context.input(2) : nullptr;
    const Tensor& scale = context.input(4);
    const int64_t n = matmul_.n();
    if (!is_int8(a.dtype()) || !rows ||
        (a_zp && (a_zp->numel() != 1 || a_zp->dtype() != a.dtype())) ||
        scale.dtype() != DType::kFloat || (scale.numel() != 1 && scale.numel() != n)) {
      decline(context);
      return;
    }
    Tensor& out = context.allocate_output_uninitialized(0, DType::kFloat, matmul_out_shape(a, n));
    if (out.numel() == 0) return;
    const FloatEpilogue epilogue{scale.data<float>(), scale.numel() != 1,
                                 bias_.empty() ? nullptr : bias_.data()};
    const int32_t zp = a_zp ? int8_scalar(*a_zp) : 0;
    const Int8Data a_data = int8_data(a);
    float* y = out.mutable_data<float>();
    if (matmul_.run_float(a_data, *rows, zp, epilogue.scales[0],
                          epilogue.per_channel ? epilogue.scales : nullptr, epilogue.bias, y)) {
      return;
    }
    matmul_.run(a_data, *rows, zp,
                [&](int64_t row, const int32_t* acc) { epilogue.apply(acc, n, -1, y + row * n); });
  }

 private:
  Int8MatMul matmul_;
  std::vector<float> bias_;
};

// Conv weights: constant int8 W of rank 3..5 whose zero point (input `zp_index`, optional)
// is a constant per tensor or per output channel.
bool constant_conv_weights(const KernelCreateContext& context, size_t w_index, size_t zp_index) {
  const Tensor* w = constant(context, w_index);
  if (!w || w->rank() < 3 || w->rank() > 5 || !is_int8(w->dtype()) || w->numel() == 0) {
    return false;
  }
  if (present(context, zp_index)) {
    const Tensor* zp = constant(context, zp_index);
    if (!zp || zp->dtype() != w->dtype() || !per_channel_shape(*zp, w->shape()[0])) return false;
  }
  return true;
}

std::unique_ptr<Int8Conv> make_conv(const KernelCreateContext& context, size_t w_index,
                                    size_t zp_index) {
  const ConvAttributes attrs(context);
  const Tensor& w = *constant(context, w_index);
  if (attrs.group < 1 || w.shape()[0] % attrs.group != 0) return nullptr;
  return std::make_unique<Int8Conv>(attrs, w,
                                    present(context, zp_index)
                                        ? int8_values(*constant(context, zp_index))
                                        : std::vector<int32_t>{0},
                                    int8_weights_split());
}

class ConvIntegerKernel : public Int8KernelBase {
 public:
  static std::unique_ptr<OpKernel> create(const KernelCreateContext& context) {
    if (!constant_conv_weights(context, 1, 3)) return nullptr;
    std::unique_ptr<Int8Conv> conv = make_conv(context, 1, 3);
    if (!conv) return nullptr;
    return std::make_unique<ConvIntegerKernel>(context, std::move(conv));
  }

  ConvIntegerKernel(const KernelCreateContext& context, std::unique_ptr<Int8Conv> conv)
      : Int8KernelBase(context), conv_(std::move(conv)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor* x_zp = context.has_input(2) ? &context.input(2) : nullptr;
    const std::optional<Shape> out_shape = conv_->output_shape(x.shape());
    if (!is_int8(x.dtype()) || !out_shape ||
        (x_zp && (x_zp->numel() != 1 || x_zp->dtype() != x.dtype()))) {
      decline(context);
      return;
    }
    Tensor& out = context.allocate_output_uninitialized(0, DType::kInt32, *out_shape);
    if (out.numel() == 0) return;
    const int32_t zp = x_zp ? int8_scalar(*x_zp) : 0;
    const Int8Data x_data = int8_data(x);
    int32_t* y = out.mutable_data<int32_t>();
    const int64_t plane = shape_numel(Shape(out_shape->begin() + 2, out_shape->end()));
    const int64_t maps = (*out_shape)[1];
    const bool ran =
        conv_->run(x_data, x.shape(), zp,
                   [&](int64_t image, int64_t m, int64_t first, int64_t count, const int32_t* acc) {
                     std::memcpy(y + (image * maps + m) * plane + first, acc,
                                 static_cast<size_t>(count) * sizeof(int32_t));
                   });
    if (!ran) decline(context);
  }

 private:
  std::unique_ptr<const Int8Conv> conv_;
};

// y = quantize(float(acc + B[m]) * (x_scale * w_scale[m] / y_scale), y_zp), as ORT's MLAS
// and the reference kernel compute it. kChannelsLast: com.onnxkit ChannelsLastQLinearConv,
// X and Y [N, spatial..., C].
template <bool kChannelsLast>
class QLinearConvKernel : public Int8KernelBase {
 public:
  static std::unique_ptr<OpKernel> create(const KernelCreateContext& context) {
    if (!constant_conv_weights(context, 3, 5)) return nullptr;
    const int64_t maps = constant(context, 3)->shape()[0];
    const Tensor* w_scale = constant(context, 4);
    if (!w_scale || w_scale->dtype() != DType::kFloat || !per_channel_shape(*w_scale, maps)) {
      return nullptr;
    }
    if (present(context, 8)) {
      const Tensor* bias = constant(context, 8);
      if (!bias || bias->dtype() != DType::kInt32 || bias->numel() != maps) return nullptr;
    }
    std::unique_ptr<Int8Conv> conv = make_conv(context, 3, 5);
    if (!conv) return nullptr;
    if (kChannelsLast) conv->set_channels_last();
    auto kernel = std::make_unique<QLinearConvKernel>(context, std::move(conv));
    if (kChannelsLast) kernel->depthwise_ = make_depthwise(context);
    return kernel;
  }

  QLinearConvKernel(const KernelCreateContext& context, std::unique_ptr<Int8Conv> conv)
      : Int8KernelBase(context),
        w_scales_(expanded(float_values(*constant(context, 4)), constant(context, 3)->shape()[0])) {
    if (present(context, 8)) {
      const Tensor& bias = *constant(context, 8);
      bias_.assign(bias.data<int32_t>(), bias.data<int32_t>() + bias.numel());
    }
    // Constant x_scale, y_scale and y_zero_point: oneDNN requantizes (Int8Conv).
    const Tensor* x_scale = constant(context, 1);
    const Tensor* y_scale = constant(context, 6);
    const Tensor* y_zp = constant(context, 7);
    if (x_scale && y_scale && y_zp && x_scale->dtype() == DType::kFloat && x_scale->numel() == 1 &&
        y_scale->dtype() == DType::kFloat && y_scale->numel() == 1 && is_int8(y_zp->dtype()) &&
        y_zp->numel() == 1) {
      Int8Conv::Requantization requantization;
      const float xs = x_scale->data<float>()[0], ys = y_scale->data<float>()[0];
      for (float ws : w_scales_) requantization.multipliers.push_back(xs * ws / ys);
      requantization.bias = bias_;
      requantization.zero_point = int8_scalar(*y_zp);
      requantization.is_signed = y_zp->dtype() == DType::kInt8;
      conv->set_requantization(std::move(requantization));
    }
    conv_ = std::move(conv);
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& x_scale = context.input(1);
    const Tensor& x_zp = context.input(2);
    const Tensor& y_scale = context.input(6);
    const Tensor& y_zp = context.input(7);
    // Int8Conv plans in [N, C, spatial...] whatever the memory layout.
    const Shape x_shape = kChannelsLast && x.rank() >= 3 ? channels_first(x.shape()) : x.shape();
    const std::optional<Shape> out_shape = conv_->output_shape(x_shape);
    const bool handled = is_int8(x.dtype()) && out_shape && x_zp.dtype() == x.dtype() &&
                         x_zp.numel() == 1 && x_scale.dtype() == DType::kFloat &&
                         x_scale.numel() == 1 && y_scale.dtype() == DType::kFloat &&
                         y_scale.numel() == 1 && is_int8(y_zp.dtype()) && y_zp.numel() == 1;
    if (!handled) {
      decline(context);
      return;
    }
    const int64_t maps = (*out_shape)[1];
    const int32_t out_zp = int8_scalar(y_zp);
    Tensor& out = context.allocate_output_uninitialized(
        0, y_zp.dtype(), kChannelsLast ? channels_last(*out_shape) : *out_shape);
    if (out.numel() == 0) return;
    const int32_t zp = int8_scalar(x_zp);
    const Int8Data x_data = int8_data(x);
    const bool depthwise = depthwise_ && x.rank() == 4 && x_shape[1] == depthwise_->w_shape[0];
    if (!depthwise && conv_->requantizes()) {
      if (!conv_->run_requantized(x_data, x_shape, zp, out.mutable_raw_data())) decline(context);
      return;
    }
    std::vector<float> multipliers(static_cast<size_t>(maps));
    const float xs = x_scale.data<float>()[0], ys = y_scale.data<float>()[0];
    for (int64_t m = 0; m < maps; ++m) multipliers[m] = xs * w_scales_[m] / ys;
    if (depthwise) {
      const std::optional<dnnl_util::Window> window =
          dnnl_util::conv_window(depthwise_->attrs, x_shape, depthwise_->w_shape);
      if (window) {
        const Int8DepthwiseConv::Geometry geometry{
            x_shape[0],         x_shape[2],           x_shape[3],          window->y_shape[2],
            window->y_shape[3], window->pad_begin[0], window->pad_begin[1]};
        depthwise_->conv.run(x_data.data, x_data.is_signed, zp, geometry,
                             {multipliers.data(), bias_.empty() ? nullptr : bias_.data(), out_zp,
                              y_zp.dtype() == DType::kInt8},
                             out.mutable_raw_data());
        return;
      }
    }
    if (conv_->requantizes()) {
      if (!conv_->run_requantized(x_data, x_shape, zp, out.mutable_raw_data())) decline(context);
      return;
    }
    if constexpr (kChannelsLast) {
      const int32_t* biases = bias_.empty() ? nullptr : bias_.data();
      const int64_t plane = shape_numel(Shape(out_shape->begin() + 2, out_shape->end()));
      auto write = [&](auto* y, auto requantize) {
        return conv_->run_rows(x_data, x_shape, zp,
                               [&](int64_t image, int64_t position, const int32_t* acc) {
                                 requantize(acc, maps, 0, biases, 0.0f, multipliers.data(), out_zp,
                                            y + (image * plane + position) * maps);
                               });
      };
      const bool ran = out.dtype() == DType::kUInt8
                           ? write(out.mutable_data<uint8_t>(), quantize_simd::requantize_u8)
                           : write(out.mutable_data<int8_t>(), quantize_simd::requantize_s8);
      if (!ran) decline(context);
      return;
    }
    const int64_t plane = shape_numel(Shape(out_shape->begin() + 2, out_shape->end()));
    auto write = [&](auto* y, auto requantize) {
      return conv_->run(
          x_data, x_shape, zp,
          [&](int64_t image, int64_t m, int64_t first, int64_t count, const int32_t* acc) {
            requantize(acc, count, bias_.empty() ? 0 : bias_[m], nullptr, multipliers[m], nullptr,
                       out_zp, y + (image * maps + m) * plane + first);
          });
    };
    const bool ran = out.dtype() == DType::kUInt8
                         ? write(out.mutable_data<uint8_t>(), quantize_simd::requantize_u8)
                         : write(out.mutable_data<int8_t>(), quantize_simd::requantize_s8);
    if (!ran) decline(context);
  }

 private:
  // onnxkit's depthwise kernel (kernels/int8_depthwise.h) where it takes the node: group ==
  // input channels == output channels, W [C, 1, k, k] with k 3 or 5, strides 1 or 2,
  // dilation 1.
  struct Depthwise {
    ConvAttributes attrs;
    Shape w_shape;
    Int8DepthwiseConv conv;
  };
  static std::unique_ptr<const Depthwise> make_depthwise(const KernelCreateContext& context) {
    const ConvAttributes attrs(context);
    const Tensor& w = *constant(context, 3);
    const Shape& shape = w.shape();
    if (w.rank() != 4 || shape[1] != 1 || attrs.group != shape[0]) return nullptr;
    if (!attrs.kernel_shape.empty() && attrs.kernel_shape != Shape{shape[2], shape[3]}) {
      return nullptr;
    }
    if ((!attrs.strides.empty() && attrs.strides.size() != 2) ||
        (!attrs.dilations.empty() && attrs.dilations.size() != 2)) {
      return nullptr;
    }
    if (!Int8DepthwiseConv::handles(shape[2], shape[3], attrs.stride(0), attrs.stride(1),
                                    attrs.dilation(0), attrs.dilation(1))) {
      return nullptr;
    }
    const std::vector<int32_t> zero_points =
        present(context, 5) ? expanded(int8_values(*constant(context, 5)), shape[0])
                            : std::vector<int32_t>(static_cast<size_t>(shape[0]), 0);
    return std::make_unique<const Depthwise>(
        Depthwise{attrs, shape,
                  Int8DepthwiseConv(shape[0], shape[2], shape[3], attrs.stride(0), attrs.stride(1),
                                    int8_values(w), zero_points)});
  }

  std::unique_ptr<const Int8Conv> conv_;
  std::unique_ptr<const Depthwise> depthwise_;
  std::vector<float> w_scales_;
  std::vector<int32_t> bias_;
};

class ConvIntegerToFloatKernel : public Int8KernelBase {
 public:
  static std::unique_ptr<OpKernel> create(const KernelCreateContext& context) {
    if (!constant_conv_weights(context, 1, 3)) return nullptr;
    if (!float_epilogue_inputs(context, constant(context, 1)->shape()[0])) return nullptr;
    std::unique_ptr<Int8Conv> conv = make_conv(context, 1, 3);
    if (!conv) return nullptr;
    return std::make_unique<ConvIntegerToFloatKernel>(context, std::move(conv));
  }

  ConvIntegerToFloatKernel(const KernelCreateContext& context, std::unique_ptr<Int8Conv> conv)
      : Int8KernelBase(context), conv_(std::move(conv)), bias_(bias_values(context)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor* x_zp = context.has_input(2) ? &context.input(2) : nullptr;
    const Tensor& scale = context.input(4);
    const std::optional<Shape> out_shape = conv_->output_shape(x.shape());
    if (!is_int8(x.dtype()) || !out_shape ||
        (x_zp && (x_zp->numel() != 1 || x_zp->dtype() != x.dtype())) ||
        scale.dtype() != DType::kFloat ||
        (scale.numel() != 1 && scale.numel() != (*out_shape)[1])) {
      decline(context);
      return;
    }
    Tensor& out = context.allocate_output_uninitialized(0, DType::kFloat, *out_shape);
    if (out.numel() == 0) return;
    const FloatEpilogue epilogue{scale.data<float>(), scale.numel() != 1,
                                 bias_.empty() ? nullptr : bias_.data()};
    const int32_t zp = x_zp ? int8_scalar(*x_zp) : 0;
    const Int8Data x_data = int8_data(x);
    float* y = out.mutable_data<float>();
    const int64_t plane = shape_numel(Shape(out_shape->begin() + 2, out_shape->end()));
    const int64_t maps = (*out_shape)[1];
    const bool ran =
        conv_->run(x_data, x.shape(), zp,
                   [&](int64_t image, int64_t m, int64_t first, int64_t count, const int32_t* acc) {
                     epilogue.apply(acc, count, m, y + (image * maps + m) * plane + first);
                   });
    if (!ran) decline(context);
  }

 private:
  std::unique_ptr<const Int8Conv> conv_;
  std::vector<float> bias_;
};

}  // namespace

std::unique_ptr<const Int8FloatProduct> make_int8_float_product(
    const Tensor& b, const std::vector<int32_t>& zero_points) {
  return std::make_unique<Int8MatMulFloatProduct>(b, zero_points);
}

void register_dnnl_int8_kernels(OpRegistry& registry) {
  registry.add_optimized("", "MatMulInteger", 10, MatMulIntegerKernel::create);
  registry.add_optimized("", "QLinearMatMul", 10, QLinearMatMulKernel::create);
  registry.add_optimized("", "QLinearMatMul", 21, QLinearMatMulKernel::create);
  registry.add_optimized("", "ConvInteger", 10, ConvIntegerKernel::create);
  registry.add_optimized("", "QLinearConv", 10, QLinearConvKernel<false>::create);
  const std::string domain(kOnnxkitDomain);
  registry.add_optimized(domain, "MatMulIntegerToFloat", 1, MatMulIntegerToFloatKernel::create);
  registry.add_optimized(domain, "ConvIntegerToFloat", 1, ConvIntegerToFloatKernel::create);
  registry.add_optimized(domain, std::string(kChannelsLastQLinearConv), 1,
                         QLinearConvKernel<true>::create);
  register_int8_microsoft_kernels(registry);
}

}  // namespace onnxkit

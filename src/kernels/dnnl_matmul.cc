// oneDNN MatMul, Gemm and com.onnxkit FusedMatMul on float32; other dtypes (and the cases
// oneDNN cannot express) go to the reference kernel of the same node.
//
// All three are one call shape: Y = act(alpha * op(A) @ op(B) + addend), where the addend is
// a row vector [N] (Gemm's C of [N], FusedMatMul's Bias: a oneDNN bias, or a binary post-op
// when alpha scales the product) or a full tensor written into Y first and added by a sum
// post-op (Gemm's other C shapes). Transposes are strides, batch broadcasting is oneDNN's
// (a batch dim of 1 in one operand), and a B without batch dims folds A's batch into M.
//
// A constant B (an initializer: weights) is reordered once into the blocked layout the
// primitive prefers, when the first primitive is built: at creation when A's shape is
// static, else on the first run; later shapes reuse that layout.
#include "kernels/dnnl_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include <immintrin.h>

#include "core/parallel.h"
#include "kernels/vector_math.h"
#include "ops/fused_ops.h"
#include "ops/matmul_shape.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {

namespace dnnl_util {
namespace {

// A 64-byte aligned buffer that only grows.
class Scratchpad {
 public:
  void* reserve(size_t bytes) {
    if (bytes > size_) {
      bytes = (bytes + 63) / 64 * 64;
      void* data = std::aligned_alloc(64, bytes);
      if (!data) throw std::bad_alloc();
      data_.reset(data);
      size_ = bytes;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(void* data) const { std::free(data); }
  };
  std::unique_ptr<void, Free> data_;
  size_t size_ = 0;
};

}  // namespace

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void execute(const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad, uint64_t owner,
             ExecArgs args) {
  thread_local Scratchpad buffer;
  thread_local dnnl::stream stream = make_stream();
  dnnl::memory scratch;
  if (const size_t bytes = scratchpad.get_size(); bytes > 0) {
    scratch = rebound_memory(owner, kScratchpadRole, scratchpad, buffer.reserve(bytes));
    args.add(DNNL_ARG_SCRATCHPAD, scratch);
  }
  args.execute(primitive, stream);
  stream.wait();
}

}  // namespace dnnl_util

namespace {

using dnnl::memory;
using Dims = memory::dims;

// Row-major strides of `dims`, or those of its last two dims swapped in memory.
Dims dense_strides(const Dims& dims, bool transposed) {
  const size_t rank = dims.size();
  Dims physical = dims;
  if (transposed) std::swap(physical[rank - 1], physical[rank - 2]);
  Dims strides(rank, 1);
  for (size_t i = rank - 1; i-- > 0;) {
    strides[i] = strides[i + 1] * std::max<memory::dim>(physical[i + 1], 1);
  }
  if (transposed) std::swap(strides[rank - 1], strides[rank - 2]);
  return strides;
}

memory::desc f32_desc(const Dims& dims, bool transposed = false) {
  return memory::desc(dims, memory::data_type::f32, dense_strides(dims, transposed));
}

// ---------------------------------------------------------------------------------------
// One row against one 32-column panel of B packed as BA16a32b: [padded K][32] floats.

// GCC 12 warns inside its own AVX-512 headers (GCC bug 105593) where the intrinsics inline.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// sums[q * 32 + j] = sum over i < k of x[i] * panels[q * stride + i * 32 + j], q < kCount:
// two panels streamed side by side (one stream at a time ran ~15% below oneDNN's one-row
// speed on cold weights, two matched it; four fell behind), k unrolled by two.
template <int kCount>
__attribute__((target("avx512f"))) void row_times_panels_avx512(const float* x, const float* panels,
                                                                int64_t stride, int64_t k,
                                                                float* sums) {
  __m512 acc[kCount][4];
  for (int q = 0; q < kCount; ++q) {
    for (int v = 0; v < 4; ++v) acc[q][v] = _mm512_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 2 <= k; i += 2) {
    const __m512 x0 = _mm512_set1_ps(x[i]), x1 = _mm512_set1_ps(x[i + 1]);
    for (int q = 0; q < kCount; ++q) {
      const float* w = panels + q * stride + i * 32;
      acc[q][0] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(w), acc[q][0]);
      acc[q][1] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(w + 16), acc[q][1]);
      acc[q][2] = _mm512_fmadd_ps(x1, _mm512_loadu_ps(w + 32), acc[q][2]);
      acc[q][3] = _mm512_fmadd_ps(x1, _mm512_loadu_ps(w + 48), acc[q][3]);
    }
  }
  if (i < k) {
    const __m512 xi = _mm512_set1_ps(x[i]);
    for (int q = 0; q < kCount; ++q) {
      const float* w = panels + q * stride + i * 32;
      acc[q][0] = _mm512_fmadd_ps(xi, _mm512_loadu_ps(w), acc[q][0]);
      acc[q][1] = _mm512_fmadd_ps(xi, _mm512_loadu_ps(w + 16), acc[q][1]);
    }
  }
  for (int q = 0; q < kCount; ++q) {
    _mm512_storeu_ps(sums + q * 32, _mm512_add_ps(acc[q][0], acc[q][2]));
    _mm512_storeu_ps(sums + q * 32 + 16, _mm512_add_ps(acc[q][1], acc[q][3]));
  }
}

#pragma GCC diagnostic pop

// ---------------------------------------------------------------------------------------
// Shapes: op(A) @ op(B) as ONNX defines it and as oneDNN computes it.

struct MatMulDims {
  Shape out_shape;  // the ONNX output shape
  int64_t m = 0, n = 0, k = 0;
  // oneDNN's view, one rank for all three: batch dims broadcast through 1s.
  Dims src, weights, dst;
  bool src_transposed = false, weights_transposed = false;
  bool rows_probed = false;  // A's unknown dims were read as 1 (static_dims)
};

bool dims_fit_onednn(const MatMulDims& dims) {
  return dnnl_util::dims_fit_int32({dims.src, dims.weights, dims.dst});
}

// Fails naming `node` on shapes MatMul's rules reject (matmul_shape). `trans_*` swap the
// last two dims of operands of rank >= 2.
MatMulDims matmul_dims(const Node& node, const Shape& a, const Shape& b, bool trans_a,
                       bool trans_b) {
  MatMulShape shape = matmul_shape(node, a, b, trans_a, trans_b);
  MatMulDims dims;
  dims.out_shape = std::move(shape.out);
  dims.m = shape.m;
  dims.k = shape.k;
  dims.n = shape.n;
  dims.src_transposed = shape.trans_a;
  dims.weights_transposed = shape.trans_b;
  const Shape& a_batch = shape.a_batch;
  const Shape& b_batch = shape.b_batch;
  const Shape& batch = shape.batch;

  const int64_t a_count = shape_numel(a_batch), b_count = shape_numel(b_batch);
  if (b_count == 1 && (a_count == 1 || !dims.src_transposed)) {
    // One B matrix: A's batches stack into one tall product (the weights case).
    const int64_t rows = a_count * dims.m;
    dims.src = {rows, dims.k};
    dims.weights = {dims.k, dims.n};
    dims.dst = {rows, dims.n};
    return dims;
  }
  auto padded = [&](const Shape& part, int64_t rows, int64_t cols) {
    Dims out(batch.size() - part.size(), 1);
    out.insert(out.end(), part.begin(), part.end());
    out.push_back(rows);
    out.push_back(cols);
    return out;
  };
  dims.src = padded(a_batch, dims.m, dims.k);
  dims.weights = padded(b_batch, dims.k, dims.n);
  dims.dst = padded(batch, dims.m, dims.n);
  return dims;
}

// ---------------------------------------------------------------------------------------
// The oneDNN matmul behind all three kernels.

enum class Addend {
  kNone,
  kRow,  // a [N] vector added to every row
  kSum,  // Y already holds the addend; scaled by MatMulSpec::sum_scale
};

struct MatMulSpec {
  bool trans_a = false, trans_b = false;
  float alpha = 1;
  float sum_scale = 1;  // for Addend::kSum
  ActivationFunction activation;
};

class DnnlMatMul {
 public:
  // `constant_b`: B when it is an initializer (float32), to prepack.
  DnnlMatMul(MatMulSpec spec, std::optional<Tensor> constant_b)
      : spec_(std::move(spec)),
        own_activation_(dnnl_util::computed_activation(spec_.activation)),
        constant_b_(std::move(constant_b)) {}

  // out = act(alpha * op(A) @ op(B) + addend); `out` has dims.out_shape (for kSum it
  // already holds the addend); `row` holds N floats for kRow.
  void run(const KernelContext& context, const MatMulDims& dims, const Tensor& a, const Tensor& b,
           Addend addend, const float* row, Tensor& out) const {
    const bool packed_b = constant_b_ && dims.weights.size() == 2 &&
                          b.raw_data() == constant_b_->raw_data() &&
                          b.shape() == constant_b_->shape();
    if (packed_b && dims.src.size() == 2 && dims.src[0] == 1 && !dims.src_transposed &&
        addend != Addend::kSum && run_one_row(dims, a, row, out)) {
      return;
    }
    try {
      std::shared_ptr<const Plan> plan = plan_for(dims, addend, packed_b);
      auto bound = [&](Plan::Role role, const memory::desc& desc, const void* data) {
        return dnnl_util::rebound_memory(plan->owner, role, desc, data);
      };
      const memory src = bound(Plan::kSrc, plan->src, a.raw_data());
      const memory dst = bound(Plan::kDst, plan->dst, out.mutable_raw_data());
      const memory weights =
          plan->packed ? *packed_ : bound(Plan::kWeights, plan->weights, b.raw_data());
      dnnl_util::ExecArgs args;
      args.add(DNNL_ARG_SRC, src).add(DNNL_ARG_WEIGHTS, weights).add(DNNL_ARG_DST, dst);
      memory row_memory;
      if (addend == Addend::kRow) {
        row_memory = bound(Plan::kRow, plan->row, row);
        args.add(plan->row_arg, row_memory);
      }
      dnnl_util::execute(plan->primitive, plan->scratchpad, plan->owner, args);
    } catch (const dnnl::error& e) {
      context.fail("oneDNN matmul {} x {}: {}", shape_to_string(a.shape()),
                   shape_to_string(b.shape()), e.what());
    }
    if (own_activation_) {
      dnnl_util::apply_activation_in_place(*own_activation_, out.mutable_data<float>(),
                                           out.numel());
    }
  }

  // One row of A against B packed in 32-column panels (see packed_weights_tag): a
  // memory-bound product that streams each panel once, run here instead of by oneDNN,
  // which ran it 5-15% slower from that layout than from its own. False when B is not
  // packed that way (yet) or the kernels run below AVX-512 (active_simd_level).
  bool run_one_row(const MatMulDims& dims, const Tensor& a, const float* row, Tensor& out) const {
    const float* panels = nullptr;
    int64_t padded_k = 0;
    {
      std::lock_guard lock(mutex_);
      if (!packed_ || !one_row_panels_ || active_simd_level() != SimdLevel::kAvx512) return false;
      panels = static_cast<const float*>(packed_->get_data_handle());
      padded_k = packed_->get_desc().data.padded_dims[0];
    }
    const int64_t k = dims.k, n = dims.n;
    const float* x = a.data<float>();
    float* y = out.mutable_data<float>();
    const float alpha = spec_.alpha;
    constexpr int64_t kPanel = 32;
    const int64_t count = (n + kPanel - 1) / kPanel;
    const int64_t min_panels = std::max<int64_t>(1, (64 * 1024) / (padded_k * kPanel));
    const int64_t stride = padded_k * kPanel;
    parallel_for(count, min_panels, [&](int64_t begin, int64_t end) {
      alignas(64) float sums[2 * kPanel];
      for (int64_t p = begin; p < end;) {
        const int64_t pair = std::min<int64_t>(2, end - p);
        if (pair == 2) {
          row_times_panels_avx512<2>(x, panels + p * stride, stride, k, sums);
        } else {
          row_times_panels_avx512<1>(x, panels + p * stride, stride, k, sums);
        }
        const int64_t n0 = p * kPanel, width = std::min(pair * kPanel, n - n0);
        for (int64_t j = 0; j < width; ++j) {
          y[n0 + j] = alpha * sums[j] + (row ? row[n0 + j] : 0.0f);
        }
        p += pair;
      }
    });
    if (own_activation_) {
      dnnl_util::apply_activation_in_place(*own_activation_, y, n);
    } else {
      spec_.activation.apply(y, n);
    }
    return true;
  }

  // Builds (and prepacks for) the plan of a shape known before the first run.
  void prepare(const MatMulDims& dims, Addend addend) const {
    try {
      plan_for(dims, addend, constant_b_ && dims.weights.size() == 2, !dims.rows_probed);
    } catch (const dnnl::error&) {
      // Left to the first run, which reports it naming the node.
    }
  }

 private:
  struct Plan {
    enum Role { kSrc, kWeights, kDst, kRow };  // of its cached memory objects
    dnnl::matmul primitive;
    memory::desc src, weights, dst, row, scratchpad;
    bool packed = false;  // weights are packed_
    int row_arg = DNNL_ARG_BIAS;
    uint64_t owner = dnnl_util::new_memory_owner();
  };

  std::shared_ptr<const Plan> plan_for(const MatMulDims& dims, Addend addend, bool packed_b,
                                       bool rows_known = true) const {
    std::vector<int64_t> key(dims.src.begin(), dims.src.end());
    key.push_back(-1);
    key.insert(key.end(), dims.weights.begin(), dims.weights.end());
    key.push_back(static_cast<int64_t>(addend));
    key.push_back(packed_b);
    key.push_back(dims.src_transposed);
    key.push_back(dims.weights_transposed);
    std::lock_guard lock(mutex_);
    auto found = plans_.find(key);
    if (found != plans_.end()) return found->second;
    // Shapes change rarely within a session; a model with ever new shapes should not grow
    // this without bound (oneDNN's own primitive cache makes a rebuild cheap).
    if (plans_.size() >= 64) plans_.clear();
    auto plan = std::make_shared<Plan>(make_plan(dims, addend, packed_b, rows_known));
    plans_.emplace(std::move(key), plan);
    return plan;
  }

  // Called with mutex_ held (it may create packed_).
  Plan make_plan(const MatMulDims& dims, Addend addend, bool packed_b, bool rows_known) const {
    Plan plan;
    plan.src = f32_desc(dims.src, dims.src_transposed);
    plan.dst = f32_desc(dims.dst);
    const memory::desc plain_weights = f32_desc(dims.weights, dims.weights_transposed);

    dnnl::primitive_attr attr = dnnl_util::user_scratchpad_attr();
    if (spec_.alpha != 1.0f) attr.set_output_scales(0, {spec_.alpha});
    // oneDNN adds its bias before the output scale; a scaled product adds the row after.
    Dims row_dims(dims.dst.size(), 1);
    row_dims.back() = dims.n;
    memory::desc bias;
    dnnl::post_ops post_ops;
    if (addend == Addend::kRow) {
      plan.row = f32_desc(row_dims);
      if (spec_.alpha == 1.0f) {
        bias = plan.row;
      } else {
        post_ops.append_binary(dnnl::algorithm::binary_add, plan.row);
        plan.row_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1;
      }
    } else if (addend == Addend::kSum) {
      post_ops.append_sum(spec_.sum_scale);
    }
    if (!own_activation_) dnnl_util::append_activation(post_ops, spec_.activation);
    attr.set_post_ops(post_ops);

    auto make_pd = [&](const memory::desc& weights) {
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(plan.src, weights, bias, plan.dst),
                                          attr, dnnl_util::cpu_engine());
    };
    dnnl::matmul::primitive_desc pd;
    if (packed_b && !packed_) {
      // First plan: choose the layout, then reorder the weights into it once.
      const memory::format_tag tag = packed_weights_tag(dims, rows_known);
      try {
        pd = make_pd(memory::desc(dims.weights, memory::data_type::f32, tag));
      } catch (const dnnl::error&) {
        pd = make_pd(memory::desc(dims.weights, memory::data_type::f32, memory::format_tag::any));
      }
      one_row_panels_ = pd.weights_desc() == memory::desc(dims.weights, memory::data_type::f32,
                                                          memory::format_tag::BA16a32b);
      packed_storage_ = dnnl_util::owned_memory(pd.weights_desc());
      packed_ = packed_storage_.memory;
      dnnl::stream stream = dnnl_util::make_stream();
      memory plain = dnnl_util::wrap(plain_weights, constant_b_->raw_data());
      constant_b_->populate_mapped_pages();
      dnnl::reorder(plain, *packed_).execute(stream, plain, *packed_);
      stream.wait();
      constant_b_->release_mapped_pages();  // the packed copy is what runs read
      plan.packed = true;
    } else if (packed_b) {
      try {
        pd = make_pd(packed_->get_desc());
        plan.packed = true;
      } catch (const dnnl::error&) {
        pd = make_pd(plain_weights);  // this shape has no kernel for that layout
      }
    } else {
      pd = make_pd(plain_weights);
    }
    plan.weights = pd.weights_desc();
    plan.scratchpad = pd.scratchpad_desc();
    plan.primitive = dnnl::matmul(pd);
    return plan;
  }

  // The packed layout of constant B. oneDNN's own choice (`any`: 64-column blocks) suits
  // few rows; from kMinRowsFor32ColumnBlocks rows on, 32-column blocks (BA16a32b) ran 3-5%
  // faster in BERT-base's and GPT-2's projections at sequence 128 (oneDNN 2.6 brgemm, one
  // thread, AMD Zen 5; ViT's 197 rows even) and 5-15% slower at one row, which therefore
  // runs run_one_row over them. A's rows not known before the first run (a dynamic
  // sequence) are taken as many: a session packs once, and the encoders' and prefill's many
  // rows are the heavier runs.
  static memory::format_tag packed_weights_tag(const MatMulDims& dims, bool rows_known) {
    constexpr int64_t kMinRowsFor32ColumnBlocks = 16;
    const int64_t rows = dims.src.size() == 2 ? dims.src[0] : 1;
    const bool few_rows = rows_known && rows < kMinRowsFor32ColumnBlocks;
    if (few_rows || dims.n < 32) return memory::format_tag::any;
    return memory::format_tag::BA16a32b;
  }

  const MatMulSpec spec_;
  const std::optional<Activation> own_activation_;  // run after the primitive, not a post-op
  const std::optional<Tensor> constant_b_;
  mutable std::mutex mutex_;
  mutable std::map<std::vector<int64_t>, std::shared_ptr<const Plan>> plans_;
  mutable std::optional<memory> packed_;  // written once, under mutex_
  mutable bool one_row_panels_ = false;   // packed_ is BA16a32b: run_one_row reads it
  mutable dnnl_util::OwnedMemory packed_storage_;
};

// B's tensor when it is a float32 initializer.
std::optional<Tensor> constant_input(const KernelCreateContext& context, size_t index) {
  const auto& inputs = context.node().inputs();
  if (index >= inputs.size() || !inputs[index] || !inputs[index]->has_initializer()) return {};
  const Tensor& tensor = inputs[index]->initializer();
  if (tensor.dtype() != DType::kFloat) return {};
  return tensor;
}

// The static shape of input `index`, when every dim is known; with `unknown_as` >= 0, dims
// not known (a batch, a sequence length) read as that value instead.
std::optional<Shape> static_shape(const KernelCreateContext& context, size_t index,
                                  int64_t unknown_as = -1) {
  const auto& inputs = context.node().inputs();
  if (index >= inputs.size() || !inputs[index]) return {};
  const Value& value = *inputs[index];
  if (value.has_initializer()) return value.initializer().shape();
  if (!value.type().is_tensor() || !value.type().shape) return {};
  Shape shape;
  for (const Dim& dim : *value.type().shape) {
    if (!dim.is_known() && unknown_as < 0) return {};
    shape.push_back(dim.is_known() ? dim.value : unknown_as);
  }
  return shape;
}

// Shared by the three kernels: dtype checks and the reference fallback.
class DnnlMatMulKernelBase : public OpKernel {
 protected:
  explicit DnnlMatMulKernelBase(const KernelCreateContext& context)
      : reference_(context.reference_kernel()) {}

  // True when this kernel computes the node: float32 inputs, a non-empty inner dimension
  // and no more dims than oneDNN takes; otherwise the reference kernel has run it.
  bool handled_here(KernelContext& context, bool float_inputs, const MatMulDims* dims) const {
    const bool empty_k = dims && dims->k == 0;
    const bool too_many_dims = dims && dims->dst.size() > DNNL_MAX_NDIMS;
    const bool too_large = dims && !dims_fit_onednn(*dims);
    if (float_inputs && !empty_k && !too_many_dims && !too_large) return true;
    if (!reference_) {
      if (!float_inputs) context.fail("inputs must be float32");
      if (empty_k) context.fail("an empty inner dimension is not supported");
      if (too_large) context.fail("a dimension of 2^31 or more is not supported");
      context.fail("more than {} dimensions are not supported", DNNL_MAX_NDIMS);
    }
    reference_->compute(context);
    return false;
  }

  // op(A) @ op(B) of the node when B is a float32 initializer and A float32 of known rank,
  // A's unknown dims (batch, sequence) taken as 1 (rows_probed): the packed layout serves
  // every M, so the session packs B at creation and a first run with the real M only builds
  // its primitive (BERT-base's first run at sequence 128 took 0.6-1 s packing 340 MB).
  static std::optional<MatMulDims> static_dims(const KernelCreateContext& context, bool trans_a,
                                               bool trans_b) {
    const auto a = static_shape(context, 0, 1);
    const auto b = static_shape(context, 1);
    if (!a || !b || context.node().inputs()[0]->type().elem_type != DType::kFloat ||
        !constant_input(context, 1)) {
      return {};
    }
    try {
      MatMulDims dims = matmul_dims(context.node(), *a, *b, trans_a, trans_b);
      if (dims.k == 0 || shape_numel(dims.out_shape) == 0 || !dims_fit_onednn(dims)) return {};
      dims.rows_probed = !static_shape(context, 0);
      return dims;
    } catch (const Error&) {
      return {};  // the first run reports it
    }
  }

  static bool all_float(const KernelContext& context, std::initializer_list<size_t> inputs) {
    for (size_t i : inputs) {
      if (context.has_input(i) && context.input(i).dtype() != DType::kFloat) return false;
    }
    return true;
  }

  std::unique_ptr<OpKernel> reference_;
};

class DnnlConstantFloatMatMul final : public ConstantFloatMatMul {
 public:
  explicit DnnlConstantFloatMatMul(const Tensor& b) : b_(b), matmul_(MatMulSpec{}, b) {}
  int64_t k() const override { return b_.shape()[0]; }
  int64_t n() const override { return b_.shape()[1]; }
  void run(const KernelContext& context, const Tensor& a, const float* bias,
           Tensor& out) const override {
    const MatMulDims dims = matmul_dims(context.node(), a.shape(), b_.shape(), false, false);
    if (shape_numel(dims.out_shape) == 0) return;
    matmul_.run(context, dims, a, b_, bias ? Addend::kRow : Addend::kNone, bias, out);
  }

 private:
  Tensor b_;
  DnnlMatMul matmul_;
};

// ---------------------------------------------------------------------------------------
// MatMul

class MatMulKernel : public DnnlMatMulKernelBase {
 public:
  explicit MatMulKernel(const KernelCreateContext& context)
      : DnnlMatMulKernelBase(context), matmul_(MatMulSpec{}, constant_input(context, 1)) {
    if (auto dims = static_dims(context, false, false)) matmul_.prepare(*dims, Addend::kNone);
  }

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    if (!all_float(context, {0, 1})) {
      handled_here(context, false, nullptr);
      return;
    }
    const MatMulDims dims = matmul_dims(context.node(), a.shape(), b.shape(), false, false);
    if (shape_numel(dims.out_shape) > 0 && !handled_here(context, true, &dims)) return;
    Tensor& out = context.allocate_output_uninitialized(0, DType::kFloat, dims.out_shape);
    if (out.numel() == 0) return;
    matmul_.run(context, dims, a, b, Addend::kNone, nullptr, out);
  }

 private:
  DnnlMatMul matmul_;
};

// ---------------------------------------------------------------------------------------
// FusedMatMul (com.onnxkit): Y = act(alpha * op(A) @ op(B) + Bias), Bias [N].

class FusedMatMulKernel : public DnnlMatMulKernelBase {
 public:
  explicit FusedMatMulKernel(const KernelCreateContext& context)
      : DnnlMatMulKernelBase(context),
        trans_a_(context.attr_int("trans_a", 0) != 0),
        trans_b_(context.attr_int("trans_b", 0) != 0),
        matmul_(MatMulSpec{trans_a_, trans_b_, context.attr_float("alpha", 1.0f), 1.0f,
                           parse_fused_activation(context)},
                constant_input(context, 1)) {
    const auto& inputs = context.node().inputs();
    const bool has_bias = inputs.size() > 2 && inputs[2];
    if (auto dims = static_dims(context, trans_a_, trans_b_)) {
      matmul_.prepare(*dims, has_bias ? Addend::kRow : Addend::kNone);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    if (!all_float(context, {0, 1, 2})) {
      handled_here(context, false, nullptr);
      return;
    }
    const MatMulDims dims = matmul_dims(context.node(), a.shape(), b.shape(), trans_a_, trans_b_);
    const Tensor* bias = context.has_input(2) ? &context.input(2) : nullptr;
    if (bias) {
      const Shape& shape = bias->shape();
      const bool row =
          !shape.empty() && shape.back() == dims.n &&
          std::all_of(shape.begin(), shape.end() - 1, [](int64_t d) { return d == 1; });
      if (!row) {
        context.fail("Bias of shape {} is not a row of the output's last dimension {}",
                     shape_to_string(shape), dims.n);
      }
    }
    if (shape_numel(dims.out_shape) > 0 && !handled_here(context, true, &dims)) return;
    Tensor& out = context.allocate_output_uninitialized(0, DType::kFloat, dims.out_shape);
    if (out.numel() == 0) return;
    matmul_.run(context, dims, a, b, bias ? Addend::kRow : Addend::kNone,
                bias ? bias->data<float>() : nullptr, out);
  }

 private:
  bool trans_a_, trans_b_;
  DnnlMatMul matmul_;
};

// ---------------------------------------------------------------------------------------
// Gemm: Y = alpha * op(A) @ op(B) + beta * C, C unidirectionally broadcast to [M, N].

class GemmKernel : public DnnlMatMulKernelBase {
 public:
  explicit GemmKernel(const KernelCreateContext& context)
      : DnnlMatMulKernelBase(context),
        trans_a_(context.attr_int("transA", 0) != 0),
        trans_b_(context.attr_int("transB", 0) != 0),
        beta_(context.attr_float("beta", 1.0f)),
        c_required_(context.opset() < 11),
        matmul_(MatMulSpec{trans_a_, trans_b_, context.attr_float("alpha", 1.0f), beta_, {}},
                constant_input(context, 1)) {
    prepare_static(context);
  }

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    if (!all_float(context, {0, 1, 2})) {
      handled_here(context, false, nullptr);
      return;
    }
    if (a.rank() != 2 || b.rank() != 2) {
      context.fail("A and B must be 2-D, got shapes {} and {}", shape_to_string(a.shape()),
                   shape_to_string(b.shape()));
    }
    const MatMulDims dims = matmul_dims(context.node(), a.shape(), b.shape(), trans_a_, trans_b_);
    const bool has_c = context.has_input(2);
    if (!has_c && c_required_) context.fail("input C is required before opset 11");
    const Tensor* c = has_c ? &context.input(2) : nullptr;
    if (c) {
      if (!broadcasts_to(c->shape(), dims.out_shape)) {
        context.fail("C of shape {} does not broadcast to the output shape {}",
                     shape_to_string(c->shape()), shape_to_string(dims.out_shape));
      }
    }
    if (shape_numel(dims.out_shape) > 0 && !handled_here(context, true, &dims)) return;
    Tensor& out = context.allocate_output_uninitialized(0, DType::kFloat, dims.out_shape);
    if (out.numel() == 0) return;
    if (!c || beta_ == 0.0f) {
      matmul_.run(context, dims, a, b, Addend::kNone, nullptr, out);
    } else if (is_row(*c, dims.n)) {
      if (beta_ == 1.0f) {
        matmul_.run(context, dims, a, b, Addend::kRow, c->data<float>(), out);
      } else {
        std::vector<float> row(c->data<float>(), c->data<float>() + dims.n);
        for (float& value : row) value *= beta_;
        matmul_.run(context, dims, a, b, Addend::kRow, row.data(), out);
      }
    } else {
      fill_broadcast(*c, out);
      matmul_.run(context, dims, a, b, Addend::kSum, nullptr, out);
    }
  }

 private:
  // A C that is one row of N values ([N] or [1, N]), added as a bias.
  static bool is_row(const Tensor& c, int64_t n) {
    return c.rank() >= 1 && c.shape().back() == n && (c.rank() == 1 || c.shape()[0] == 1);
  }

  static void fill_broadcast(const Tensor& c, Tensor& out) {
    const float* src = c.data<float>();
    float* dst = out.mutable_data<float>();
    const int64_t rows = out.shape()[0], cols = out.shape()[1];
    const int64_t c_rows = c.rank() == 2 ? c.shape()[0] : 1;
    const int64_t c_cols = c.rank() >= 1 ? c.shape().back() : 1;
    for (int64_t i = 0; i < rows; ++i) {
      const float* c_row = src + (c_rows == 1 ? 0 : i) * c_cols;
      float* out_row = dst + i * cols;
      if (c_cols == 1) {
        std::fill(out_row, out_row + cols, c_row[0]);
      } else {
        std::copy(c_row, c_row + cols, out_row);
      }
    }
  }

  // Builds the primitive (and packs B) at creation when every shape is static.
  void prepare_static(const KernelCreateContext& context) {
    auto dims = static_dims(context, trans_a_, trans_b_);
    if (!dims || dims->src.size() != 2) return;
    const auto& inputs = context.node().inputs();
    const bool has_c = inputs.size() > 2 && inputs[2];
    Addend addend = Addend::kNone;
    if (has_c && beta_ != 0.0f) {
      const auto c = static_shape(context, 2);
      if (!c) return;
      const bool row = !c->empty() && c->back() == dims->n && (c->size() == 1 || (*c)[0] == 1);
      addend = row ? Addend::kRow : Addend::kSum;
    }
    matmul_.prepare(*dims, addend);
  }

  bool trans_a_, trans_b_;
  float beta_;
  bool c_required_;
  DnnlMatMul matmul_;
};

}  // namespace

std::unique_ptr<const ConstantFloatMatMul> make_constant_float_matmul(const Tensor& b) {
  return std::make_unique<DnnlConstantFloatMatMul>(b);
}

void register_dnnl_matmul_kernels(OpRegistry& registry) {
  for (int64_t since : {1, 9, 13}) {
    registry.add_optimized("", "MatMul", since, kernel_factory<MatMulKernel>());
  }
  for (int64_t since : {7, 9, 11, 13}) {
    registry.add_optimized("", "Gemm", since, kernel_factory<GemmKernel>());
  }
  registry.add_optimized(std::string(kOnnxkitDomain), "FusedMatMul", 1,
                         kernel_factory<FusedMatMulKernel>());
}

}  // namespace onnxkit

// com.onnxkit Attention on float32 (fused_ops.h): Y = Softmax(where(Keep, scale * Q @ K^T +
// Mask, masked_value)) @ V per batch and head.
//
// The work splits into blocks of query rows of one (batch, head), run in parallel. A block
// computes its scores with a oneDNN matmul into a per-thread buffer (never more than one
// block of scores per thread), turns each row into probabilities in place (mask, keep and
// softmax in one vectorized pass: AVX-512 or AVX2 chosen at run time, scalar otherwise),
// and multiplies them by V straight into Y.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <tuple>

#include "core/parallel.h"
#include "kernels/attention.h"
#include "kernels/dnnl_matmul.h"
#include "kernels/vector_math.h"
#include "ops/fused_ops.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define ONNXKIT_X86_64 1
#endif

namespace onnxkit {
namespace {

using dnnl::memory;

// ---------------------------------------------------------------------------------------
// One row of scores -> probabilities.

// row = where(keep, row + mask, masked_value); plain loops the compiler vectorizes for the
// target of the function that inlines them.
inline __attribute__((always_inline)) void apply_terms(float* row, int64_t n,
                                                       const SoftmaxRowTerms& terms) {
  if (terms.mask) {
    const float* mask = terms.mask;
    if (terms.mask_stride == 1) {
      for (int64_t j = 0; j < n; ++j) row[j] += mask[j];
    } else {
      const float m = mask[0];  // broadcast along the row
      for (int64_t j = 0; j < n; ++j) row[j] += m;
    }
  }
  if (terms.keep) {
    const uint8_t* keep = terms.keep;
    const float masked = terms.masked_value;
    if (terms.keep_stride == 1) {
      for (int64_t j = 0; j < n; ++j) row[j] = keep[j] ? row[j] : masked;
    } else if (!keep[0]) {
      for (int64_t j = 0; j < n; ++j) row[j] = masked;
    }
  }
}

// A row whose maximum is infinite (every entry masked to -inf, or a +inf) is NaN, as the
// unfused graph's Softmax gives.
inline bool fill_nan_if_degenerate(float* row, int64_t n, float max) {
  if (std::isfinite(max)) return false;
  std::fill(row, row + n, std::numeric_limits<float>::quiet_NaN());
  return true;
}

void softmax_row_scalar(float* row, int64_t n, const SoftmaxRowTerms& terms) {
  apply_terms(row, n, terms);
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) max = std::max(max, row[j]);
  if (fill_nan_if_degenerate(row, n, max)) return;
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += row[j] = std::exp(row[j] - max);
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
}

#if ONNXKIT_X86_64
// GCC 12 warns inside its own AVX-512 headers (their _mm512_undefined_ps() placeholders,
// GCC bug 105593) wherever the intrinsics inline.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// exp(x) as 2^n * p(r), x = n ln2 + r, |r| <= ln2/2 (vector_math.h's exp_coefficients): the
// AVX-512 softmax takes the minimax polynomial (two FMA-pipe operations fewer per vector; the
// softmax bound is 1e-6), the AVX2 one Cephes'. Inputs below -104 give 0 (also -inf); NaN
// stays NaN (MAXPS/MINPS return their second operand when one is NaN).
using exp_coefficients::kCephes;
using exp_coefficients::kLn2Hi;
using exp_coefficients::kLn2Lo;
using exp_coefficients::kLog2e;
using exp_coefficients::kMinimax5;

// exp(x) for x <= 0 (a score minus its row's maximum), or NaN: no upper clamp needed.
__attribute__((target("avx512f"))) inline __m512 exp_nonpositive_avx512(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kMinimax5[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kMinimax5[i]));
  return _mm512_scalef_ps(p, n);  // 2^n without overflow tricks; n = -150 gives 0
}

// row[0..16) with mask[0..16) added (and stored) when there is a mask.
__attribute__((target("avx512f"))) inline __m512 with_mask_avx512(float* row, const float* mask) {
  __m512 v = _mm512_loadu_ps(row);
  if (mask) {
    v = _mm512_add_ps(v, _mm512_loadu_ps(mask));
    _mm512_storeu_ps(row, v);
  }
  return v;
}

// Three passes over the row (in L1 after the first): max (adding a contiguous mask on the
// way), exp and sum, scale. Two accumulators per pass halve the dependency chains, which
// dominate rows as short as attention's (128-200 scores).
__attribute__((target("avx512f"))) void softmax_row_avx512(float* row, int64_t n,
                                                           const SoftmaxRowTerms& terms) {
  const float* mask = nullptr;
  if (terms.keep || (terms.mask && terms.mask_stride != 1)) {
    apply_terms(row, n, terms);
  } else {
    mask = terms.mask;
  }
  const int64_t full = n / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - full)) - 1);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 max0 = neg_inf, max1 = neg_inf;
  int64_t j = 0;
  for (; j + 32 <= full; j += 32) {
    max0 = _mm512_max_ps(max0, with_mask_avx512(row + j, mask ? mask + j : nullptr));
    max1 = _mm512_max_ps(max1, with_mask_avx512(row + j + 16, mask ? mask + j + 16 : nullptr));
  }
  if (j < full) max0 = _mm512_max_ps(max0, with_mask_avx512(row + j, mask ? mask + j : nullptr));
  if (tail) {
    __m512 v = _mm512_mask_loadu_ps(neg_inf, tail, row + full);
    if (mask) {
      v = _mm512_mask_add_ps(v, tail, v, _mm512_maskz_loadu_ps(tail, mask + full));
      _mm512_mask_storeu_ps(row + full, tail, v);
    }
    max1 = _mm512_max_ps(max1, v);
  }
  const float max = _mm512_reduce_max_ps(_mm512_max_ps(max0, max1));
  if (fill_nan_if_degenerate(row, n, max)) return;
  const __m512 vm = _mm512_set1_ps(max);
  __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
  for (j = 0; j + 32 <= full; j += 32) {
    const __m512 e0 = exp_nonpositive_avx512(_mm512_sub_ps(_mm512_loadu_ps(row + j), vm));
    const __m512 e1 = exp_nonpositive_avx512(_mm512_sub_ps(_mm512_loadu_ps(row + j + 16), vm));
    _mm512_storeu_ps(row + j, e0);
    _mm512_storeu_ps(row + j + 16, e1);
    sum0 = _mm512_add_ps(sum0, e0);
    sum1 = _mm512_add_ps(sum1, e1);
  }
  if (j < full) {
    const __m512 e = exp_nonpositive_avx512(_mm512_sub_ps(_mm512_loadu_ps(row + j), vm));
    _mm512_storeu_ps(row + j, e);
    sum0 = _mm512_add_ps(sum0, e);
  }
  if (tail) {
    const __m512 e =
        exp_nonpositive_avx512(_mm512_sub_ps(_mm512_mask_loadu_ps(vm, tail, row + full), vm));
    _mm512_mask_storeu_ps(row + full, tail, e);
    sum1 = _mm512_add_ps(sum1, _mm512_maskz_mov_ps(tail, e));
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(_mm512_add_ps(sum0, sum1)));
  for (j = 0; j < full; j += 16) {
    _mm512_storeu_ps(row + j, _mm512_mul_ps(_mm512_loadu_ps(row + j), inv));
  }
  if (tail) {
    _mm512_mask_storeu_ps(row + full, tail,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, row + full), inv));
  }
}

__attribute__((target("avx2,fma"))) inline __m256 exp_avx2(__m256 x) {
  // 2^n is built in the exponent field, so n stays in [-126, 127]; below -87.3 gives 0.
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_set1_ps(88.3f), _mm256_max_ps(_mm256_set1_ps(-87.3f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kCephes[0]);
  for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kCephes[i]));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
}

__attribute__((target("avx2,fma"))) inline float reduce_avx2(__m256 v, bool take_max) {
  __m128 x = take_max ? _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1))
                      : _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  __m128 y = _mm_movehl_ps(x, x);
  x = take_max ? _mm_max_ps(x, y) : _mm_add_ps(x, y);
  y = _mm_shuffle_ps(x, x, 1);
  x = take_max ? _mm_max_ss(x, y) : _mm_add_ss(x, y);
  return _mm_cvtss_f32(x);
}

__attribute__((target("avx2,fma"))) void softmax_row_avx2(float* row, int64_t n,
                                                          const SoftmaxRowTerms& terms) {
  apply_terms(row, n, terms);
  const int64_t full = n / 8 * 8;
  __m256 vmax = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < full; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(row + j));
  float max = reduce_avx2(vmax, true);
  for (int64_t j = full; j < n; ++j) max = std::max(max, row[j]);
  if (fill_nan_if_degenerate(row, n, max)) return;
  const __m256 vm = _mm256_set1_ps(max);
  __m256 vsum = _mm256_setzero_ps();
  for (int64_t j = 0; j < full; j += 8) {
    const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(row + j), vm));
    _mm256_storeu_ps(row + j, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  float sum = reduce_avx2(vsum, false);
  for (int64_t j = full; j < n; ++j) sum += row[j] = std::exp(row[j] - max);
  const float inv_scalar = 1.0f / sum;
  const __m256 inv = _mm256_set1_ps(inv_scalar);
  for (int64_t j = 0; j < full; j += 8) {
    _mm256_storeu_ps(row + j, _mm256_mul_ps(_mm256_loadu_ps(row + j), inv));
  }
  for (int64_t j = full; j < n; ++j) row[j] *= inv_scalar;
}

#pragma GCC diagnostic pop
#endif  // ONNXKIT_X86_64

// ---------------------------------------------------------------------------------------
// The kernel.

// A 64-byte aligned per-thread buffer for one block of scores.
float* scores_buffer(size_t count) {
  struct Buffer {
    struct Free {
      void operator()(float* p) const { std::free(p); }
    };
    std::unique_ptr<float, Free> data;
    size_t count = 0;
  };
  thread_local Buffer buffer;
  if (count > buffer.count) {
    const size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
    auto* data = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (!data) throw std::bad_alloc();
    buffer.data.reset(data);
    buffer.count = count;
  }
  return buffer.data.get();
}

// The two matmuls of a block of `rows` query rows: scores = scale * Q_rows @ K^T and
// Y_rows = P @ V.
struct BlockPlan {
  enum Role { kLeft, kRight, kProduct };  // a matmul's src, weights and dst memory objects
  dnnl::matmul scores, context;
  memory::desc q, k, s, v, y;
  memory::desc scores_scratchpad, context_scratchpad;
  // Of the cached memory objects each thread rebinds per block (dnnl_util::rebound_memory).
  uint64_t scores_owner = dnnl_util::new_memory_owner();
  uint64_t context_owner = dnnl_util::new_memory_owner();
};

struct Operand {
  const memory::desc& desc;
  const float* data;
};

// dst = src @ weights on this thread's memory objects of `owner`.
void run_matmul(const dnnl::matmul& matmul, const memory::desc& scratchpad, uint64_t owner,
                Operand src, Operand weights, Operand dst) {
  const memory a = dnnl_util::rebound_memory(owner, BlockPlan::kLeft, src.desc, src.data);
  const memory b = dnnl_util::rebound_memory(owner, BlockPlan::kRight, weights.desc, weights.data);
  const memory c = dnnl_util::rebound_memory(owner, BlockPlan::kProduct, dst.desc, dst.data);
  dnnl_util::execute(
      matmul, scratchpad, owner,
      dnnl_util::ExecArgs().add(DNNL_ARG_SRC, a).add(DNNL_ARG_WEIGHTS, b).add(DNNL_ARG_DST, c));
}

memory::desc strided_desc(memory::dim rows, memory::dim cols, memory::dim row_stride,
                          memory::dim col_stride) {
  return memory::desc({rows, cols}, memory::data_type::f32, {row_stride, col_stride});
}

BlockPlan make_block_plan(int64_t rows, int64_t sk, int64_t d, int64_t dv, bool k_transposed,
                          float scale) {
  const dnnl::engine& engine = dnnl_util::cpu_engine();
  BlockPlan plan;
  plan.q = strided_desc(rows, d, d, 1);
  // K^T as a [D, Sk] matrix: K [Sk, D] read column-wise, or K^T stored as is.
  plan.k = k_transposed ? strided_desc(d, sk, sk, 1) : strided_desc(d, sk, 1, d);
  plan.s = strided_desc(rows, sk, sk, 1);
  plan.v = strided_desc(sk, dv, dv, 1);
  plan.y = strided_desc(rows, dv, dv, 1);
  dnnl::primitive_attr scaled = dnnl_util::user_scratchpad_attr();
  if (scale != 1.0f) scaled.set_output_scales(0, {scale});
  dnnl::matmul::primitive_desc scores_pd(dnnl::matmul::desc(plan.q, plan.k, plan.s), scaled,
                                         engine);
  dnnl::matmul::primitive_desc context_pd(dnnl::matmul::desc(plan.s, plan.v, plan.y),
                                          dnnl_util::user_scratchpad_attr(), engine);
  plan.scores = dnnl::matmul(scores_pd);
  plan.context = dnnl::matmul(context_pd);
  plan.scores_scratchpad = scores_pd.scratchpad_desc();
  plan.context_scratchpad = context_pd.scratchpad_desc();
  return plan;
}

// Scores a block may hold: enough rows for an efficient matmul, few enough to stay in L2
// (256 KB). ViT's 197x197 heads fit whole: split at 32K scores into 166 + 31 rows they
// took ~20% longer (two pairs of smaller matmuls).
constexpr int64_t kBlockScores = 64 * 1024;
constexpr int64_t kMinBlockRows = 8;

std::unique_ptr<OpKernel> reference_attention(const KernelCreateContext& context) {
  const Node& node = context.node();
  if (!OpRegistry::builtin().find(node.domain(), node.op_type(), context.opset())) return nullptr;
  return OpRegistry::builtin().create_kernel(context, KernelTier::kReference);
}

class AttentionKernel : public OpKernel {
 public:
  explicit AttentionKernel(const KernelCreateContext& context)
      : scale_(context.has_attribute("scale") ? std::optional(context.attr_float("scale"))
                                              : std::nullopt),
        masked_value_(context.attr_float("masked_value", -std::numeric_limits<float>::infinity())),
        k_transposed_(context.attr_int("k_transposed", 0) != 0),
        softmax_row_(softmax_row_variants().back().second),
        reference_(reference_attention(context)) {}

  void compute(KernelContext& context) const override {
    const Tensor& q = context.input(0);
    const Tensor& k = context.input(1);
    const Tensor& v = context.input(2);
    const Tensor* mask = context.has_input(3) ? &context.input(3) : nullptr;
    const Tensor* keep = context.has_input(4) ? &context.input(4) : nullptr;
    const bool supported =
        q.dtype() == DType::kFloat && k.dtype() == DType::kFloat && v.dtype() == DType::kFloat &&
        (!mask || mask->dtype() == DType::kFloat) && (!keep || keep->dtype() == DType::kBool);
    if (!supported) {
      if (reference_) return reference_->compute(context);
      context.fail("Q, K, V and Mask must be float32 and Keep bool");
    }
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) {
      context.fail("Q, K and V must be 4-D, got shapes {}, {} and {}", shape_to_string(q.shape()),
                   shape_to_string(k.shape()), shape_to_string(v.shape()));
    }
    const int64_t batch = q.shape()[0], heads = q.shape()[1], sq = q.shape()[2];
    const int64_t d = q.shape()[3];
    const int64_t sk = k_transposed_ ? k.shape()[3] : k.shape()[2];
    const int64_t k_d = k_transposed_ ? k.shape()[2] : k.shape()[3];
    const int64_t dv = v.shape()[3];
    if (k.shape()[0] != batch || k.shape()[1] != heads || v.shape()[0] != batch ||
        v.shape()[1] != heads || k_d != d || v.shape()[2] != sk) {
      context.fail(
          "shapes Q {}, K {}{} and V {} do not match ([B, H, Sq, D], [B, H, {}], "
          "[B, H, Sk, Dv])",
          shape_to_string(q.shape()), shape_to_string(k.shape()),
          k_transposed_ ? " (transposed)" : "", shape_to_string(v.shape()),
          k_transposed_ ? "D, Sk" : "Sk, D");
    }
    const Shape scores_shape{batch, heads, sq, sk};
    auto strides_of = [&](const Tensor* t, const char* name) -> std::vector<int64_t> {
      if (!t) return {};
      bool ok = t->rank() <= 4;
      for (size_t i = 0; ok && i < t->rank(); ++i) {
        const int64_t dim = t->shape()[i];
        ok = dim == 1 || dim == scores_shape[4 - t->rank() + i];
      }
      if (!ok) {
        context.fail("{} of shape {} does not broadcast to the scores' shape {}", name,
                     shape_to_string(t->shape()), shape_to_string(scores_shape));
      }
      return broadcast_strides(t->shape(), scores_shape);
    };
    const std::vector<int64_t> mask_strides = strides_of(mask, "Mask");
    const std::vector<int64_t> keep_strides = strides_of(keep, "Keep");

    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, {batch, heads, sq, dv});
    if (y.numel() == 0 || sk == 0) return;  // no keys: an empty sum, zeros
    if (d == 0) {
      if (reference_) return reference_->compute(context);
      context.fail("an empty head dimension is not supported");
    }
    const float scale = scale_ ? *scale_ : 1.0f / std::sqrt(static_cast<float>(d));

    // Block rows: L2-sized, but split finer when there are fewer blocks than threads.
    const int64_t pairs = batch * heads;
    int64_t rows = std::min(sq, std::max(kMinBlockRows, kBlockScores / sk));
    const int64_t wanted_blocks = 2 * static_cast<int64_t>(max_threads());
    if (pairs * ((sq + rows - 1) / rows) < wanted_blocks) {
      const int64_t per_pair = (wanted_blocks + pairs - 1) / pairs;
      rows = std::clamp((sq + per_pair - 1) / per_pair, std::min(kMinBlockRows, sq), rows);
    }
    const int64_t blocks_per_pair = (sq + rows - 1) / rows;
    const int64_t tail_rows = sq - (blocks_per_pair - 1) * rows;
    std::shared_ptr<const BlockPlan> full_plan, tail_plan;
    try {
      full_plan = plan_for(rows, sk, d, dv, scale);
      tail_plan = tail_rows == rows ? full_plan : plan_for(tail_rows, sk, d, dv, scale);
    } catch (const dnnl::error& e) {
      context.fail("oneDNN matmul: {}", e.what());
    }

    const float* q_data = q.data<float>();
    const float* k_data = k.data<float>();
    const float* v_data = v.data<float>();
    const float* mask_data = mask ? mask->data<float>() : nullptr;
    const auto* keep_data = keep ? reinterpret_cast<const uint8_t*>(keep->data<bool>()) : nullptr;
    float* y_data = y.mutable_data<float>();
    parallel_for(pairs * blocks_per_pair, 1, [&](int64_t begin, int64_t end) {
      float* scores = scores_buffer(static_cast<size_t>(rows * sk));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t pair = item / blocks_per_pair, block = item % blocks_per_pair;
        const int64_t b = pair / heads, h = pair % heads;
        const int64_t row0 = block * rows;
        const BlockPlan& plan = block + 1 == blocks_per_pair ? *tail_plan : *full_plan;
        const int64_t block_rows = block + 1 == blocks_per_pair ? tail_rows : rows;
        run_matmul(plan.scores, plan.scores_scratchpad, plan.scores_owner,
                   {plan.q, q_data + (pair * sq + row0) * d}, {plan.k, k_data + pair * sk * d},
                   {plan.s, scores});
        SoftmaxRowTerms terms;
        terms.masked_value = masked_value_;
        // Even rows, then odd ones: where rows share a cache line (197 scores), a row read
        // right after its neighbour's masked tail store waits for that store to retire
        // (no store forwarding); 14 -> 8.5 us per 197x197 head.
        for (int64_t i = 0; i < block_rows; ++i) {
          const int64_t half = (block_rows + 1) / 2;
          const int64_t r = i < half ? 2 * i : 2 * (i - half) + 1;
          const int64_t row = row0 + r;
          if (mask_data) {
            terms.mask =
                mask_data + b * mask_strides[0] + h * mask_strides[1] + row * mask_strides[2];
            terms.mask_stride = mask_strides[3];
          }
          if (keep_data) {
            terms.keep =
                keep_data + b * keep_strides[0] + h * keep_strides[1] + row * keep_strides[2];
            terms.keep_stride = keep_strides[3];
          }
          softmax_row_(scores + r * sk, sk, terms);
        }
        run_matmul(plan.context, plan.context_scratchpad, plan.context_owner, {plan.s, scores},
                   {plan.v, v_data + pair * sk * dv}, {plan.y, y_data + (pair * sq + row0) * dv});
      }
    });
  }

 private:
  std::shared_ptr<const BlockPlan> plan_for(int64_t rows, int64_t sk, int64_t d, int64_t dv,
                                            float scale) const {
    const auto key = std::make_tuple(rows, sk, d, dv, scale);
    std::lock_guard lock(mutex_);
    auto found = plans_.find(key);
    if (found != plans_.end()) return found->second;
    if (plans_.size() >= 64) plans_.clear();  // ever new shapes: oneDNN caches the rebuild
    auto plan =
        std::make_shared<const BlockPlan>(make_block_plan(rows, sk, d, dv, k_transposed_, scale));
    plans_.emplace(key, plan);
    return plan;
  }

  std::optional<float> scale_;
  float masked_value_;
  bool k_transposed_;
  SoftmaxRowFn softmax_row_;
  std::unique_ptr<OpKernel> reference_;
  mutable std::mutex mutex_;
  mutable std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, float>,
                   std::shared_ptr<const BlockPlan>>
      plans_;
};

}  // namespace

std::vector<std::pair<const char*, SoftmaxRowFn>> softmax_row_variants() {
  std::vector<std::pair<const char*, SoftmaxRowFn>> variants{{"scalar", softmax_row_scalar}};
#if ONNXKIT_X86_64
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    variants.emplace_back("avx2", softmax_row_avx2);
  }
  if (__builtin_cpu_supports("avx512f")) variants.emplace_back("avx512", softmax_row_avx512);
#endif
  return variants;
}

void register_attention_kernels(OpRegistry& registry) {
  registry.add_optimized(std::string(kOnnxkitDomain), "Attention", 1,
                         kernel_factory<AttentionKernel>());
}

}  // namespace onnxkit

// com.onnxkit Attention on float32 (fused_ops.h): Y = Softmax(where(Keep, scale * Q @ K^T +
// Mask, masked_value)) @ V per batch and head, each operand read through the strides its
// perm attribute gives (ops/attention_layout.h). ONNX's own Attention (ai.onnx 23 on) runs
// on it too where its semantics are the same (FusedOnnxAttentionKernel below), and so do
// ONNX Runtime's com.microsoft Attention and QAttention (kernels/transformer_microsoft.cc)
// through FloatAttention (attention.h), the engine below on operands given as views.
//
// With AVX-512 (and unit-stride rows) a work item is a (batch, head), or part of its query
// rows when there are fewer heads than threads want: it packs K^T once, then runs
// attention_avx512.cc's register tiles, scores staying in L1 (one tile of rows at a time).
// Otherwise blocks of query rows run two oneDNN matmuls each, with the scores in a
// per-thread buffer (one block at a time, L2-sized) turned into probabilities in place
// between them by the row softmax: mask, keep and softmax in one vectorized pass, AVX-512
// (attention_avx512.cc's tile softmax on one row) or AVX2 chosen at run time, scalar
// otherwise.
#include <algorithm>
#include <array>
#include <atomic>
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
#include "ops/attention_layout.h"
#include "ops/fused_ops.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/transformer.h"

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
// exp(x) as 2^n * p(r), x = n ln2 + r, |r| <= ln2/2 (vector_math.h's exp_coefficients;
// the AVX-512 softmax, in attention_avx512.cc, takes the minimax polynomial). Inputs below
// -87.3 give 0 (also -inf).
using exp_coefficients::kCephes;
using exp_coefficients::kLn2Hi;
using exp_coefficients::kLn2Lo;
using exp_coefficients::kLog2e;

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

#endif  // ONNXKIT_X86_64

// ---------------------------------------------------------------------------------------
// The kernel.

// 64-byte aligned per-thread buffers that only grow: a block of scores, and packed K^T.
enum class Scratch { kScores, kPackedKeys, kCount };

float* scratch_buffer(Scratch role, size_t count) {
  struct Buffer {
    struct Free {
      void operator()(float* p) const { std::free(p); }
    };
    std::unique_ptr<float, Free> data;
    size_t count = 0;
  };
  thread_local std::array<Buffer, static_cast<size_t>(Scratch::kCount)> buffers;
  Buffer& buffer = buffers[static_cast<size_t>(role)];
  if (count > buffer.count) {
    const size_t bytes = (std::max<size_t>(count, 1) * sizeof(float) + 63) / 64 * 64;
    auto* data = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (!data) throw std::bad_alloc();
    buffer.data.reset(data);
    buffer.count = count;
  }
  return buffer.data.get();
}

// The strides (elements) of the 2-D matrices one (batch, head) reads and writes: Q [Sq, D],
// K [Sk, D], V [Sk, Dv], Y [Sq, Dv], as (row, column).
struct HeadStrides {
  int64_t q_row, q_col, k_row, k_col, v_row, v_col, y_row, y_col;
  auto operator<=>(const HeadStrides&) const = default;
};

// The two oneDNN matmuls of a block of `rows` query rows: scores = scale * Q_rows @ K^T and
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

BlockPlan make_block_plan(int64_t rows, int64_t sk, int64_t d, int64_t dv,
                          const HeadStrides& strides, float scale) {
  const dnnl::engine& engine = dnnl_util::cpu_engine();
  BlockPlan plan;
  plan.q = strided_desc(rows, d, strides.q_row, strides.q_col);
  plan.k = strided_desc(d, sk, strides.k_col, strides.k_row);  // K^T [D, Sk]
  plan.s = strided_desc(rows, sk, sk, 1);
  plan.v = strided_desc(sk, dv, strides.v_row, strides.v_col);
  plan.y = strided_desc(rows, dv, strides.y_row, strides.y_col);
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

// oneDNN path: scores a block may hold, enough rows for an efficient matmul, few enough to
// stay in L2 (256 KB). ViT's 197x197 heads fit whole: split at 32K scores into 166 + 31 rows
// they took ~20% longer (two pairs of smaller matmuls).
constexpr int64_t kBlockScores = 64 * 1024;
constexpr int64_t kMinBlockRows = 8;

// Where the mask and keep terms of one (batch, head)'s score rows come from.
struct RowTermsSource {
  const float* mask = nullptr;  // at (b, h, row 0)
  int64_t mask_row_stride = 0, mask_col_stride = 0;
  const uint8_t* keep = nullptr;
  int64_t keep_row_stride = 0, keep_col_stride = 0;
  float masked_value = 0;

  SoftmaxRowTerms terms(int64_t row) const {
    SoftmaxRowTerms t;
    t.masked_value = masked_value;
    if (mask) {
      t.mask = mask + row * mask_row_stride;
      t.mask_stride = mask_col_stride;
    }
    if (keep) {
      t.keep = keep + row * keep_row_stride;
      t.keep_stride = keep_col_stride;
    }
    return t;
  }

  static SoftmaxRowTerms row_terms(const void* source, int64_t row) {
    return static_cast<const RowTermsSource*>(source)->terms(row);
  }
};

// Packs K^T for the AVX-512 tiles: head's K [Sk, D] as D rows of attention_padded_keys(Sk)
// floats, zero past Sk.
void pack_keys_transposed(const AttentionHead& head, float* kt) {
  const int64_t padded = attention_padded_keys(head.sk);
  vector_kernels().transpose_2d(reinterpret_cast<const uint32_t*>(head.k), head.k_stride,
                                reinterpret_cast<uint32_t*>(kt), padded, head.sk, head.d);
  for (int64_t c = 0; c < head.d; ++c)
    std::fill(kt + c * padded + head.sk, kt + (c + 1) * padded, 0.0f);
}

// Every (batch, head) packs its K^T once per thread per run: the run's token and the pair
// this thread's packed buffer holds.
std::atomic<uint64_t> next_run_token{1};
struct PackedKeys {
  uint64_t token = 0;
  int64_t pair = -1;
};
thread_local PackedKeys packed_keys;

int64_t head_offset(const AttentionView& view, int64_t b, int64_t h) {
  return b * view.strides[0] + h * view.strides[1];
}

// The mask and keep terms of (batch b, head h)'s score rows.
RowTermsSource terms_source(const AttentionOperands& o, int64_t b, int64_t h) {
  RowTermsSource source;
  source.masked_value = o.masked_value;
  if (o.mask) {
    source.mask = o.mask + b * o.mask_strides[0] + h * o.mask_strides[1];
    source.mask_row_stride = o.mask_strides[2];
    source.mask_col_stride = o.mask_strides[3];
  }
  if (o.keep) {
    source.keep = o.keep + b * o.keep_strides[0] + h * o.keep_strides[1];
    source.keep_row_stride = o.keep_strides[2];
    source.keep_col_stride = o.keep_strides[3];
  }
  return source;
}

void run_avx512(const AttentionOperands& o) {
  const int64_t heads = o.qv.dims[1], sq = o.qv.dims[2], d = o.qv.dims[3];
  const int64_t sk = o.kv.dims[2], dv = o.vv.dims[3];
  const int64_t pairs = o.qv.dims[0] * heads;
  // Whole heads per work item; rows split (in whole tiles) only when there are fewer
  // heads than work items the threads want.
  const int64_t wanted_items = 2 * static_cast<int64_t>(max_threads());
  int64_t rows = sq;
  if (pairs < wanted_items) {
    const int64_t per_pair = (wanted_items + pairs - 1) / pairs;
    const int64_t tiles = (sq + kAttentionTileRows - 1) / kAttentionTileRows;
    rows = std::max<int64_t>(1, (tiles + per_pair - 1) / per_pair) * kAttentionTileRows;
  }
  const int64_t blocks_per_pair = (sq + rows - 1) / rows;
  const uint64_t token = next_run_token.fetch_add(1, std::memory_order_relaxed);
  const int64_t padded = attention_padded_keys(sk);
  parallel_for(pairs * blocks_per_pair, 1, [&](int64_t begin, int64_t end) {
    float* scores =
        scratch_buffer(Scratch::kScores, static_cast<size_t>(kAttentionTileRows * padded));
    float* kt = scratch_buffer(Scratch::kPackedKeys, static_cast<size_t>(d * padded));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t pair = item / blocks_per_pair, block = item % blocks_per_pair;
      const int64_t b = pair / heads, h = pair % heads;
      AttentionHead head;
      head.q = o.q + head_offset(o.qv, b, h);
      head.q_stride = o.qv.strides[2];
      head.k = o.k + head_offset(o.kv, b, h);
      head.k_stride = o.kv.strides[2];
      head.v = o.v + head_offset(o.vv, b, h);
      head.v_stride = o.vv.strides[2];
      head.y = o.y + head_offset(o.yv, b, h);
      head.y_stride = o.yv.strides[2];
      head.d = d;
      head.dv = dv;
      head.sk = sk;
      head.scale = o.scale;
      if (packed_keys.token != token || packed_keys.pair != pair) {
        pack_keys_transposed(head, kt);
        packed_keys = {token, pair};
      }
      const int64_t row0 = block * rows;
      if (item + 1 < end && (item + 1) / blocks_per_pair != pair) {
        const int64_t next_b = (pair + 1) / heads, next_h = (pair + 1) % heads;
        head.next_q = o.q + head_offset(o.qv, next_b, next_h);
        head.next_k = o.k + head_offset(o.kv, next_b, next_h);
        head.next_v = o.v + head_offset(o.vv, next_b, next_h);
        head.next_q_rows = std::min(rows, sq);
      }
      const RowTermsSource source = terms_source(o, b, h);
      attention_rows_avx512(head, kt, row0, std::min(rows, sq - row0), scores,
                            {&RowTermsSource::row_terms, &source});
    }
  });
}

}  // namespace

// The oneDNN plans of the block shapes seen so far.
struct FloatAttention::Plans {
  std::mutex mutex;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, HeadStrides, float>,
           std::shared_ptr<const BlockPlan>>
      map;

  std::shared_ptr<const BlockPlan> plan_for(int64_t rows, int64_t sk, int64_t d, int64_t dv,
                                            const HeadStrides& strides, float scale) {
    const auto key = std::make_tuple(rows, sk, d, dv, strides, scale);
    std::lock_guard lock(mutex);
    auto found = map.find(key);
    if (found != map.end()) return found->second;
    if (map.size() >= 64) map.clear();  // ever new shapes: oneDNN caches the rebuild
    auto plan = std::make_shared<const BlockPlan>(make_block_plan(rows, sk, d, dv, strides, scale));
    map.emplace(key, plan);
    return plan;
  }
};

FloatAttention::FloatAttention()
    : plans_(std::make_unique<Plans>()), softmax_row_(softmax_row_variants().back().second) {}
FloatAttention::~FloatAttention() = default;

void FloatAttention::run(KernelContext& context, const AttentionOperands& o) const {
  const HeadStrides strides{o.qv.strides[2], o.qv.strides[3], o.kv.strides[2], o.kv.strides[3],
                            o.vv.strides[2], o.vv.strides[3], o.yv.strides[2], o.yv.strides[3]};
  const int64_t d = o.qv.dims[3], dv = o.vv.dims[3];
  // The AVX-512 kernel reads rows with unit column stride (any stride where there is one
  // column); oneDNN takes the rest.
  auto unit_columns = [](int64_t cols, int64_t stride) { return cols == 1 || stride == 1; };
  if (active_simd_level() == SimdLevel::kAvx512 && unit_columns(d, strides.q_col) &&
      unit_columns(d, strides.k_col) && unit_columns(dv, strides.v_col) &&
      unit_columns(dv, strides.y_col)) {
    return run_avx512(o);
  }
  const int64_t heads = o.qv.dims[1], sq = o.qv.dims[2], sk = o.kv.dims[2];
  const int64_t pairs = o.qv.dims[0] * heads;
  // Block rows: L2-sized, but split finer when there are fewer blocks than threads.
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
    full_plan = plans_->plan_for(rows, sk, d, dv, strides, o.scale);
    tail_plan =
        tail_rows == rows ? full_plan : plans_->plan_for(tail_rows, sk, d, dv, strides, o.scale);
  } catch (const dnnl::error& e) {
    context.fail("oneDNN matmul: {}", e.what());
  }
  parallel_for(pairs * blocks_per_pair, 1, [&](int64_t begin, int64_t end) {
    float* scores = scratch_buffer(Scratch::kScores, static_cast<size_t>(rows * sk));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t pair = item / blocks_per_pair, block = item % blocks_per_pair;
      const int64_t b = pair / heads, h = pair % heads;
      const int64_t row0 = block * rows;
      const BlockPlan& plan = block + 1 == blocks_per_pair ? *tail_plan : *full_plan;
      const int64_t block_rows = block + 1 == blocks_per_pair ? tail_rows : rows;
      run_matmul(plan.scores, plan.scores_scratchpad, plan.scores_owner,
                 {plan.q, o.q + head_offset(o.qv, b, h) + row0 * strides.q_row},
                 {plan.k, o.k + head_offset(o.kv, b, h)}, {plan.s, scores});
      const RowTermsSource source = terms_source(o, b, h);
      // Even rows, then odd ones: where rows share a cache line (197 scores), a row read
      // right after its neighbour's masked tail store waits for that store to retire
      // (no store forwarding); 14 -> 8.5 us per 197x197 head.
      for (int64_t i = 0; i < block_rows; ++i) {
        const int64_t half = (block_rows + 1) / 2;
        const int64_t r = i < half ? 2 * i : 2 * (i - half) + 1;
        softmax_row_(scores + r * sk, sk, source.terms(row0 + r));
      }
      run_matmul(plan.context, plan.context_scratchpad, plan.context_owner, {plan.s, scores},
                 {plan.v, o.v + head_offset(o.vv, b, h)},
                 {plan.y, o.y + head_offset(o.yv, b, h) + row0 * strides.y_row});
    }
  });
}

namespace {

class AttentionKernel : public OpKernel {
 public:
  explicit AttentionKernel(const KernelCreateContext& context)
      : scale_(context.has_attribute("scale") ? std::optional(context.attr_float("scale"))
                                              : std::nullopt),
        masked_value_(context.attr_float("masked_value", -std::numeric_limits<float>::infinity())),
        layout_(context),
        reference_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    run(context, context.input(0), context.input(1), context.input(2),
        context.has_input(3) ? &context.input(3) : nullptr,
        context.has_input(4) ? &context.input(4) : nullptr);
  }

  // Y (output 0) from these operands, whichever inputs of the node they come from.
  void run(KernelContext& context, const Tensor& q, const Tensor& k, const Tensor& v,
           const Tensor* mask, const Tensor* keep) const {
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
    AttentionOperands o;
    o.qv = layout_.input_view(0, q.shape());
    o.kv = layout_.input_view(1, k.shape());
    o.vv = layout_.input_view(2, v.shape());
    const int64_t batch = o.qv.dims[0], heads = o.qv.dims[1], sq = o.qv.dims[2], d = o.qv.dims[3];
    const int64_t sk = o.kv.dims[2], dv = o.vv.dims[3];
    if (o.kv.dims[0] != batch || o.kv.dims[1] != heads || o.kv.dims[3] != d ||
        o.vv.dims[0] != batch || o.vv.dims[1] != heads || o.vv.dims[2] != sk) {
      context.fail(
          "shapes Q {}, K {} and V {} do not match ([B, H, Sq, D], [B, H, Sk, D] and "
          "[B, H, Sk, Dv] after their perms{})",
          shape_to_string(q.shape()), shape_to_string(k.shape()), shape_to_string(v.shape()),
          layout_.k_transposed() ? "; K transposed" : "");
    }
    const Shape scores_shape{batch, heads, sq, sk};
    auto strides_of = [&](const Tensor* t, const char* name) -> std::array<int64_t, 4> {
      if (!t) return {};
      if (!broadcasts_to(t->shape(), scores_shape)) {
        context.fail("{} of shape {} does not broadcast to the scores' shape {}", name,
                     shape_to_string(t->shape()), shape_to_string(scores_shape));
      }
      const std::vector<int64_t> strides = broadcast_strides(t->shape(), scores_shape);
      return {strides[0], strides[1], strides[2], strides[3]};
    };
    o.mask_strides = strides_of(mask, "Mask");
    o.keep_strides = strides_of(keep, "Keep");

    const std::array<int64_t, 4> y_dims{batch, heads, sq, dv};
    Tensor& y =
        context.allocate_output_uninitialized(0, DType::kFloat, layout_.output_shape(y_dims));
    if (y.numel() == 0) return;
    float* y_data = y.mutable_data<float>();
    if (sk == 0) {  // no keys: every row an empty sum
      std::fill(y_data, y_data + y.numel(), 0.0f);
      return;
    }
    if (d == 0) {
      if (reference_) return reference_->compute(context);
      context.fail("an empty head dimension is not supported");
    }
    o.yv = layout_.output_view(y_dims);
    o.scale = scale_ ? *scale_ : 1.0f / std::sqrt(static_cast<float>(d));
    o.q = q.data<float>();
    o.k = k.data<float>();
    o.v = v.data<float>();
    o.y = y_data;
    o.mask = mask ? mask->data<float>() : nullptr;
    o.keep = keep ? reinterpret_cast<const uint8_t*>(keep->data<bool>()) : nullptr;
    o.masked_value = masked_value_;
    attention_.run(context, o);
  }

 private:
  std::optional<float> scale_;
  float masked_value_;
  AttentionLayout layout_;
  FloatAttention attention_;
  std::unique_ptr<OpKernel> reference_;
};

// ai.onnx Attention (23, 24, 25) on the kernel above where the two ops agree: 4-D float32
// Q, K and V with as many K/V heads as Q heads, no attn_mask (is_causal becomes a Keep
// tensor), no cache, softcap, window or extra outputs. The factory declines nodes whose
// attributes or inputs ask for more; compute hands other types and shapes to the reference
// kernel.
class FusedOnnxAttentionKernel : public OpKernel {
 public:
  static std::unique_ptr<OpKernel> create(const KernelCreateContext& context, int64_t version) {
    const OnnxAttentionAttributes attrs(context, version);
    const Node& node = context.node();
    for (size_t i = 3; i < node.inputs().size(); ++i) {
      if (node.inputs()[i]) return nullptr;
    }
    for (size_t i = 1; i < node.outputs().size(); ++i) {
      if (node.outputs()[i]) return nullptr;
    }
    if (attrs.softcap > 0 || attrs.left_window_size >= 0 || attrs.right_window_size >= 0 ||
        attrs.q_num_heads != 0 || attrs.kv_num_heads != 0 ||
        (attrs.softmax_precision != 0 &&
         attrs.softmax_precision != static_cast<int64_t>(DType::kFloat))) {
      return nullptr;
    }
    return std::make_unique<FusedOnnxAttentionKernel>(context, attrs.is_causal);
  }

  FusedOnnxAttentionKernel(const KernelCreateContext& context, bool is_causal)
      : is_causal_(is_causal), fused_(context), reference_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& q = context.input(0);
    const Tensor& k = context.input(1);
    const Tensor& v = context.input(2);
    const bool supported = q.dtype() == DType::kFloat && k.dtype() == DType::kFloat &&
                           v.dtype() == DType::kFloat && q.rank() == 4 && k.rank() == 4 &&
                           v.rank() == 4 && k.shape()[1] == q.shape()[1];
    if (!supported) return reference_->compute(context);
    if (!is_causal_) return fused_.run(context, q, k, v, nullptr, nullptr);
    // Query i sees keys 0..i (no cache: the causal frontier starts at 0).
    const int64_t sq = q.shape()[2], sk = k.shape()[2];
    Tensor keep(DType::kBool, {sq, sk});
    bool* allowed = keep.mutable_data<bool>();
    for (int64_t i = 0; i < sq; ++i) {
      for (int64_t j = 0; j < sk; ++j) allowed[i * sk + j] = j <= i;
    }
    fused_.run(context, q, k, v, nullptr, &keep);
  }

 private:
  bool is_causal_;
  AttentionKernel fused_;
  std::unique_ptr<OpKernel> reference_;
};

}  // namespace

std::vector<std::pair<const char*, SoftmaxRowFn>> softmax_row_variants() {
  std::vector<std::pair<const char*, SoftmaxRowFn>> variants{{"scalar", softmax_row_scalar}};
#if ONNXKIT_X86_64
  const SimdLevel level = detected_simd_level();
  if (level >= SimdLevel::kAvx2) variants.emplace_back("avx2", softmax_row_avx2);
  if (level >= SimdLevel::kAvx512) variants.emplace_back("avx512", softmax_row_avx512);
#endif
  return variants;
}

void register_attention_kernels(OpRegistry& registry) {
  registry.add_optimized(std::string(kOnnxkitDomain), "Attention", 1,
                         kernel_factory<AttentionKernel>());
  for (int64_t version : {23, 24, 25}) {
    registry.add_optimized("", "Attention", version, [version](const KernelCreateContext& context) {
      return FusedOnnxAttentionKernel::create(context, version);
    });
  }
}

}  // namespace onnxkit

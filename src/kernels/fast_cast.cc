// Fast Cast between float32 and the 16-bit floats (float16, bfloat16): the conversions at the
// edges of the regions compute_fp16_in_fp32 turns float32, and of models that cast their
// inputs themselves. float16 uses the CPU's conversion instructions (F16C with AVX2,
// AVX-512F), chosen at run time by vector_math's level (ONNXKIT_SIMD_LEVEL forces a lower
// one); they round to nearest even as the reference Cast does, and differ from it only in a
// NaN's payload bits. bfloat16 is a shift one way and a rounding add the other. Other casts
// go to the reference kernel. (The reference loop converted GPT-2's 6.4M-element fp16 logits
// in ~27 ms; this one takes ~1 ms.)
#include <cpuid.h>
#include <immintrin.h>

#include <cstdint>

#include "core/half.h"
#include "core/parallel.h"
#include "kernels/fast_kernel_util.h"
#include "kernels/vector_math.h"
#include "ops/op_utils.h"

namespace onnxkit {
namespace {

// The function-level target attributes below hold only intrinsics (always inlined), so no
// shared inline function is ever compiled with instructions another CPU lacks.
__attribute__((target("avx512f"))) void f16_to_f32_avx512(const uint16_t* in, float* out,
                                                          int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = Float16::to_float(in[i]);
}

__attribute__((target("avx512f"))) void f32_to_f16_avx512(const float* in, uint16_t* out,
                                                          int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = Float16::from_float(in[i]);
}

__attribute__((target("avx,f16c"))) void f16_to_f32_f16c(const uint16_t* in, float* out,
                                                         int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = Float16::to_float(in[i]);
}

__attribute__((target("avx,f16c"))) void f32_to_f16_f16c(const float* in, uint16_t* out,
                                                         int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = Float16::from_float(in[i]);
}

void f16_to_f32_scalar(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = Float16::to_float(in[i]);
}

void f32_to_f16_scalar(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = Float16::from_float(in[i]);
}

void bf16_to_f32(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = BFloat16::to_float(in[i]);
}

void f32_to_bf16(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = BFloat16::from_float(in[i]);
}

// CPUID leaf 1, ECX bit 29 (clang's __builtin_cpu_supports has no "f16c"); only asked at the
// AVX2 level, whose detection has checked that the OS saves AVX state.
bool cpu_has_f16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  }();
  return has;
}

using Widen = void (*)(const uint16_t*, float*, int64_t);
using Narrow = void (*)(const float*, uint16_t*, int64_t);

Widen widen_for(DType from) {
  if (from == DType::kBFloat16) return bf16_to_f32;
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return f16_to_f32_avx512;
    case SimdLevel::kAvx2:
      return cpu_has_f16c() ? f16_to_f32_f16c : f16_to_f32_scalar;
    default:
      return f16_to_f32_scalar;
  }
}

Narrow narrow_for(DType to) {
  if (to == DType::kBFloat16) return f32_to_bf16;
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return f32_to_f16_avx512;
    case SimdLevel::kAvx2:
      return cpu_has_f16c() ? f32_to_f16_f16c : f32_to_f16_scalar;
    default:
      return f32_to_f16_scalar;
  }
}

bool is_16bit_float(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

class FastCastKernel : public OpKernel {
 public:
  FastCastKernel(const KernelCreateContext& context, DType to)
      : to_(to), fallback_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const DType from = x.dtype();
    const bool widen = is_16bit_float(from) && to_ == DType::kFloat;
    const bool narrow = from == DType::kFloat && is_16bit_float(to_);
    if (!widen && !narrow) return run_fallback(fallback_.get(), context);
    Tensor& y = context.allocate_output_uninitialized(0, to_, x.shape());
    const int64_t n = x.numel();
    if (widen) {
      const auto* in = static_cast<const uint16_t*>(x.raw_data());
      float* out = y.mutable_data<float>();
      const Widen convert = widen_for(from);
      parallel_for(n, kMinParallelStreaming, [&](int64_t begin, int64_t end) {
        convert(in + begin, out + begin, end - begin);
      });
    } else {
      const float* in = x.data<float>();
      auto* out = static_cast<uint16_t*>(y.mutable_raw_data());
      const Narrow convert = narrow_for(to_);
      parallel_for(n, kMinParallelStreaming, [&](int64_t begin, int64_t end) {
        convert(in + begin, out + begin, end - begin);
      });
    }
  }

 private:
  DType to_;
  std::unique_ptr<OpKernel> fallback_;
};

std::unique_ptr<OpKernel> make_fast_cast_kernel(const KernelCreateContext& context) {
  const auto to = static_cast<DType>(context.attr_int("to", 0));
  if (to != DType::kFloat && !is_16bit_float(to)) return nullptr;
  return std::make_unique<FastCastKernel>(context, to);
}

}  // namespace

void register_fast_cast_kernels(OpRegistry& registry) {
  // Every version from 6 (Cast-1's `to` is a string); the versions after 13 add types and
  // float8's `saturate`, neither of which concerns float32 <-> 16-bit floats.
  for (int64_t since : {6, 9, 13, 19, 21, 23, 24, 25, 28}) {
    registry.add_optimized("", "Cast", since, make_fast_cast_kernel);
  }
}

}  // namespace onnxkit

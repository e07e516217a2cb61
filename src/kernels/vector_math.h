// Vectorized float32 loops for the memory-bound ops (elementwise, activations, softmax,
// normalization, 2-D transposes), with runtime CPU dispatch.
//
// Each loop exists three times, built from one template source (vector_math_simd.h): a
// portable scalar version, an AVX2+FMA version and an AVX-512 version, compiled per file
// with their own flags (CMakeLists.txt) and chosen at run time from what the CPU supports.
// The scalar version runs on any x86-64 (or other) CPU.
//
// Accuracy: +, -, *, /, sqrt, abs, neg, min/max are exact (IEEE). exp is within ~2 ulp
// (results below FLT_MIN are denormal as std::exp's); tanh, erf and sigmoid within a few
// ulp-ish (relative error < 1e-6, absolute < 2e-7 near 0). NaN propagates through every
// function; Relu/Clip/HardSigmoid follow the reference kernels' comparisons for NaN.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace onnxkit {

// This header stays free of other onnxkit headers: it is compiled into the per-ISA files
// (vector_math_avx2.cc, ...), where an inline function from a shared header could be built
// with instructions other CPUs lack and then chosen by the linker for every caller.
struct ActivationFunction;  // ops/fused_activation.h

// The exp pieces every vectorized exp shares (vector_math_simd.h, attention.cc): x = n ln2 + r
// with |r| <= ln2 / 2 and ln2 split in two (n * kLn2Hi is exact), then a polynomial in r.
namespace exp_coefficients {
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;
// Cephes' expf: e^r = 1 + r + r^2 p(r), p of degree 5 in Horner order (~1 ulp).
inline constexpr float kCephes[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                     4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
// A degree-5 minimax polynomial for e^r itself, in Horner order (2.4e-7 relative): for
// activations and softmax, whose bounds are 1e-6 or looser.
inline constexpr float kMinimax5[6] = {8.297654800117016e-3f,  4.191538318991661e-2f,
                                       1.6667574644088745e-1f, 4.9998894333839417e-1f,
                                       9.999997019767761e-1f,  1.0000001192092896f};
}  // namespace exp_coefficients

// Instruction set levels, in order.
enum class SimdLevel { kScalar, kAvx2, kAvx512 };

std::string_view simd_level_name(SimdLevel level);
// The best level this CPU supports (AVX2 needs FMA too; AVX-512 needs F/BW/DQ/VL),
// capped by the environment variable ONNXKIT_SIMD_LEVEL=scalar|avx2 when it is set.
SimdLevel detected_simd_level();
// The level the kernels use now: the override when one is set, otherwise the detected one.
SimdLevel active_simd_level();

// Forces a level (tests, benchmarks) for the lifetime of the object; process-wide, since
// kernels run on OpenMP worker threads. A level the CPU lacks is clamped to the detected one.
class SimdLevelOverride {
 public:
  explicit SimdLevelOverride(SimdLevel level);
  ~SimdLevelOverride();
  SimdLevelOverride(const SimdLevelOverride&) = delete;
  SimdLevelOverride& operator=(const SimdLevelOverride&) = delete;

 private:
  int previous_;
};

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kCount };

// One-input maps y = f(x; p0, p1). Parameters are used only where noted.
enum class UnaryOp {
  kRelu,         // x > 0 ? x : 0
  kLeakyRelu,    // x < 0 ? p0 * x : x
  kClip,         // min(p1, max(p0, x)) as the Clip kernel compares (NaN stays NaN)
  kHardSigmoid,  // max(0, min(1, p0 * x + p1))
  kHardSwish,    // x * max(0, min(1, x / 6 + 0.5))
  kSigmoid,
  kSilu,  // x * sigmoid(x)
  kTanh,
  kErf,
  kExp,
  kSqrt,
  kReciprocal,
  kNeg,
  kAbs,
  kSquare,    // x * x (Pow 2)
  kCube,      // x * x * x (Pow 3)
  kPowHalf,   // pow(x, 0.5): sqrt, except pow(-0, .5) = +0 and pow(-inf, .5) = +inf
  kGelu,      // x * 0.5 * (1 + erf(x / sqrt(2)))
  kGeluTanh,  // x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
  kCount,
};

// The loops of one level. Every pointer may alias another of the same call exactly
// (in == out), never partially. n is an element count.
struct VectorKernels {
  SimdLevel level;
  // out[i] = a[i] op b[i]
  void (*binary[static_cast<int>(BinaryOp::kCount)])(const float* a, const float* b, float* out,
                                                     int64_t n);
  // out[i] = a[i] op s
  void (*binary_scalar_right[static_cast<int>(BinaryOp::kCount)])(const float* a, float s,
                                                                  float* out, int64_t n);
  // out[i] = s op b[i]
  void (*binary_scalar_left[static_cast<int>(BinaryOp::kCount)])(float s, const float* b,
                                                                 float* out, int64_t n);
  // A pattern of `period` floats repeated over `rows` rows: [0] out = a op pattern,
  // [1] out = pattern op a (a and out hold rows * period floats).
  void (*binary_repeat[2][static_cast<int>(BinaryOp::kCount)])(const float* a, const float* pattern,
                                                               int64_t period, float* out,
                                                               int64_t rows);
  // y[i] = f(x[i])
  void (*unary[static_cast<int>(UnaryOp::kCount)])(const float* x, float* y, int64_t n, float p0,
                                                   float p1);
  // out[i] = a[i] + b[i] + c[i]; c may be null (then a + b), b may be null (then a + c).
  void (*add3)(const float* a, const float* b, const float* c, float* out, int64_t n);
  // out[i] = cond[i] != 0 ? a[i] : b[i]; a or b may be null, then `a_scalar` / `b_scalar`.
  void (*select)(const uint8_t* cond, const float* a, float a_scalar, const float* b,
                 float b_scalar, float* out, int64_t n);

  float (*sum)(const float* x, int64_t n);
  // Softmax / LogSoftmax of one contiguous row (y may be x).
  void (*softmax_row)(const float* x, float* y, int64_t n);
  void (*log_softmax_row)(const float* x, float* y, int64_t n);
  // Layer normalization of one row: y = (x - mean) / sqrt(var + epsilon) * gamma + beta
  // (beta may be null). Mean and variance (biased) are computed over the row.
  void (*layer_norm_row)(const float* x, const float* gamma, const float* beta, float epsilon,
                         float* y, int64_t n);
  // dst[j * dst_stride + i] = src[i * src_stride + j] for i < rows, j < cols: a 2-D
  // transpose of 4-byte elements (any 4-byte type; bits are moved, never interpreted).
  void (*transpose_2d)(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride,
                       int64_t rows, int64_t cols);
};

// The loops of the active level.
const VectorKernels& vector_kernels();
// The loops of one level (clamped to what the CPU supports).
const VectorKernels& vector_kernels(SimdLevel level);

// An activation (ops/fused_activation.h) as a unary map, for kernels that apply it to their
// output in place (FusedConv, FusedMatMul).
struct Activation {
  UnaryOp op;
  float p0 = 0;  // alpha
  float p1 = 0;  // beta
};
// nullopt for the kinds without a unary map here (Softplus, Elu, ...); every kind of
// ops/fused_ops.h's kActivations has one.
std::optional<Activation> vector_activation(const ActivationFunction& activation);
// y[i] = act(x[i]) for i < n at the active level (y may be x). Single-threaded: callers
// apply it to the block they just computed, while it is in cache.
void apply_activation(const Activation& activation, const float* x, float* y, int64_t n);
// x[i] = f(x[i]) for i < n: on the SIMD loops where `f` has a unary map, else f's own scalar
// loop (a recurrent cell's gates).
void apply_activation_in_place(const ActivationFunction& f, float* x, int64_t n);

}  // namespace onnxkit

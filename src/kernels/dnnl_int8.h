// int8 products on oneDNN (dnnl_int8.cc): MatMulInteger, ConvInteger, QLinearMatMul,
// QLinearConv and com.onnxkit MatMulIntegerToFloat / ConvIntegerToFloat /
// ChannelsLastQLinearConv with constant int8 weights. Requantization is MLAS's: round half to
// even, then the zero point, then saturation (an eltwise_round post-op where oneDNN
// requantizes, as it would otherwise add the zero point before rounding).
//
// oneDNN 2.6 takes u8 or s8 activations and s8 weights only. The kernels hand it u8
// activations (s8 ones shifted by 128) and s8 weights (u8 ones shifted by -128), and put the
// zero points back themselves from the operands' row and column sums, so every zero point
// (per tensor, per column, per output channel) is exact.
//
// With VNNI (VPDPBUSD) a u8 x s8 product is exact. Without it oneDNN multiplies pairs with
// VPMADDUBSW, whose int16 sum saturates once two products pass 32767 (255 * 127 * 2 does):
// ONNX Runtime's "wrong results without VNNI" and the reason its tool has reduce_range. There
// the kernels split each weight into 16 * high + low with both parts in [-8, 8], run both
// halves in one product twice as wide and join them: no pair can saturate (255 * 8 * 2), the
// result is exact, at twice the arithmetic.
#pragma once

namespace onnxkit {

class OpRegistry;

void register_dnnl_int8_kernels(OpRegistry& registry);

// Whether kernels created now split their weights (oneDNN runs without VNNI: on the CPU,
// or capped by DNNL_MAX_CPU_ISA / dnnl::set_max_cpu_isa).
bool int8_weights_split();

// Tests: kernels created while one is alive split their weights (or not) whatever the CPU.
class Int8SplitOverride {
 public:
  explicit Int8SplitOverride(bool split);
  ~Int8SplitOverride();
  Int8SplitOverride(const Int8SplitOverride&) = delete;
  Int8SplitOverride& operator=(const Int8SplitOverride&) = delete;

 private:
  int previous_;
};

// Which oneDNN convolution kernel a channels-last int8 conv asks for. oneDNN 2.6 lists its
// brgemm kernels (brgconv) first for AVX-512; its direct JIT kernels (jit_int8) are faster
// where the output plane is large (ResNet-50's and MobileNetV2's layers at 28x28 and more:
// 4-20 us less a layer in the model) and slower where it is small and the channels many
// (3x3 512 -> 512 at 7x7: 90 us more). kByOutputSize takes the direct kernel from 28x28
// outputs on.
enum class Int8ConvKernel { kByOutputSize, kBrgemm, kDirect };

// Tests: convolutions planned while one is alive ask for `kernel` whatever their size (both
// kernels must give the reference's bytes).
class Int8ConvKernelOverride {
 public:
  explicit Int8ConvKernelOverride(Int8ConvKernel kernel);
  ~Int8ConvKernelOverride();
  Int8ConvKernelOverride(const Int8ConvKernelOverride&) = delete;
  Int8ConvKernelOverride& operator=(const Int8ConvKernelOverride&) = delete;

 private:
  Int8ConvKernel previous_;
};

}  // namespace onnxkit

// Op family: com.microsoft's QOperator ops, the ones ONNX Runtime's quantization tool writes
// in QOperator format (quantize_static(..., quant_format=QOperator)): QLinearAdd, QLinearMul,
// QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearAveragePool (2-D NCHW),
// QLinearConcat, QLinearSoftmax, QLinearWhere and QGemm (version 1 of com.microsoft); and
// MatMulIntegerToFloat / DynamicQuantizeMatMul, which ORT's optimizer makes of the tool's
// dynamic MatMul chains.
//
// Each reference kernel computes what ORT's CPU kernel computes (contrib_ops/cpu/quantization
// and MLAS), rounding steps included, so ORT-quantized files give ORT's numbers; the shared
// arithmetic is in ops/qlinear_arithmetic.h. Scales and zero points are per tensor (a scalar
// or a one-element tensor), as ORT requires, except QGemm's B (per column). A missing zero
// point is 0 of the data's type.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ir/domain.h"
#include "ops/op_utils.h"
#include "ops/qlinear_arithmetic.h"
#include "ops/qlinear_microsoft.h"
#include "ops/registry.h"
#include "ops/type_inference.h"

namespace onnxkit {

// ---------------------------------------------------------------------------------------
// Parameters

QuantParam read_quant_param(const KernelContext& context, size_t scale_index, size_t zp_index,
                            DType dtype, std::string_view of) {
  QuantParam param;
  if (!context.has_input(scale_index)) context.fail("the scale of {} is missing", of);
  const Tensor& scale = context.input(scale_index);
  if (scale.dtype() != DType::kFloat) {
    context.fail("the scale of {} (input {}) has type {} (needs float)", of, scale_index,
                 dtype_name(scale.dtype()));
  }
  if (scale.numel() != 1) {
    context.fail("the scale of {} (input {}) must be a scalar (per tensor), got shape {}", of,
                 scale_index, shape_to_string(scale.shape()));
  }
  param.scale = scale.data<float>()[0];
  if (zp_index == kNoInput || !context.has_input(zp_index)) return param;
  const Tensor& zp = context.input(zp_index);
  if (zp.dtype() != dtype) {
    context.fail("the zero point of {} (input {}) has type {} but the data has type {}", of,
                 zp_index, dtype_name(zp.dtype()), dtype_name(dtype));
  }
  if (zp.numel() != 1) {
    context.fail("the zero point of {} (input {}) must be a scalar (per tensor), got shape {}", of,
                 zp_index, shape_to_string(zp.shape()));
  }
  param.zero_point = dtype == DType::kUInt8 ? zp.data<uint8_t>()[0] : zp.data<int8_t>()[0];
  return param;
}

DType int8_data_type(const KernelContext& context, size_t index, std::string_view what) {
  const DType dtype = context.input(index).dtype();
  if (dtype != DType::kUInt8 && dtype != DType::kInt8) {
    context.fail("{} has type {} (needs uint8 or int8)", what, dtype_name(dtype));
  }
  return dtype;
}

QLinearBinaryOperands read_qlinear_binary(KernelContext& context) {
  const DType dtype = int8_data_type(context, 0, "A");
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(3);
  if (b.dtype() != dtype) {
    context.fail("B has type {} but A has type {}", dtype_name(b.dtype()), dtype_name(dtype));
  }
  QLinearBinaryOperands operands{dtype, read_quant_param(context, 1, 2, dtype, "A"),
                                 read_quant_param(context, 4, 5, dtype, "B"),
                                 read_quant_param(context, 6, 7, dtype, "C"), nullptr};
  operands.output =
      &context.allocate_output_uninitialized(0, dtype, broadcast_shapes(a.shape(), b.shape()));
  return operands;
}

BinaryRunKind binary_run_kind(const Shape& a, const Shape& b, const Shape& out) {
  if (shape_numel(a) == 1) return BinaryRunKind::kScalarA;
  if (shape_numel(b) == 1) return BinaryRunKind::kScalarB;
  // The innermost output axis longer than 1 decides, as in ORT's broadcaster: a side that
  // does not vary along it is one value per run.
  for (size_t i = out.size(); i-- > 0;) {
    if (out[i] == 1) continue;
    const size_t from_end = out.size() - i;
    auto dim_of = [&](const Shape& s) {
      return from_end <= s.size() ? s[s.size() - from_end] : int64_t{1};
    };
    if (dim_of(a) == 1) return BinaryRunKind::kScalarA;
    if (dim_of(b) == 1) return BinaryRunKind::kScalarB;
    return BinaryRunKind::kBoth;
  }
  return BinaryRunKind::kScalarA;
}

std::vector<uint8_t> lookup_table(DType dtype, QuantParam x, QuantParam y,
                                  const std::function<void(float*, int)>& transform) {
  float values[256];
  for (int i = 0; i < 256; ++i) {
    const int32_t q = dtype == DType::kUInt8 ? static_cast<int32_t>(static_cast<uint8_t>(i))
                                             : static_cast<int32_t>(static_cast<int8_t>(i));
    values[i] = x.scale * static_cast<float>(q - x.zero_point);
  }
  transform(values, 256);
  std::vector<uint8_t> table(256);
  for (int i = 0; i < 256; ++i) {
    table[i] =
        dtype == DType::kUInt8
            ? qlinear::quantize<uint8_t>(values[i], y.scale, y.zero_point)
            : static_cast<uint8_t>(qlinear::quantize<int8_t>(values[i], y.scale, y.zero_point));
  }
  return table;
}

void mlas_logistic(float* values, int n) {
  // MLAS's logistic (Eigen's rational approximation) as its FMA3 kernel evaluates it.
  constexpr float kAlpha9 = 4.37031012579801e-11f, kAlpha7 = 1.15627324459942e-07f,
                  kAlpha5 = 6.08574864600143e-05f, kAlpha3 = 8.51377133304701e-03f,
                  kAlpha1 = 2.48287947061529e-01f, kBeta10 = 6.10247389755681e-13f,
                  kBeta8 = 5.76102136993427e-09f, kBeta6 = 6.29106785017040e-06f,
                  kBeta4 = 1.70198817374094e-03f, kBeta2 = 1.16817656904453e-01f,
                  kBeta0 = 9.93151921023180e-01f;
  for (int i = 0; i < n; ++i) {
    const float v = std::min(std::max(values[i], -18.0f), 18.0f);
    const float v2 = v * v;
    float p = std::fma(v2, kAlpha9, kAlpha7);
    p = std::fma(p, v2, kAlpha5);
    p = std::fma(p, v2, kAlpha3);
    p = std::fma(p, v2, kAlpha1);
    p = p * v;
    float q = std::fma(v2, kBeta10, kBeta8);
    q = std::fma(q, v2, kBeta6);
    q = std::fma(q, v2, kBeta4);
    q = std::fma(q, v2, kBeta2);
    q = std::fma(q, v2, kBeta0);
    values[i] = std::min(std::max(p / q + 0.5f, 0.0f), 1.0f);
  }
}

namespace {

// ---------------------------------------------------------------------------------------
// QLinearAdd / QLinearMul: (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp) -> C.

class QLinearBinaryKernel : public OpKernel {
 public:
  explicit QLinearBinaryKernel(const KernelCreateContext& context)
      : is_add_(context.node().op_type() == "QLinearAdd") {}

  void compute(KernelContext& context) const override {
    const QLinearBinaryOperands o = read_qlinear_binary(context);
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(3);
    if (o.dtype == DType::kUInt8) {
      run<uint8_t>(a, b, *o.output, o.a, o.b, o.c);
    } else {
      run<int8_t>(a, b, *o.output, o.a, o.b, o.c);
    }
  }

 private:
  template <typename Q>
  void run(const Tensor& a, const Tensor& b, Tensor& c, QuantParam pa, QuantParam pb,
           QuantParam pc) const {
    const Q* x = a.data<Q>();
    const Q* y = b.data<Q>();
    Q* z = c.mutable_data<Q>();
    const BinaryRunKind kind = binary_run_kind(a.shape(), b.shape(), c.shape());
    if (is_add_) {
      const qlinear::AddParams p(pa.scale, pa.zero_point, pb.scale, pb.zero_point, pc.scale,
                                 pc.zero_point);
      for_each_binary_run(
          a.shape(), b.shape(), c.shape(),
          [&](int64_t o, int64_t ia, int64_t ib, int64_t n, int64_t sa, int64_t sb) {
            qlinear_add_run<Q>(p, kind, x + ia, sa, y + ib, sb, z + o, n);
          });
      return;
    }
    const float ratio = qlinear::mul_ratio(pa.scale, pb.scale, pc.scale);
    for_each_binary_run(a.shape(), b.shape(), c.shape(),
                        [&](int64_t o, int64_t ia, int64_t ib, int64_t n, int64_t sa, int64_t sb) {
                          for (int64_t i = 0; i < n; ++i) {
                            z[o + i] = qlinear::mul_value<Q>(x[ia + i * sa] - pa.zero_point,
                                                             y[ib + i * sb] - pb.zero_point, ratio,
                                                             pc.zero_point);
                          }
                        });
  }

  bool is_add_;
};

// ---------------------------------------------------------------------------------------
// QLinearSigmoid / QLinearLeakyRelu: (X, X_scale, X_zp, Y_scale, Y_zp) -> Y through a table
// of the 256 possible inputs, built in float as ORT builds it.

class QLinearLookupKernel : public OpKernel {
 public:
  explicit QLinearLookupKernel(const KernelCreateContext& context)
      : sigmoid_(context.node().op_type() == "QLinearSigmoid"),
        alpha_(context.attr_float("alpha", 0.01f)) {}

  void compute(KernelContext& context) const override {
    const DType dtype = int8_data_type(context, 0, "X");
    const QuantParam px = read_quant_param(context, 1, 2, dtype, "X");
    const QuantParam py = read_quant_param(context, 3, 4, dtype, "Y");
    const std::vector<uint8_t> table = lookup_table(dtype, px, py, [&](float* v, int n) {
      if (sigmoid_) {
        mlas_logistic(v, n);
      } else {
        for (int i = 0; i < n; ++i) v[i] = v[i] >= 0.0f ? v[i] : alpha_ * v[i];
      }
    });
    const Tensor& x = context.input(0);
    Tensor& y = context.allocate_output_uninitialized(0, dtype, x.shape());
    apply_lookup_table(table.data(), static_cast<const uint8_t*>(x.raw_data()),
                       static_cast<uint8_t*>(y.mutable_raw_data()), x.numel());
  }

 private:
  bool sigmoid_;
  float alpha_;
};

// ---------------------------------------------------------------------------------------
// QLinearGlobalAveragePool: (X, x_scale, x_zp, y_scale, y_zp) -> Y, NCHW or (channels_last)
// NHWC. The integer sum of each image, minus the zero point's share, is requantized with
// x_scale / (y_scale * image size).

class QLinearGlobalAveragePoolKernel : public OpKernel {
 public:
  explicit QLinearGlobalAveragePoolKernel(const KernelCreateContext& context)
      : channels_last_(context.attr_int("channels_last", 0) != 0) {}

  void compute(KernelContext& context) const override {
    const DType dtype = int8_data_type(context, 0, "X");
    const Tensor& x = context.input(0);
    if (x.rank() < 3) {
      context.fail("X has shape {} (needs rank 3 or more)", shape_to_string(x.shape()));
    }
    const QuantParam px = read_quant_param(context, 1, 2, dtype, "X");
    const QuantParam py = read_quant_param(context, 3, 4, dtype, "Y");
    const GlobalPoolGeometry g = global_pool_geometry(x.shape(), channels_last_);
    Tensor& y = context.allocate_output_uninitialized(0, dtype, g.out_shape);
    const float multiplier = px.scale / (py.scale * static_cast<float>(g.image));
    const int32_t bias = -px.zero_point * static_cast<int32_t>(g.image);
    std::vector<int32_t> sums(static_cast<size_t>(g.batch * g.channels), 0);
    auto sum = [&](auto tag) {
      using Q = decltype(tag);
      const Q* src = x.data<Q>();
      if (channels_last_) {  // pixel by pixel: the channels are contiguous
        for (int64_t n = 0; n < g.batch; ++n) {
          int32_t* row = sums.data() + n * g.channels;
          for (int64_t i = 0; i < g.image; ++i) {
            const Q* pixel = src + (n * g.image + i) * g.channels;
            for (int64_t c = 0; c < g.channels; ++c) row[c] += pixel[c];
          }
        }
        return;
      }
      for (int64_t n = 0; n < g.batch; ++n) {
        for (int64_t c = 0; c < g.channels; ++c) {
          int32_t acc = 0;
          for (int64_t i = 0; i < g.image; ++i) {
            acc += src[(n * g.channels + c) * g.image + i];
          }
          sums[n * g.channels + c] = acc;
        }
      }
    };
    auto write = [&](auto tag) {
      using Q = decltype(tag);
      sum(tag);
      Q* dst = y.mutable_data<Q>();
      for (size_t i = 0; i < sums.size(); ++i) {
        dst[i] = qlinear::requantize<Q>(sums[i] + bias, multiplier, py.zero_point);
      }
    };
    if (dtype == DType::kUInt8) {
      write(uint8_t{});
    } else {
      write(int8_t{});
    }
  }

 private:
  bool channels_last_;
};

// ---------------------------------------------------------------------------------------
// QLinearAveragePool: (X, x_scale, x_zp, y_scale, y_zp) -> Y, AveragePool's attributes
// (kernel_shape, strides, pads, count_include_pad, ceil_mode) over 2-D NCHW images. As ORT:
// every input dequantized to float, each window summed in float in row order and divided by
// its count, then y = nearbyint(avg / y_scale + y_zp) saturated.

class QLinearAveragePoolKernel : public OpKernel {
 public:
  explicit QLinearAveragePoolKernel(const KernelCreateContext& context)
      : kernel_(context.attr_ints("kernel_shape")),
        strides_(context.attr_ints("strides", {1, 1})),
        pads_(context.attr_ints("pads", {0, 0, 0, 0})),
        count_include_pad_(context.attr_int("count_include_pad", 0) != 0),
        ceil_mode_(context.attr_int("ceil_mode", 0) != 0) {
    if (context.attr_int("channels_last", 0) != 0 || kernel_.size() != 2 || strides_.size() != 2 ||
        pads_.size() != 4 || context.attr_string("auto_pad", "NOTSET") != "NOTSET") {
      context.fail(
          "only 2-D NCHW pooling with explicit pads is supported (kernel_shape has {} "
          "dims, channels_last {}, auto_pad {})",
          kernel_.size(), context.attr_int("channels_last", 0),
          context.attr_string("auto_pad", "NOTSET"));
    }
    for (int64_t d : context.attr_ints("dilations", {1, 1})) {
      if (d != 1) context.fail("dilations {} are not supported (ORT's kernel has none)", d);
    }
  }

  void compute(KernelContext& context) const override {
    const DType dtype = int8_data_type(context, 0, "X");
    const Tensor& x = context.input(0);
    if (x.rank() != 4) {
      context.fail("X has shape {} (needs [N, C, H, W])", shape_to_string(x.shape()));
    }
    const QuantParam px = read_quant_param(context, 1, 2, dtype, "X");
    const QuantParam py = read_quant_param(context, 3, 4, dtype, "Y");
    const int64_t h = x.shape()[2], w = x.shape()[3];
    auto pooled = [&](int64_t size, int64_t k, int64_t s, int64_t pad) {
      const int64_t span = size + pad - k;
      return (ceil_mode_ ? (span + s - 1) / s : span / s) + 1;
    };
    const int64_t ph_count = pooled(h, kernel_[0], strides_[0], pads_[0] + pads_[2]);
    const int64_t pw_count = pooled(w, kernel_[1], strides_[1], pads_[1] + pads_[3]);
    if (ph_count < 1 || pw_count < 1) {
      context.fail("the window {}x{} does not fit X of shape {}", kernel_[0], kernel_[1],
                   shape_to_string(x.shape()));
    }
    Tensor& y = context.allocate_output_uninitialized(
        0, dtype, {x.shape()[0], x.shape()[1], ph_count, pw_count});
    auto run = [&](auto tag) {
      using Q = decltype(tag);
      const Q* src = x.data<Q>();
      Q* dst = y.mutable_data<Q>();
      std::vector<float> image(static_cast<size_t>(h * w));
      for (int64_t c = 0; c < x.shape()[0] * x.shape()[1]; ++c) {
        for (int64_t i = 0; i < h * w; ++i) {
          image[i] = px.scale *
                     static_cast<float>(static_cast<int32_t>(src[c * h * w + i]) - px.zero_point);
        }
        for (int64_t ph = 0; ph < ph_count; ++ph) {
          int64_t h0 = ph * strides_[0] - pads_[0];
          const int64_t h1 = std::min(h0 + kernel_[0], h);
          h0 = std::max<int64_t>(h0, 0);
          for (int64_t pw = 0; pw < pw_count; ++pw) {
            int64_t w0 = pw * strides_[1] - pads_[1];
            const int64_t w1 = std::min(w0 + kernel_[1], w);
            w0 = std::max<int64_t>(w0, 0);
            float sum = 0.0f;
            for (int64_t i = h0; i < h1; ++i) {
              for (int64_t j = w0; j < w1; ++j) sum += image[i * w + j];
            }
            const int64_t count =
                count_include_pad_ ? kernel_[0] * kernel_[1] : (h1 - h0) * (w1 - w0);
            const float avg = sum / static_cast<float>(count);
            dst[(c * ph_count + ph) * pw_count + pw] =
                qlinear::saturate_round<Q>(avg / py.scale + static_cast<float>(py.zero_point));
          }
        }
      }
    };
    if (dtype == DType::kUInt8) {
      run(uint8_t{});
    } else {
      run(int8_t{});
    }
  }

 private:
  std::vector<int64_t> kernel_, strides_, pads_;
  bool count_include_pad_, ceil_mode_;
};

// ---------------------------------------------------------------------------------------
// QLinearConcat: (Y_scale, Y_zp, X0, X0_scale, X0_zp, X1, ...) -> Y. An input with Y's
// scale and zero point is copied, another goes through a requantization table.

class QLinearConcatKernel : public OpKernel {
 public:
  explicit QLinearConcatKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis")) {
    const size_t count = context.node().inputs().size();
    if (count < 5 || (count - 2) % 3 != 0) {
      context.fail(
          "has {} inputs (needs Y_scale, Y_zero_point and a (tensor, scale, zero "
          "point) triple per input)",
          count);
    }
  }

  void compute(KernelContext& context) const override {
    const size_t inputs = (context.num_inputs() - 2) / 3;
    const DType dtype = int8_data_type(context, 2, "input 0");
    const QuantParam py = read_quant_param(context, 0, 1, dtype, "Y");
    std::vector<Tensor> parts;
    for (size_t k = 0; k < inputs; ++k) {
      const size_t at = 2 + 3 * k;
      const std::string what = fmt::format("input {}", k);
      const Tensor& x = context.input(at);
      if (x.dtype() != dtype) {
        context.fail("{} has type {} but input 0 has type {}", what, dtype_name(x.dtype()),
                     dtype_name(dtype));
      }
      const QuantParam px = read_quant_param(context, at + 1, at + 2, dtype, what);
      if (px.scale == py.scale && px.zero_point == py.zero_point) {
        parts.push_back(x);
        continue;
      }
      const std::vector<uint8_t> table = lookup_table(dtype, px, py, [](float*, int) {});
      Tensor requantized(dtype, x.shape());
      apply_lookup_table(table.data(), static_cast<const uint8_t*>(x.raw_data()),
                         static_cast<uint8_t*>(requantized.mutable_raw_data()), x.numel());
      parts.push_back(std::move(requantized));
    }
    context.set_output(0, concat_tensors(parts, axis_, context.node().describe()));
  }

 private:
  int64_t axis_;
};

// ---------------------------------------------------------------------------------------
// QLinearSoftmax: (X, X_scale, X_zp, Y_scale, Y_zp) -> Y, attributes axis and opset (the
// opset of the Softmax it replaced: before 13 it normalizes over all axes from `axis` on).
// ORT's table of exp((i - 255 + shift) * x_scale) in double, stored as float, summed in
// float; y = round(table[x] * floor(1 / y_scale) / sum) + y_zp. X's zero point cancels out.

class QLinearSoftmaxKernel : public OpKernel {
 public:
  explicit QLinearSoftmaxKernel(const KernelCreateContext& context)
      : opset_(context.attr_int("opset")),
        axis_(context.attr_int("axis", context.attr_int("opset") < 13 ? 1 : -1)) {}

  void compute(KernelContext& context) const override {
    const DType dtype = int8_data_type(context, 0, "X");
    const Tensor& x = context.input(0);
    const QuantParam px = read_quant_param(context, 1, 2, dtype, "X");
    const QuantParam py = read_quant_param(context, 3, 4, dtype, "Y");
    Tensor& y = context.allocate_output_uninitialized(0, dtype, x.shape());
    if (x.numel() == 0) return;
    const int64_t rank = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(axis_, rank, "axis");
    const Shape& shape = x.shape();
    const bool flattened = opset_ < 13;
    const int64_t reduce = flattened ? shape_numel(std::span(shape).subspan(axis)) : shape[axis];
    const int64_t inner = flattened ? 1 : shape_numel(std::span(shape).subspan(axis + 1));
    const int64_t outer = x.numel() / (reduce * inner);
    const std::vector<float> table = softmax_table(px.scale, reduce, dtype == DType::kInt8);
    const float y_scale = std::floor(1.0f / py.scale);
    std::vector<float> exps(static_cast<size_t>(reduce));
    auto run = [&](auto tag) {
      using Q = decltype(tag);
      const Q* src = x.data<Q>();
      Q* dst = y.mutable_data<Q>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t in = 0; in < inner; ++in) {
          const int64_t base = o * reduce * inner + in;
          Q max = src[base];
          for (int64_t r = 1; r < reduce; ++r) max = std::max(max, src[base + r * inner]);
          float sum = 0.0f;
          for (int64_t r = 0; r < reduce; ++r) {
            const int32_t v = src[base + r * inner];
            // Aligns the row's maximum with the table's top entry.
            const uint8_t index = std::is_same_v<Q, uint8_t> ? static_cast<uint8_t>(255 - max + v)
                                                             : static_cast<uint8_t>(127 - max + v);
            exps[r] = table[index];
            sum += exps[r];
          }
          for (int64_t r = 0; r < reduce; ++r) {
            const float q = sum == 0.0f ? 0.0f : std::nearbyint(exps[r] * y_scale / sum);
            dst[base + r * inner] = qlinear::saturate_round<Q>(q + py.zero_point);
          }
        }
      }
    };
    if (dtype == DType::kUInt8) {
      run(uint8_t{});
    } else {
      run(int8_t{});
    }
  }

 private:
  static std::vector<float> softmax_table(float x_scale, int64_t reduce, bool is_signed) {
    double shift = std::log(std::numeric_limits<float>::max() / static_cast<double>(reduce));
    shift = std::max(0.0, shift - 5.0) / x_scale;
    std::vector<float> table(256);
    for (int32_t i = 0; i < 256; ++i) {
      const double e = std::exp((static_cast<double>(i) - 255 + shift) * x_scale);
      table[static_cast<uint8_t>(is_signed ? i - 128 : i)] = static_cast<float>(e);
    }
    return table;
  }

  int64_t opset_;
  int64_t axis_;
};

// ---------------------------------------------------------------------------------------
// QLinearWhere: (condition, X, x_scale, x_zp, Y, y_scale, y_zp, z_scale, z_zp) -> Z: X and Y
// requantized to Z's parameters (by table, or copied where they already have them), then
// selected with numpy broadcasting.

class QLinearWhereKernel : public OpKernel {
 public:
  explicit QLinearWhereKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& cond = context.input(0);
    if (cond.dtype() != DType::kBool) {
      context.fail("condition has type {} (needs bool)", dtype_name(cond.dtype()));
    }
    const DType dtype = int8_data_type(context, 1, "X");
    const Tensor& x = context.input(1);
    const Tensor& y = context.input(4);
    if (y.dtype() != dtype) {
      context.fail("Y has type {} but X has type {}", dtype_name(y.dtype()), dtype_name(dtype));
    }
    const QuantParam px = read_quant_param(context, 2, 3, dtype, "X");
    const QuantParam py = read_quant_param(context, 5, 6, dtype, "Y");
    const QuantParam pz = read_quant_param(context, 7, 8, dtype, "Z");
    auto table_for = [&](QuantParam p) {
      std::vector<uint8_t> table(256);
      if (p.scale == pz.scale && p.zero_point == pz.zero_point) {
        for (int i = 0; i < 256; ++i) table[i] = static_cast<uint8_t>(i);
        return table;
      }
      return lookup_table(dtype, p, pz, [](float*, int) {});
    };
    const std::vector<uint8_t> tx = table_for(px), ty = table_for(py);
    const std::vector<Shape> shapes{cond.shape(), x.shape(), y.shape()};
    const Shape out_shape = broadcast_shapes(shapes);
    Tensor& z = context.allocate_output_uninitialized(0, dtype, out_shape);
    const std::vector<std::vector<int64_t>> strides{broadcast_strides(cond.shape(), out_shape),
                                                    broadcast_strides(x.shape(), out_shape),
                                                    broadcast_strides(y.shape(), out_shape)};
    const bool* c = cond.data<bool>();
    const auto* xs = static_cast<const uint8_t*>(x.raw_data());
    const auto* ys = static_cast<const uint8_t*>(y.raw_data());
    auto* out = static_cast<uint8_t*>(z.mutable_raw_data());
    for_each_broadcast(out_shape, strides, [&](int64_t i, const int64_t* at) {
      out[i] = c[at[0]] ? tx[xs[at[1]]] : ty[ys[at[2]]];
    });
  }
};

// ---------------------------------------------------------------------------------------
// QGemm: (A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp) -> Y, attributes alpha,
// transA, transB. The int32 product of the zero-point-shifted A and B plus C (int32, Gemm's
// broadcasting), then requantized with alpha * a_scale * b_scale[n] / y_scale; without
// y_scale the output is float: that scale times the sum.

class QGemmKernel : public OpKernel {
 public:
  explicit QGemmKernel(const KernelCreateContext& context)
      : alpha_(context.attr_float("alpha", 1.0f)),
        trans_a_(context.attr_int("transA", 0) != 0),
        trans_b_(context.attr_int("transB", 0) != 0) {}

  void compute(KernelContext& context) const override {
    const QGemmProblem p = qgemm_problem(context, alpha_, trans_a_, trans_b_);
    std::vector<int32_t> acc(static_cast<size_t>(p.m * p.n), 0);
    const auto* a = static_cast<const uint8_t*>(p.a->raw_data());
    const auto* b = static_cast<const uint8_t*>(p.b->raw_data());
    auto value = [](const uint8_t* data, int64_t i, bool is_signed) {
      return is_signed ? static_cast<int32_t>(static_cast<int8_t>(data[i]))
                       : static_cast<int32_t>(data[i]);
    };
    std::vector<int32_t> b_row(static_cast<size_t>(p.n));
    for (int64_t k = 0; k < p.k; ++k) {
      for (int64_t j = 0; j < p.n; ++j) {
        b_row[j] = value(b, trans_b_ ? j * p.k + k : k * p.n + j, p.b_signed) -
                   p.b_zero_points[p.b_zero_points.size() == 1 ? 0 : j];
      }
      for (int64_t i = 0; i < p.m; ++i) {
        const int32_t av = value(a, trans_a_ ? k * p.m + i : i * p.k + k, p.a_signed) - p.a_zp;
        int32_t* row = acc.data() + i * p.n;
        for (int64_t j = 0; j < p.n; ++j) row[j] += av * b_row[j];
      }
    }
    qgemm_output(context, p, acc);
  }

 private:
  float alpha_;
  bool trans_a_, trans_b_;
};

}  // namespace

// ---------------------------------------------------------------------------------------
// MatMulIntegerToFloat and DynamicQuantizeMatMul: what ORT's session optimizer makes of the
// tool's dynamic chains DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul (-> Add), and
// what files saved with its optimized_model_filepath hold. Y = float((A - a_zp) x (B - b_zp))
// * (a_scale * b_scale[j]) + bias[j], in that order, as MLAS's output stage computes it.
// B is a [K, N] matrix; its scale and zero point one value or one per column; A's scale and
// zero point one value. DynamicQuantizeMatMul quantizes a float A as DynamicQuantizeLinear.

namespace {

template <typename T>
std::vector<int32_t> int8_as_int32(const Tensor& t) {
  return std::vector<int32_t>(t.data<T>(), t.data<T>() + t.numel());
}

std::vector<int32_t> int8_values_of(const Tensor& t) {
  return t.dtype() == DType::kUInt8 ? int8_as_int32<uint8_t>(t) : int8_as_int32<int8_t>(t);
}

// One value or one per column of B ([N] or a scalar / [1]).
void check_per_column(const KernelContext& context, const Tensor& t, int64_t n,
                      std::string_view what) {
  if (t.numel() != 1 && !(t.rank() == 1 && t.shape()[0] == n)) {
    context.fail("{} has shape {}: needs one value or one per column of B ([{}])", what,
                 shape_to_string(t.shape()), n);
  }
}

}  // namespace

MsIntegerMatMulB read_ms_integer_matmul_b(const KernelContext& context, const Tensor& a,
                                          size_t b_index, size_t scale_index, size_t zp_index,
                                          size_t bias_index) {
  const DType dtype = int8_data_type(context, b_index, "B");
  const Tensor& b = context.input(b_index);
  if (b.rank() != 2) {
    context.fail("B has shape {}: needs a [K, N] matrix", shape_to_string(b.shape()));
  }
  if (a.rank() < 1 || a.shape().back() != b.shape()[0]) {
    context.fail("A has shape {} and B {}: A's last dimension must be B's first",
                 shape_to_string(a.shape()), shape_to_string(b.shape()));
  }
  MsIntegerMatMulB out;
  out.k = b.shape()[0];
  out.n = b.shape()[1];
  if (!context.has_input(scale_index)) context.fail("b_scale (input {}) is missing", scale_index);
  const Tensor& scale = context.input(scale_index);
  if (scale.dtype() != DType::kFloat)
    context.fail("b_scale has type {} (needs float)", dtype_name(scale.dtype()));
  check_per_column(context, scale, out.n, "b_scale");
  out.scales.assign(scale.data<float>(), scale.data<float>() + scale.numel());
  if (context.has_input(zp_index)) {
    const Tensor& zp = context.input(zp_index);
    if (zp.dtype() != dtype) {
      context.fail("b_zero_point has type {} but B has type {}", dtype_name(zp.dtype()),
                   dtype_name(dtype));
    }
    check_per_column(context, zp, out.n, "b_zero_point");
    out.zero_points = int8_values_of(zp);
  } else {
    out.zero_points = {0};
  }
  if (bias_index != kNoInput && context.has_input(bias_index)) {
    const Tensor& bias = context.input(bias_index);
    if (bias.dtype() != DType::kFloat || bias.shape() != Shape{out.n}) {
      context.fail("bias has type {} and shape {}: needs float [{}]", dtype_name(bias.dtype()),
                   shape_to_string(bias.shape()), out.n);
    }
    out.bias = bias.data<float>();
  }
  return out;
}

namespace {

// Y = float(sum over k of a_values[row, k] * (B - b_zp)[k, j]) * (a_scale * b_scale[j])
// (+ bias[j]); a_values has A's zero point taken off.
void ms_integer_matmul_to_float(KernelContext& context, const Tensor& a,
                                const std::vector<int32_t>& a_values, float a_scale,
                                const MsIntegerMatMulB& b, size_t b_index) {
  Shape out_shape = a.shape();
  out_shape.back() = b.n;
  Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, out_shape);
  float* dst = y.mutable_data<float>();
  const std::vector<int32_t> b_values = int8_values_of(context.input(b_index));
  const int64_t rows =
      b.k == 0 ? shape_numel(out_shape) / std::max<int64_t>(b.n, 1) : a.numel() / b.k;
  std::vector<int32_t> acc(static_cast<size_t>(b.n));
  for (int64_t row = 0; row < rows; ++row) {
    std::fill(acc.begin(), acc.end(), 0);
    for (int64_t i = 0; i < b.k; ++i) {
      const int32_t av = a_values[static_cast<size_t>(row * b.k + i)];
      for (int64_t j = 0; j < b.n; ++j) {
        const int32_t zp = b.zero_points[b.zero_points.size() == 1 ? 0 : j];
        acc[j] += av * (b_values[static_cast<size_t>(i * b.n + j)] - zp);
      }
    }
    for (int64_t j = 0; j < b.n; ++j) {
      const float multiplier = a_scale * b.scales[b.scales.size() == 1 ? 0 : j];
      float v = static_cast<float>(acc[j]) * multiplier;
      if (b.bias) v += b.bias[j];
      dst[row * b.n + j] = v;
    }
  }
}

// com.microsoft MatMulIntegerToFloat: A, B, a_scale, b_scale, a_zero_point, b_zero_point,
// bias.
class MsMatMulIntegerToFloatKernel : public OpKernel {
 public:
  explicit MsMatMulIntegerToFloatKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const DType dtype = int8_data_type(context, 0, "A");
    const Tensor& a = context.input(0);
    const MsIntegerMatMulB b = read_ms_integer_matmul_b(context, a, 1, 3, 5, 6);
    const QuantParam a_param = read_quant_param(context, 2, 4, dtype, "A");
    std::vector<int32_t> a_values = int8_values_of(a);
    for (int32_t& v : a_values) v -= a_param.zero_point;
    ms_integer_matmul_to_float(context, a, a_values, a_param.scale, b, 1);
  }
};

// com.microsoft DynamicQuantizeMatMul: A (float), B, b_scale, b_zero_point, bias.
class DynamicQuantizeMatMulKernel : public OpKernel {
 public:
  explicit DynamicQuantizeMatMulKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    if (a.dtype() != DType::kFloat)
      context.fail("A has type {} (needs float)", dtype_name(a.dtype()));
    const MsIntegerMatMulB b = read_ms_integer_matmul_b(context, a, 1, 2, 3, 4);
    // DynamicQuantizeLinear's uint8 scale and zero point (ORT's GetQuantizationParameter).
    const float* x = a.data<float>();
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < a.numel(); ++i) {
      lo = std::fmin(lo, x[i]);
      hi = std::fmax(hi, x[i]);
    }
    const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    const float zero_point = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
    std::vector<int32_t> a_values(static_cast<size_t>(a.numel()));
    for (int64_t i = 0; i < a.numel(); ++i) {
      const float q = std::clamp(std::nearbyint(x[i] / scale) + zero_point, 0.0f, 255.0f);
      a_values[i] = static_cast<int32_t>(q) - static_cast<int32_t>(zero_point);
    }
    ms_integer_matmul_to_float(context, a, a_values, scale, b, 1);
  }
};

// ---------------------------------------------------------------------------------------
// Type inference (ops/type_inference.h).

SymbolicShape shape_of(const TypeInferenceContext& context, size_t i) {
  const ValueType* type = context.input_type(i);
  return type && type->is_tensor() ? type->shape : std::nullopt;
}

void infer_qlinear_binary(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<SymbolicShape> shapes{shape_of(context, 0), shape_of(context, 3)};
  context.set_output(0, tensor_type(dtype, broadcast_shapes(shapes)));
}

void infer_qlinear_global_average_pool(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  SymbolicShape shape = shape_of(context, 0);
  if (shape && shape->size() >= 3) {
    const bool channels_last = attribute_reader(context).attr_int("channels_last", 0) != 0;
    const size_t first = channels_last ? 1 : 2;
    for (size_t d = first; d < first + shape->size() - 2; ++d) (*shape)[d] = Dim::known(1);
  }
  context.set_output(0, tensor_type(dtype, shape));
}

void infer_qlinear_average_pool(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype != DType::kUndefined) context.set_output(0, tensor_type(dtype, unknown_dims(4)));
}

void infer_qlinear_concat(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 2);
  if (dtype == DType::kUndefined) return;
  const size_t count = context.num_inputs() >= 5 ? (context.num_inputs() - 2) / 3 : 0;
  SymbolicShape first = shape_of(context, 2);
  if (!first || first->empty() || count == 0) {
    context.set_output(0, tensor_type(dtype, std::nullopt));
    return;
  }
  const int64_t axis = attribute_reader(context).attr_int("axis", 0);
  const size_t a = rule_axis(axis, first->size());
  std::vector<Dim> axis_dims;
  for (size_t k = 0; k < count; ++k) {
    const SymbolicShape s = shape_of(context, 2 + 3 * k);
    if (!s || s->size() != first->size()) {
      context.set_output(0, tensor_type(dtype, unknown_dims(first->size())));
      return;
    }
    axis_dims.push_back((*s)[a]);
  }
  std::vector<Dim> out = *first;
  out[a] = dims_sum(axis_dims);
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

void infer_qlinear_where(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 1);
  if (dtype == DType::kUndefined) return;
  const std::vector<SymbolicShape> shapes{shape_of(context, 0), shape_of(context, 1),
                                          shape_of(context, 4)};
  context.set_output(0, tensor_type(dtype, broadcast_shapes(shapes)));
}

void infer_qgemm(TypeInferenceContext& context) {
  const DType dtype = context.has_input(8)   ? input_dtype(context, 8)
                      : context.has_input(7) ? DType::kUndefined
                                             : DType::kFloat;
  if (dtype == DType::kUndefined) return;
  const SymbolicShape a = shape_of(context, 0), b = shape_of(context, 3);
  if (!a || !b || a->size() != 2 || b->size() != 2) {
    context.set_output(0, tensor_type(dtype, unknown_dims(2)));
    return;
  }
  const KernelCreateContext attrs = attribute_reader(context);
  const bool ta = attrs.attr_int("transA", 0) != 0, tb = attrs.attr_int("transB", 0) != 0;
  context.set_output(0, tensor_type(dtype, std::vector<Dim>{(*a)[ta ? 1 : 0], (*b)[tb ? 0 : 1]}));
}

// Y: float, A's shape with its last dimension B's second.
void infer_ms_integer_matmul(TypeInferenceContext& context) {
  const SymbolicShape a = shape_of(context, 0), b = shape_of(context, 1);
  if (!a || !b || a->empty() || b->size() != 2) {
    context.set_output(0, tensor_type(DType::kFloat));
    return;
  }
  std::vector<Dim> dims = *a;
  dims.back() = (*b)[1];
  context.set_output(0, tensor_type(DType::kFloat, dims));
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Shared with the optimized kernels (ops/qlinear_microsoft.h).

void apply_lookup_table(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

GlobalPoolGeometry global_pool_geometry(const Shape& x, bool channels_last) {
  GlobalPoolGeometry g;
  const size_t rank = x.size();
  g.batch = x[0];
  g.channels = channels_last ? x[rank - 1] : x[1];
  const size_t first = channels_last ? 1 : 2;
  g.out_shape = x;
  for (size_t d = first; d < first + rank - 2; ++d) {
    g.image *= x[d];
    g.out_shape[d] = 1;
  }
  return g;
}

QGemmProblem qgemm_problem(const KernelContext& context, float alpha, bool trans_a, bool trans_b) {
  QGemmProblem p;
  p.a = &context.input(0);
  p.b = &context.input(3);
  const DType a_type = int8_data_type(context, 0, "A");
  const DType b_type = int8_data_type(context, 3, "B");
  if (p.a->rank() != 2 || p.b->rank() != 2) {
    context.fail("A has shape {} and B has shape {} (both must be 2-D)",
                 shape_to_string(p.a->shape()), shape_to_string(p.b->shape()));
  }
  p.a_signed = a_type == DType::kInt8;
  p.b_signed = b_type == DType::kInt8;
  p.m = p.a->shape()[trans_a ? 1 : 0];
  p.k = p.a->shape()[trans_a ? 0 : 1];
  const int64_t kb = p.b->shape()[trans_b ? 1 : 0];
  p.n = p.b->shape()[trans_b ? 0 : 1];
  if (kb != p.k) {
    context.fail("A has shape {}{} and B has shape {}{}: inner dims {} and {} differ",
                 shape_to_string(p.a->shape()), trans_a ? " (transposed)" : "",
                 shape_to_string(p.b->shape()), trans_b ? " (transposed)" : "", p.k, kb);
  }
  const QuantParam pa = read_quant_param(context, 1, 2, a_type, "A");
  p.a_zp = pa.zero_point;
  // B: per tensor or per column (N values).
  const Tensor& b_scale = context.input(4);
  if (b_scale.dtype() != DType::kFloat) {
    context.fail("the scale of B (input 4) has type {} (needs float)", dtype_name(b_scale.dtype()));
  }
  if (b_scale.rank() > 1 || (b_scale.numel() != 1 && b_scale.numel() != p.n)) {
    context.fail(
        "the scale of B (input 4) has shape {} (needs a scalar or {} values, one per "
        "column)",
        shape_to_string(b_scale.shape()), p.n);
  }
  p.b_zero_points.assign(static_cast<size_t>(b_scale.numel()), 0);
  if (context.has_input(5)) {
    const Tensor& zp = context.input(5);
    if (zp.dtype() != b_type) {
      context.fail("the zero point of B (input 5) has type {} but B has type {}",
                   dtype_name(zp.dtype()), dtype_name(b_type));
    }
    if (zp.shape() != b_scale.shape() && !(zp.numel() == 1 && b_scale.numel() == 1)) {
      context.fail("the zero point of B (input 5) has shape {} but its scale has shape {}",
                   shape_to_string(zp.shape()), shape_to_string(b_scale.shape()));
    }
    for (int64_t j = 0; j < zp.numel(); ++j) {
      p.b_zero_points[j] = p.b_signed ? zp.data<int8_t>()[j] : zp.data<uint8_t>()[j];
    }
  }
  p.has_y_scale = context.has_input(7);
  if (p.has_y_scale) {
    const DType y_type = context.has_input(8) ? context.input(8).dtype() : a_type;
    if (y_type != DType::kUInt8 && y_type != DType::kInt8) {
      context.fail("the zero point of Y (input 8) has type {} (needs uint8 or int8)",
                   dtype_name(y_type));
    }
    const QuantParam py = read_quant_param(context, 7, 8, y_type, "Y");
    p.y_type = y_type;
    p.y_zp = py.zero_point;
    p.y_scale = py.scale;
  } else if (context.has_input(8)) {
    context.fail("has y_zero_point (input 8) but no y_scale (input 7)");
  }
  for (int64_t j = 0; j < b_scale.numel(); ++j) {
    float s = alpha * pa.scale * b_scale.data<float>()[j];
    if (p.has_y_scale) s /= p.y_scale;
    p.multipliers.push_back(s);
  }
  if (context.has_input(6)) {
    const Tensor& c = context.input(6);
    if (c.dtype() != DType::kInt32) {
      context.fail("C (input 6) has type {} (needs int32)", dtype_name(c.dtype()));
    }
    const Shape out{p.m, p.n};
    if (!broadcasts_to(c.shape(), out)) {
      context.fail("C (input 6) has shape {}, which does not broadcast to {}",
                   shape_to_string(c.shape()), shape_to_string(out));
    }
    p.c = &c;
  }
  return p;
}

void qgemm_output(KernelContext& context, const QGemmProblem& p, std::vector<int32_t>& acc) {
  const Shape out{p.m, p.n};
  if (p.c) {
    const std::vector<int64_t> strides = broadcast_strides(p.c->shape(), out);
    const int32_t* c = p.c->data<int32_t>();
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        acc[i * p.n + j] =
            static_cast<int32_t>(static_cast<uint32_t>(acc[i * p.n + j]) +
                                 static_cast<uint32_t>(c[i * strides[0] + j * strides[1]]));
      }
    }
  }
  const bool per_column = p.multipliers.size() > 1;
  if (!p.has_y_scale) {
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, out);
    float* dst = y.mutable_data<float>();
    for (int64_t i = 0; i < p.m * p.n; ++i) {
      dst[i] = static_cast<float>(acc[i]) * p.multipliers[per_column ? i % p.n : 0];
    }
    return;
  }
  Tensor& y = context.allocate_output_uninitialized(0, p.y_type, out);
  auto write = [&](auto tag) {
    using Q = decltype(tag);
    Q* dst = y.mutable_data<Q>();
    for (int64_t i = 0; i < p.m * p.n; ++i) {
      dst[i] = qlinear::requantize<Q>(acc[i], p.multipliers[per_column ? i % p.n : 0], p.y_zp);
    }
  };
  if (p.y_type == DType::kUInt8) {
    write(uint8_t{});
  } else {
    write(int8_t{});
  }
}

void register_quantization_microsoft_ops(OpRegistry& registry) {
  const std::string ms(kMicrosoftDomain);
  registry.add(ms, "QLinearAdd", 1,
               OpDefinition(kernel_factory<QLinearBinaryKernel>(), kBroadcastingOp)
                   .with_types(infer_qlinear_binary));
  registry.add(ms, "QLinearMul", 1,
               OpDefinition(kernel_factory<QLinearBinaryKernel>(), kBroadcastingOp)
                   .with_types(infer_qlinear_binary));
  registry.add(ms, "QLinearSigmoid", 1,
               OpDefinition(kernel_factory<QLinearLookupKernel>(), kElementwiseOp)
                   .with_types(infer_same_as_input));
  registry.add(ms, "QLinearLeakyRelu", 1,
               OpDefinition(kernel_factory<QLinearLookupKernel>(), kElementwiseOp)
                   .with_types(infer_same_as_input));
  registry.add(ms, "QLinearGlobalAveragePool", 1,
               OpDefinition(kernel_factory<QLinearGlobalAveragePoolKernel>())
                   .with_types(infer_qlinear_global_average_pool));
  registry.add(ms, "QLinearAveragePool", 1,
               OpDefinition(kernel_factory<QLinearAveragePoolKernel>())
                   .with_types(infer_qlinear_average_pool));
  registry.add(
      ms, "QLinearConcat", 1,
      OpDefinition(kernel_factory<QLinearConcatKernel>(), OpTraits{.axes = AxisRule::kSingleAxis})
          .with_types(infer_qlinear_concat));
  registry.add(
      ms, "QLinearSoftmax", 1,
      OpDefinition(kernel_factory<QLinearSoftmaxKernel>()).with_types(infer_same_as_input));
  registry.add(ms, "QLinearWhere", 1,
               OpDefinition(kernel_factory<QLinearWhereKernel>()).with_types(infer_qlinear_where));
  registry.add(ms, "QGemm", 1, OpDefinition(kernel_factory<QGemmKernel>()).with_types(infer_qgemm));
  registry.add(ms, "MatMulIntegerToFloat", 1,
               OpDefinition(kernel_factory<MsMatMulIntegerToFloatKernel>())
                   .with_types(infer_ms_integer_matmul));
  registry.add(ms, "DynamicQuantizeMatMul", 1,
               OpDefinition(kernel_factory<DynamicQuantizeMatMulKernel>())
                   .with_types(infer_ms_integer_matmul));
}

}  // namespace onnxkit

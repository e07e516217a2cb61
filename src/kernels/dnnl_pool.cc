// MaxPool (without its Indices output), AveragePool, GlobalAveragePool and GlobalMaxPool,
// float32. Windowed pools run on oneDNN's pooling over the plain NCHW tensors (its jit
// kernels read that layout directly); global pools are a per-channel loop. Other types,
// the Indices output and the few windows oneDNN counts differently from ONNX (an average
// that includes a ceil_mode extension of the padding, windows entirely in the padding) go
// to the reference kernel of the same node.
//
// com.onnxkit ChannelsLastMaxPool (int8 / uint8 [N, H, W, C]): a byte maximum over each
// window of whole pixels, 64 channels per AVX-512 vector or 32 per AVX2 one (picked by
// active_simd_level()), the reference kernel's result exactly.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "core/parallel.h"
#include "kernels/dnnl_common.h"
#include "kernels/dnnl_conv.h"
#include "kernels/vector_math.h"
#include "ops/blocked_ops.h"
#include "ops/channels_last_ops.h"
#include "ops/conv_attributes.h"
#include "ops/fused_ops.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

using dnnl::memory;
using dnnl_util::cpu_engine;

// Where the windows of one input lie, in oneDNN's terms (dilation 0 = dense).
struct PoolWindow {
  memory::dims kernel, strides, dilations, pad_begin, pad_end;
  Shape y_shape;
  bool extends_padding = false;    // ceil_mode reaches past the declared end padding
  bool window_in_padding = false;  // some window may lie entirely in the padding
  // A window wider than its input: oneDNN visits every tap, padding included (a kernel of
  // 2^31 over 32 pixels ran for minutes), where the reference kernel visits the input's.
  bool window_wider_than_input = false;
};

// Where the windows of X lie for oneDNN, as the reference kernel places them; nullopt when
// X does not fit (the reference kernel then says why).
std::optional<PoolWindow> pool_window(const ConvAttributes& attrs, const Shape& x) {
  const size_t rank = attrs.kernel_shape.size();
  if (rank == 0 || x.size() != rank + 2) return std::nullopt;
  PoolWindow win;
  win.y_shape = {x[0], x[1]};
  for (size_t i = 0; i < rank; ++i) {
    const int64_t in = x[i + 2];
    const int64_t kernel = attrs.kernel_shape[i];
    const int64_t stride = attrs.strides[i];
    const WindowAxis axis = attrs.window(i, in, kernel);  // checks the extent's arithmetic
    const int64_t span = attrs.extent(i, kernel);
    if (!attrs.same_padding() && axis.padded < span) return std::nullopt;
    const int64_t begin = axis.pad_begin, out = axis.out;
    // The padding the last window actually reaches into (negative: it stops short).
    const int64_t reach = (out - 1) * stride + span - in - begin;
    win.kernel.push_back(kernel);
    win.strides.push_back(stride);
    win.dilations.push_back(attrs.dilations[i] - 1);
    win.pad_begin.push_back(begin);
    win.pad_end.push_back(reach);
    win.extends_padding = win.extends_padding || reach > axis.pad_end;
    win.window_in_padding = win.window_in_padding || begin >= span || reach >= span;
    win.window_wider_than_input = win.window_wider_than_input || span > in;
    win.y_shape.push_back(out);
  }
  return win;
}

class DnnlPoolKernel : public OpKernel {
 public:
  // `blocked`: X and Y in the blocked layout (BlockedMaxPool / BlockedAveragePool).
  DnnlPoolKernel(dnnl::algorithm algorithm, ConvAttributes attrs,
                 std::unique_ptr<OpKernel> reference, bool blocked = false)
      : algorithm_(algorithm),
        attrs_(std::move(attrs)),
        reference_(std::move(reference)),
        blocked_(blocked) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const bool int8_max = !blocked_ && algorithm_ == dnnl::algorithm::pooling_max &&
                          (x.dtype() == DType::kUInt8 || x.dtype() == DType::kInt8) &&
                          !context.wants_output(1);
    if ((x.dtype() != DType::kFloat && !int8_max) || (blocked_ && !is_blocked_shape(x.shape()))) {
      return reference_->compute(context);
    }
    const Shape x_shape = blocked_ ? plain_shape(x.shape()) : x.shape();
    std::optional<PoolWindow> win = pool_window(attrs_, x_shape);
    if (int8_max) return max_pool_int8(context, x, win);
    if (!win || x.numel() == 0 || shape_numel(win->y_shape) == 0 || win->window_in_padding ||
        win->window_wider_than_input ||
        (algorithm_ == dnnl::algorithm::pooling_avg_include_padding && win->extends_padding)) {
      return reference_->compute(context);
    }
    std::vector<int64_t> key = x.shape();
    key.push_back(max_threads());
    std::shared_ptr<const Plan> plan = plans_.get(key, [&] { return make_plan(x_shape, *win); });
    if (plan->use_reference) return reference_->compute(context);
    Tensor& y = context.allocate_output_uninitialized(
        0, DType::kFloat, blocked_ ? blocked_shape(win->y_shape) : win->y_shape);
    try {
      dnnl::stream stream = dnnl_util::make_stream();
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, dnnl_util::wrap(plan->src_md, x.data<float>())},
          {DNNL_ARG_DST, dnnl_util::wrap(plan->dst_md, y.mutable_data<float>())}};
      if (plan->scratchpad.get_size() > 0) {
        args.emplace(
            DNNL_ARG_SCRATCHPAD,
            dnnl_util::scratch_memory(dnnl_util::ScratchRole::kPrimitive, plan->scratchpad));
      }
      plan->pool.execute(stream, args);
      stream.wait();
    } catch (const dnnl::error& e) {
      context.fail("oneDNN failed: {}", e.what());
    }
  }

 private:
  // MaxPool of int8 / uint8 NCHW images (the MaxPool ORT's quantization tool leaves between
  // int8 convolutions): a byte maximum per window, exactly the reference's result. oneDNN's
  // int8 pooling on NCHW is its slow reference implementation, hence this loop.
  void max_pool_int8(KernelContext& context, const Tensor& x,
                     const std::optional<PoolWindow>& win) const {
    if (!win || x.rank() != 4 || x.numel() == 0 || win->window_in_padding ||
        win->dilations[0] != 0 || win->dilations[1] != 0) {
      return reference_->compute(context);
    }
    const int64_t planes = x.shape()[0] * x.shape()[1], h = x.shape()[2], w = x.shape()[3];
    const int64_t oh = win->y_shape[2], ow = win->y_shape[3];
    Tensor& y = context.allocate_output_uninitialized(0, x.dtype(), win->y_shape);
    auto run = [&](auto tag) {
      using T = decltype(tag);
      const T* src = x.data<T>();
      T* dst = y.mutable_data<T>();
      parallel_for(planes, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
          const T* plane = src + c * h * w;
          T* out = dst + c * oh * ow;
          for (int64_t i = 0; i < oh; ++i) {
            const int64_t h0 = std::max<int64_t>(i * win->strides[0] - win->pad_begin[0], 0);
            const int64_t h1 =
                std::min<int64_t>(i * win->strides[0] - win->pad_begin[0] + win->kernel[0], h);
            for (int64_t j = 0; j < ow; ++j) {
              const int64_t w0 = std::max<int64_t>(j * win->strides[1] - win->pad_begin[1], 0);
              const int64_t w1 =
                  std::min<int64_t>(j * win->strides[1] - win->pad_begin[1] + win->kernel[1], w);
              T best = std::numeric_limits<T>::lowest();
              for (int64_t r = h0; r < h1; ++r) {
                for (int64_t q = w0; q < w1; ++q) best = std::max(best, plane[r * w + q]);
              }
              out[i * ow + j] = best;
            }
          }
        }
      });
    };
    if (x.dtype() == DType::kUInt8) {
      run(uint8_t{});
    } else {
      run(int8_t{});
    }
  }

  struct Plan {
    bool use_reference = false;
    dnnl::primitive pool;
    memory::desc src_md, dst_md, scratchpad;
  };

  Plan make_plan(const Shape& x, const PoolWindow& win) const {
    Plan plan;
    if (blocked_) {
      plan.src_md =
          memory::desc(dnnl_util::to_dims(x), memory::data_type::f32, memory::format_tag::nChw16c);
      plan.dst_md = memory::desc(dnnl_util::to_dims(win.y_shape), memory::data_type::f32,
                                 memory::format_tag::nChw16c);
    } else {
      plan.src_md = dnnl_util::plain_f32_desc(x);
      plan.dst_md = dnnl_util::plain_f32_desc(win.y_shape);
    }
    try {
      dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm_,
                                          plan.src_md, plan.dst_md, win.strides, win.kernel,
                                          win.dilations, win.pad_begin, win.pad_end);
      dnnl::pooling_v2_forward::primitive_desc pd(desc, dnnl_util::concurrent_attr(), cpu_engine());
      plan.pool = dnnl::pooling_v2_forward(pd);
      plan.scratchpad = pd.scratchpad_desc();
    } catch (const dnnl::error&) {
      plan.use_reference = true;
    }
    return plan;
  }

  dnnl::algorithm algorithm_;
  ConvAttributes attrs_;
  std::unique_ptr<OpKernel> reference_;
  bool blocked_;
  dnnl_util::PlanCache<Plan> plans_;
};

// GlobalAveragePool / GlobalMaxPool: one reduction per (n, c) over its contiguous
// spatial elements, with independent partial results the compiler can vectorize.
template <bool kMax>
class GlobalPoolKernel : public OpKernel {
 public:
  // `blocked`: X and Y in the blocked layout (BlockedGlobalAveragePool / ...MaxPool).
  explicit GlobalPoolKernel(std::unique_ptr<OpKernel> reference, bool blocked = false)
      : reference_(std::move(reference)), blocked_(blocked) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.dtype() != DType::kFloat || x.rank() < 3 || x.numel() == 0 ||
        (blocked_ && !is_blocked_shape(x.shape()))) {
      return reference_->compute(context);
    }
    if (blocked_) return compute_blocked(context, x);
    Shape y_shape = x.shape();
    std::fill(y_shape.begin() + 2, y_shape.end(), 1);
    const int64_t channels = x.shape()[0] * x.shape()[1];
    const int64_t size = shape_numel(std::span(x.shape()).subspan(2));
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, y_shape);
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / size);
    parallel_for(channels, min_chunk, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) py[c] = reduce(px + c * size, size);
    });
  }

 private:
  // [N, C/16, H, W, 16] -> [N, C/16, 1, 1, 16]: 16 channels reduced side by side.
  void compute_blocked(KernelContext& context, const Tensor& x) const {
    const Shape& shape = x.shape();
    const int64_t blocks = shape[0] * shape[1], image = shape[2] * shape[3];
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat,
                                                      {shape[0], shape[1], 1, 1, kChannelBlock});
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / (image * kChannelBlock));
    parallel_for(blocks, min_chunk, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const float* xb = px + b * image * kChannelBlock;
        float acc[kChannelBlock];
        bool nan[kChannelBlock] = {};
        std::copy(xb, xb + kChannelBlock, acc);
        for (int64_t p = 1; p < image; ++p) {
          const float* v = xb + p * kChannelBlock;
          for (int i = 0; i < kChannelBlock; ++i) {
            if constexpr (kMax) {
              acc[i] = std::max(acc[i], v[i]);
            } else {
              acc[i] += v[i];
            }
          }
        }
        for (int i = 0; i < kChannelBlock; ++i) {
          if constexpr (kMax) {  // std::max drops NaN; the reference propagates it
            for (int64_t p = 0; p < image && !nan[i]; ++p) {
              nan[i] = xb[p * kChannelBlock + i] != xb[p * kChannelBlock + i];
            }
            py[b * kChannelBlock + i] = nan[i] ? std::numeric_limits<float>::quiet_NaN() : acc[i];
          } else {
            py[b * kChannelBlock + i] = acc[i] / static_cast<float>(image);
          }
        }
      }
    });
  }

  static float reduce(const float* x, int64_t n) {
    constexpr int kLanes = 16;
    float acc[kLanes];
    const float init = kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
    std::fill(acc, acc + kLanes, init);
    bool nan = false;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) {
        if constexpr (kMax) {
          acc[j] = std::max(acc[j], x[i + j]);
        } else {
          acc[j] += x[i + j];
        }
      }
    }
    for (int j = 0; i < n; ++i, ++j) {
      if constexpr (kMax) {
        acc[j] = std::max(acc[j], x[i]);
      } else {
        acc[j] += x[i];
      }
    }
    if constexpr (kMax) {
      // std::max drops NaN; the reference propagates it.
      for (int64_t k = 0; k < n && !nan; ++k) nan = x[k] != x[k];
      if (nan) return std::numeric_limits<float>::quiet_NaN();
      return *std::max_element(acc, acc + kLanes);
    } else {
      double sum = 0;
      for (int j = 0; j < kLanes; ++j) sum += acc[j];
      return static_cast<float>(sum / static_cast<double>(n));
    }
  }

  std::unique_ptr<OpKernel> reference_;
  bool blocked_;
};

std::unique_ptr<OpKernel> make_max_pool(const KernelCreateContext& context) {
  const auto& outputs = context.node().outputs();
  if (outputs.size() > 1 && outputs[1] != nullptr) return nullptr;  // Indices wanted
  auto reference = context.reference_kernel();
  return std::make_unique<DnnlPoolKernel>(
      dnnl::algorithm::pooling_max, ConvAttributes::pool_of_version(context), std::move(reference));
}

std::unique_ptr<OpKernel> make_average_pool(const KernelCreateContext& context) {
  auto reference = context.reference_kernel();
  const bool include_pad = context.opset() >= 7 && context.attr_int("count_include_pad", 0) != 0;
  return std::make_unique<DnnlPoolKernel>(
      include_pad ? dnnl::algorithm::pooling_avg_include_padding
                  : dnnl::algorithm::pooling_avg_exclude_padding,
      ConvAttributes::pool_of_version(context), std::move(reference));
}

// The blocked pools take MaxPool's opset-12 and AveragePool's opset-11 attributes.
std::unique_ptr<OpKernel> make_blocked_max_pool(const KernelCreateContext& context) {
  return std::make_unique<DnnlPoolKernel>(dnnl::algorithm::pooling_max,
                                          ConvAttributes::pool(context, true, true),
                                          context.reference_kernel(), true);
}

std::unique_ptr<OpKernel> make_blocked_average_pool(const KernelCreateContext& context) {
  const bool include_pad = context.attr_int("count_include_pad", 0) != 0;
  return std::make_unique<DnnlPoolKernel>(
      include_pad ? dnnl::algorithm::pooling_avg_include_padding
                  : dnnl::algorithm::pooling_avg_exclude_padding,
      ConvAttributes::pool(context, false, true), context.reference_kernel(), true);
}

// ---------------------------------------------------------------------------------------
// ChannelsLastMaxPool

// One output pixel: the maximum over `count` input pixels (`taps`), channel by channel.
struct PixelMax {
  const uint8_t* const* taps;
  int64_t count, channels;
  uint8_t* y;
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

template <bool kSigned>
__attribute__((target("avx512f,avx512bw"))) void pixel_max_avx512(const PixelMax& p) {
  const __m512i lowest = _mm512_set1_epi8(kSigned ? -128 : 0);
  for (int64_t c = 0; c < p.channels; c += 64) {
    const __mmask64 lanes =
        p.channels - c >= 64 ? ~__mmask64{0} : (__mmask64{1} << (p.channels - c)) - 1;
    __m512i m = lowest;
    for (int64_t t = 0; t < p.count; ++t) {
      const __m512i v = _mm512_maskz_loadu_epi8(lanes, p.taps[t] + c);
      m = kSigned ? _mm512_max_epi8(m, v) : _mm512_max_epu8(m, v);
    }
    _mm512_mask_storeu_epi8(p.y + c, lanes, m);
  }
}

template <typename T>
void pixel_max_scalar(const PixelMax& p, int64_t first) {
  for (int64_t c = first; c < p.channels; ++c) {
    T m = std::numeric_limits<T>::lowest();
    for (int64_t t = 0; t < p.count; ++t) m = std::max(m, static_cast<T>(p.taps[t][c]));
    p.y[c] = static_cast<uint8_t>(m);
  }
}

template <bool kSigned>
__attribute__((target("avx2"))) void pixel_max_avx2(const PixelMax& p) {
  const __m256i lowest = _mm256_set1_epi8(kSigned ? -128 : 0);
  int64_t c = 0;
  for (; c + 32 <= p.channels; c += 32) {
    __m256i m = lowest;
    for (int64_t t = 0; t < p.count; ++t) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.taps[t] + c));
      m = kSigned ? _mm256_max_epi8(m, v) : _mm256_max_epu8(m, v);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.y + c), m);
  }
  pixel_max_scalar<std::conditional_t<kSigned, int8_t, uint8_t>>(p, c);
}

#pragma GCC diagnostic pop

class ChannelsLastMaxPoolKernel : public OpKernel {
 public:
  ChannelsLastMaxPoolKernel(ConvAttributes attrs, std::unique_ptr<OpKernel> reference)
      : attrs_(std::move(attrs)), reference_(std::move(reference)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const bool int8 = x.dtype() == DType::kUInt8 || x.dtype() == DType::kInt8;
    if (!int8 || x.rank() != 4 || x.numel() == 0) return reference_->compute(context);
    const int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
    const std::optional<PoolWindow> win = pool_window(attrs_, {n, c, h, w});
    // A window wider than its input would size the tap list by the kernel, not the input.
    if (!win || win->window_in_padding || win->window_wider_than_input || win->dilations[0] != 0 ||
        win->dilations[1] != 0) {
      return reference_->compute(context);
    }
    const int64_t oh = win->y_shape[2], ow = win->y_shape[3];
    Tensor& y = context.allocate_output_uninitialized(0, x.dtype(), {n, oh, ow, c});
    const bool is_signed = x.dtype() == DType::kInt8;
    void (*pixel_max)(const PixelMax&) = nullptr;
    switch (active_simd_level()) {
      case SimdLevel::kAvx512:
        pixel_max = is_signed ? pixel_max_avx512<true> : pixel_max_avx512<false>;
        break;
      case SimdLevel::kAvx2:
        pixel_max = is_signed ? pixel_max_avx2<true> : pixel_max_avx2<false>;
        break;
      default:
        pixel_max = is_signed ? [](const PixelMax& p) { pixel_max_scalar<int8_t>(p, 0); }
                              : [](const PixelMax& p) { pixel_max_scalar<uint8_t>(p, 0); };
    }
    const auto* src = static_cast<const uint8_t*>(x.raw_data());
    auto* dst = static_cast<uint8_t*>(y.mutable_raw_data());
    const int64_t kh = win->kernel[0], kw = win->kernel[1];
    parallel_for(n * oh, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, ow * c)),
                 [&](int64_t begin, int64_t end) {
                   std::vector<const uint8_t*> taps(static_cast<size_t>(kh * kw));
                   for (int64_t row = begin; row < end; ++row) {
                     const int64_t image = row / oh, i = row % oh;
                     const int64_t top = i * win->strides[0] - win->pad_begin[0];
                     const int64_t h0 = std::max<int64_t>(top, 0);
                     const int64_t h1 = std::min(top + kh, h);
                     for (int64_t j = 0; j < ow; ++j) {
                       const int64_t left = j * win->strides[1] - win->pad_begin[1];
                       const int64_t w0 = std::max<int64_t>(left, 0);
                       const int64_t w1 = std::min(left + kw, w);
                       int64_t count = 0;
                       for (int64_t r = h0; r < h1; ++r) {
                         for (int64_t q = w0; q < w1; ++q) {
                           taps[count++] = src + ((image * h + r) * w + q) * c;
                         }
                       }
                       pixel_max({taps.data(), count, c, dst + (row * ow + j) * c});
                     }
                   }
                 });
  }

 private:
  ConvAttributes attrs_;
  std::unique_ptr<OpKernel> reference_;
};

}  // namespace

void register_dnnl_pool_kernels(OpRegistry& registry) {
  // The reference registrations' since-versions, so every opset finds the optimized one.
  for (int64_t since : {1, 8, 10, 11, 12, 22}) {
    registry.add_optimized("", "MaxPool", since, make_max_pool);
  }
  for (int64_t since : {1, 7, 10, 11, 19, 22}) {
    registry.add_optimized("", "AveragePool", since, make_average_pool);
  }
  for (int64_t since : {1, 22}) {
    registry.add_optimized("", "GlobalAveragePool", since, [](const KernelCreateContext& context) {
      return std::make_unique<GlobalPoolKernel<false>>(context.reference_kernel());
    });
    registry.add_optimized("", "GlobalMaxPool", since, [](const KernelCreateContext& context) {
      return std::make_unique<GlobalPoolKernel<true>>(context.reference_kernel());
    });
  }
  const std::string domain(kOnnxkitDomain);
  registry.add_optimized(
      domain, std::string(kChannelsLastMaxPool), 1, [](const KernelCreateContext& context) {
        return std::make_unique<ChannelsLastMaxPoolKernel>(
            ConvAttributes::pool(context, true, true), context.reference_kernel());
      });
  registry.add_optimized(domain, "BlockedMaxPool", 1, make_blocked_max_pool);
  registry.add_optimized(domain, "BlockedAveragePool", 1, make_blocked_average_pool);
  registry.add_optimized(
      domain, "BlockedGlobalAveragePool", 1, [](const KernelCreateContext& context) {
        return std::make_unique<GlobalPoolKernel<false>>(context.reference_kernel(), true);
      });
  registry.add_optimized(domain, "BlockedGlobalMaxPool", 1, [](const KernelCreateContext& context) {
    return std::make_unique<GlobalPoolKernel<true>>(context.reference_kernel(), true);
  });
}

}  // namespace onnxkit

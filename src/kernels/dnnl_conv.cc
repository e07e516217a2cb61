// Conv (1, 11), com.onnxkit FusedConv and ConvTranspose (1, 11) on oneDNN, float32.
//
// ONNX's plain NCHW tensors stay at the kernel's edges. Inside, oneDNN picks the layouts
// its fastest implementation wants (format_tag::any) and the kernel reorders activations
// in and out (the `layout` level will remove those reorders between consecutive convs).
// Constant weights (initializers) are reordered into the primitive's layout once, at
// session creation. Patch convolutions (kernel == stride) run as a GEMM over the patches
// instead (run_patches). FusedConv's residual Z is copied into the destination first and added
// by a sum post-op; its activation becomes eltwise post-ops. Other dtypes, and shapes
// oneDNN declines, run on the reference kernel of the same node.
#include "kernels/dnnl_conv.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/parallel.h"
#include "kernels/dnnl_common.h"
#include "kernels/vector_math.h"
#include "ops/blocked_ops.h"
#include "ops/conv_attributes.h"
#include "ops/fused_ops.h"
#include "ops/registry.h"

namespace onnxkit {
namespace dnnl_util {

void* scratch_buffer(ScratchRole role, size_t bytes) {
  struct Block {
    void* data = nullptr;
    size_t size = 0;
    ~Block() { std::free(data); }
  };
  thread_local std::array<Block, static_cast<size_t>(ScratchRole::kCount)> blocks;
  Block& block = blocks[static_cast<size_t>(role)];
  if (block.size < bytes || !block.data) {
    const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    void* data = std::aligned_alloc(64, rounded);
    if (!data) throw std::bad_alloc();
    std::free(block.data);
    block.data = data;
    block.size = rounded;
  }
  return block.data;
}

dnnl::memory scratch_memory(ScratchRole role, const dnnl::memory::desc& desc) {
  return dnnl::memory(desc, cpu_engine(), scratch_buffer(role, desc.get_size()));
}

dnnl::primitive_attr concurrent_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

std::optional<Window> conv_window(const ConvAttributes& a, const Shape& x, const Shape& w) {
  if (!a.shape_error(x, w).empty()) return std::nullopt;
  const size_t rank = x.size() - 2;
  Window win;
  win.y_shape = {x[0], w[0]};
  for (size_t d = 0; d < rank; ++d) {
    const int64_t stride = a.stride(d);
    const int64_t extent = a.extent(d, w[d + 2]);
    const int64_t in = x[d + 2];
    const WindowAxis axis = a.window(d, in, w[d + 2]);
    if (axis.padded < extent) return std::nullopt;
    win.strides.push_back(stride);
    win.dilations.push_back(a.dilation(d) - 1);
    win.pad_begin.push_back(axis.pad_begin);
    // oneDNN wants the padding the last window actually reaches into.
    win.pad_end.push_back((axis.out - 1) * stride + extent - in - axis.pad_begin);
    win.y_shape.push_back(axis.out);
  }
  return win;
}

}  // namespace dnnl_util

namespace {

using dnnl::memory;
using dnnl_util::conv_window;
using dnnl_util::cpu_engine;
using dnnl_util::ScratchRole;
using dnnl_util::to_dims;
using dnnl_util::Window;
using dnnl_util::wrap;

std::optional<Window> conv_transpose_window(const ConvAttributes& a,
                                            const ConvTransposeAttributes& t, const Shape& x,
                                            const Shape& w) {
  if (!a.shape_error(x, w, true).empty()) return std::nullopt;
  const size_t rank = x.size() - 2;
  if (!t.shape_error(rank).empty()) return std::nullopt;
  Window win;
  win.y_shape = {x[0], w[1] * a.group};
  for (size_t d = 0; d < rank; ++d) {
    const int64_t stride = a.stride(d);
    const int64_t extent = a.extent(d, w[d + 2]);
    const int64_t in = x[d + 2];
    const WindowAxis axis = t.window(a, d, rank, in, w[d + 2]);
    if (axis.out <= 0) return std::nullopt;
    win.strides.push_back(stride);
    win.dilations.push_back(a.dilation(d) - 1);
    win.pad_begin.push_back(axis.pad_begin);
    // Negative when output_padding / output_shape extends the output past the last tap.
    win.pad_end.push_back(stride * (in - 1) + extent - axis.pad_begin - axis.out);
    win.y_shape.push_back(axis.out);
  }
  return win;
}

// Output x input channel pairs above which a 3x3 convolution stays direct (see
// conv_primitive_desc).
constexpr int64_t kMaxWinogradChannelPairs = 256 * 256;
// Output pixels below which a pointwise convolution does not run as a GEMM over NCHW.
constexpr int64_t kMinPointwiseGemmImage = 14 * 14;

// A primitive with the scratchpad it needs from the caller (concurrent_attr).
struct Step {
  dnnl::primitive primitive;
  memory::desc scratchpad;
  bool defined = false;
  uint64_t owner = dnnl_util::new_memory_owner();  // of its scratchpad memory object

  void run(dnnl::stream& stream, dnnl_util::ExecArgs args) const {
    memory scratch;
    if (const size_t bytes = scratchpad.get_size(); bytes > 0) {
      scratch = dnnl_util::reused_memory(owner, 0, scratchpad,
                                         dnnl_util::scratch_buffer(ScratchRole::kPrimitive, bytes));
      args.add(DNNL_ARG_SCRATCHPAD, scratch);
    }
    args.execute(primitive, stream);
  }
  void reorder(dnnl::stream& stream, const memory& from, const memory& to) const {
    run(stream, dnnl_util::ExecArgs().add(DNNL_ARG_FROM, from).add(DNNL_ARG_TO, to));
  }
};

Step make_reorder(const memory::desc& from, const memory::desc& to) {
  dnnl::reorder::primitive_desc pd(cpu_engine(), from, cpu_engine(), to,
                                   dnnl_util::concurrent_attr());
  return {dnnl::reorder(pd), pd.scratchpad_desc(), true};
}

// kBlockedConv: FusedConv on blocked activations (ops/blocked_ops.h).
enum class ConvKind { kConv, kFusedConv, kConvTranspose, kBlockedConv };

// One kernel class for the four ops: they differ in geometry, weight layout, activation
// layout and primitive.
class DnnlConvKernel : public OpKernel {
 public:
  DnnlConvKernel(const KernelCreateContext& context, ConvKind kind,
                 std::unique_ptr<OpKernel> reference)
      : kind_(kind),
        attrs_(context),
        transpose_(kind == ConvKind::kConvTranspose
                       ? std::optional<ConvTransposeAttributes>(context)
                       : std::nullopt),
        reference_(std::move(reference)),
        one_shot_(context.one_shot()) {
    if (kind == ConvKind::kFusedConv || kind == ConvKind::kBlockedConv) {
      activation_ = parse_fused_activation(context);
      own_activation_ = dnnl_util::computed_activation(activation_);
      if (own_activation_) {
        float zero = 0.0f;
        apply_activation(*own_activation_, &zero, &zero, 1);
        own_activation_keeps_zero_ = zero == 0.0f;
      }
      const auto& inputs = context.node().inputs();
      has_residual_ = inputs.size() > 3 && inputs[3] != nullptr;
    }
    prepack(context);
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& w = context.input(1);
    if (x.dtype() != DType::kFloat || w.dtype() != DType::kFloat) return delegate(context);
    // BlockedConv: X blocked (rank 5, W.shape[1] * group channels) or plain; Y blocked.
    // Shapes below are logical NCHW.
    const bool blocked_x = blocked() && x.rank() == 5;
    int64_t x_channels = -1;
    if (blocked_x && w.rank() >= 2 &&
        __builtin_mul_overflow(w.shape()[1], attrs_.group, &x_channels)) {
      return delegate(context);  // W's dim 1 x group past int64: the reference says so
    }
    if (blocked_x && !is_blocked_shape(x.shape(), x_channels)) return delegate(context);
    const Shape x_shape = blocked_x ? plain_shape(x.shape(), x_channels) : x.shape();
    std::optional<Window> win = window(x_shape, w.shape());
    if (!win || x.numel() == 0 || w.numel() == 0 || shape_numel(win->y_shape) == 0 ||
        (blocked() && win->y_shape.size() != 4)) {
      return delegate(context);
    }
    const bool has_bias = context.has_input(2);
    if (has_bias) {
      const Tensor& b = context.input(2);
      if (b.dtype() != DType::kFloat || b.shape() != Shape{win->y_shape[1]}) {
        return delegate(context);
      }
    }
    const bool constant_w = constant_w_ && w.data<float>() == constant_w_->data<float>();
    const bool constant_b =
        has_bias && constant_b_ && context.input(2).data<float>() == constant_b_;
    // Reused per thread: building the key must not allocate on every call.
    thread_local std::vector<int64_t> key;
    key.assign(x.shape().begin(), x.shape().end());
    key.insert(key.end(), w.shape().begin(), w.shape().end());
    key.insert(key.end(), {constant_w, has_bias, max_threads()});
    std::shared_ptr<const Plan> plan = plans_.get(
        key, [&] { return plan_for(x_shape, blocked_x, w.shape(), *win, has_bias, constant_w); });
    if (plan->use_reference) return delegate(context);

    const Tensor* z = nullptr;
    if (has_residual_ && context.has_input(3)) {
      z = &context.input(3);
      if (z->dtype() != DType::kFloat || z->shape() != plan->y_tensor_shape) {
        context.fail("Z has type {} and shape {} but Y is float32 of shape {}",
                     dtype_name(z->dtype()), shape_to_string(z->shape()),
                     shape_to_string(plan->y_tensor_shape));
      }
    }
    // The residual's bytes become Y's when nothing reads Z later (the sum post-op reads
    // each element before writing it); otherwise Z is copied in below.
    float* y_data = nullptr;
    bool z_in_place = false;
    if (z && !plan->dst_out.defined) {
      y_data = static_cast<float*>(
          context.reuse_input_for_output(3, 0, DType::kFloat, plan->y_tensor_shape));
      z_in_place = y_data != nullptr;
    }
    if (!y_data) {
      y_data = context.allocate_output_uninitialized(0, DType::kFloat, plan->y_tensor_shape)
                   .mutable_data<float>();
    }
    const size_t y_bytes = static_cast<size_t>(shape_numel(plan->y_tensor_shape)) * sizeof(float);
    try {
      dnnl::stream stream = dnnl_util::make_stream();
      if (plan->patches) {
        run_patches(*plan, stream, x.data<float>(), x_shape, w.data<float>(), constant_w,
                    has_bias ? context.input(2).data<float>() : nullptr, y_data);
      } else {
        run_direct(*plan, stream, x.data<float>(), w.data<float>(), constant_w,
                   has_bias ? context.input(2).data<float>() : nullptr, constant_b, z, z_in_place,
                   y_data, y_bytes);
      }
    } catch (const dnnl::error& e) {
      context.fail("oneDNN failed: {}", e.what());
    }
    if (own_activation_) {
      // Elementwise, so Y's layout does not matter; padding lanes go back to zero where the
      // activation moves them (Sigmoid).
      dnnl_util::apply_activation_in_place(*own_activation_, y_data,
                                           shape_numel(plan->y_tensor_shape));
      if (blocked() && !own_activation_keeps_zero_) {
        zero_channel_padding(y_data, plan->y_tensor_shape, plan->y_shape[1]);
      }
    }
  }

 private:
  struct Plan;

  // The primitive on oneDNN's layouts, with reorders of X, Z and Y where those differ from
  // the tensors' own.
  void run_direct(const Plan& plan, dnnl::stream& stream, const float* x_data, const float* w_data,
                  bool constant_w, const float* b_data, bool constant_b, const Tensor* z,
                  bool z_in_place, float* y_data, size_t y_bytes) const {
    auto reused = [&](Plan::Role role, const memory::desc& desc, const void* data) {
      return dnnl_util::reused_memory(plan.owner, role, desc, data);
    };
    auto scratch = [&](Plan::Role role, ScratchRole buffer, const memory::desc& desc) {
      return reused(role, desc, dnnl_util::scratch_buffer(buffer, desc.get_size()));
    };
    const memory x_user = reused(Plan::kUserSrc, plan.user_src_md, x_data);
    memory src = x_user;
    if (plan.src_in.defined) {
      src = scratch(Plan::kSrc, ScratchRole::kSource, plan.src_md);
      plan.src_in.reorder(stream, x_user, src);
    }
    const memory weights = weights_memory(plan, stream, w_data, constant_w);
    const memory y_user = reused(Plan::kUserDst, plan.user_dst_md, y_data);
    memory dst = y_user;
    if (plan.dst_out.defined) dst = scratch(Plan::kDst, ScratchRole::kDestination, plan.dst_md);
    if (has_residual_) {  // the sum post-op adds what the destination holds
      if (z && plan.dst_out.defined) {
        plan.z_in.reorder(stream, reused(Plan::kZ, plan.user_dst_md, z->data<float>()), dst);
      } else if (z && !z_in_place) {
        std::memcpy(y_data, z->data<float>(), y_bytes);
      } else if (!z && plan.dst_out.defined) {
        std::memset(dst.get_data_handle(), 0, plan.dst_md.get_size());
      } else if (!z) {
        std::memset(y_data, 0, y_bytes);
      }
    }
    dnnl_util::ExecArgs args;
    args.add(DNNL_ARG_SRC, src).add(DNNL_ARG_WEIGHTS, weights).add(DNNL_ARG_DST, dst);
    memory bias;
    if (b_data) {
      bias = constant_b ? bias_ : reused(Plan::kBias, plan.bias_md, b_data);
      args.add(DNNL_ARG_BIAS, bias);
    }
    plan.compute.run(stream, args);
    if (plan.dst_out.defined) plan.dst_out.reorder(stream, dst, y_user);
    stream.wait();
  }

  // W in the primitive's layout: packed once when constant, reordered per call otherwise.
  memory weights_memory(const Plan& plan, dnnl::stream& stream, const float* w_data,
                        bool constant_w) const {
    if (constant_w) return plan.packed_weights;
    memory weights = wrap(plan.user_weights_md, w_data);
    if (!plan.weights_in.defined) return weights;
    memory packed = dnnl_util::scratch_memory(ScratchRole::kWeights, plan.weights_md);
    plan.weights_in.reorder(stream, weights, packed);
    return packed;
  }

  // One row of patches: out[j][c][r][0..kw) = in[c][r][j * kw + 0..kw) for the ow patches of
  // the kh input rows at `in` (Kw: kw fixed at compile time, 0 for `kw`).
  template <int64_t Kw>
  static void copy_patch_row(const float* in, float* out, int64_t channels, int64_t height,
                             int64_t width, int64_t kh, int64_t ow, int64_t kw = Kw) {
    if constexpr (Kw > 0) kw = Kw;
    for (int64_t j = 0; j < ow; ++j) {
      for (int64_t c = 0; c < channels; ++c) {
        const float* from = in + c * height * width + j * kw;
        for (int64_t r = 0; r < kh; ++r, out += kw) {
          for (int64_t t = 0; t < kw; ++t) out[t] = from[r * width + t];
        }
      }
    }
  }

  // A patch convolution (kernel == stride, no padding: ViT's patch embedding, ConvNeXt's
  // stem) as one GEMM over its non-overlapping windows: X's patches copied into rows
  // ([N * OH * OW, C * kh * kw], runs of kw contiguous floats), times the packed W^T with the
  // bias and activation as post-ops, and the [pixel, map] product transposed into NCHW Y.
  // One thread, in the model: ViT-S/16's 3->384 16x16 conv 0.74 -> 0.65 ms, ConvNeXt-T's
  // 3->96 4x4 stem 0.39 -> 0.35 ms (the channels-last convolution's reorders of X and Y gone).
  void run_patches(const Plan& plan, dnnl::stream& stream, const float* x_data,
                   const Shape& x_shape, const float* w_data, bool constant_w, const float* b_data,
                   float* y_data) const {
    const int64_t batch = x_shape[0], channels = x_shape[1], height = x_shape[2];
    const int64_t width = x_shape[3];
    const int64_t kh = attrs_.stride(0), kw = attrs_.stride(1);
    const int64_t oh = plan.y_shape[2], ow = plan.y_shape[3], maps = plan.y_shape[1];
    const int64_t pixels = oh * ow, row_length = channels * kh * kw;
    auto* rows = static_cast<float*>(
        dnnl_util::scratch_buffer(ScratchRole::kSource, plan.src_md.get_size()));
    parallel_for(batch * oh, 1, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t n = item / oh, i = item % oh;
        const float* in = x_data + (n * channels * height + i * kh) * width;
        float* out = rows + item * ow * row_length;
        // A copy call per run of kw floats cost ~10 ns (90 us for ViT's patches, 320 us for
        // ConvNeXt's 4x4 ones): fixed sizes compile to plain vector moves.
        switch (kw) {
          case 2:
            copy_patch_row<2>(in, out, channels, height, width, kh, ow);
            break;
          case 4:
            copy_patch_row<4>(in, out, channels, height, width, kh, ow);
            break;
          case 8:
            copy_patch_row<8>(in, out, channels, height, width, kh, ow);
            break;
          case 16:
            copy_patch_row<16>(in, out, channels, height, width, kh, ow);
            break;
          case 32:
            copy_patch_row<32>(in, out, channels, height, width, kh, ow);
            break;
          default:
            copy_patch_row<0>(in, out, channels, height, width, kh, ow, kw);
        }
      }
    });
    auto* product = static_cast<float*>(
        dnnl_util::scratch_buffer(ScratchRole::kDestination, plan.dst_md.get_size()));
    // ExecArgs holds handles: the memory objects must outlive the run.
    const memory src = dnnl_util::reused_memory(plan.owner, Plan::kSrc, plan.src_md, rows);
    const memory weights = weights_memory(plan, stream, w_data, constant_w);
    const memory dst = dnnl_util::reused_memory(plan.owner, Plan::kDst, plan.dst_md, product);
    memory bias;
    dnnl_util::ExecArgs args;
    args.add(DNNL_ARG_SRC, src).add(DNNL_ARG_WEIGHTS, weights).add(DNNL_ARG_DST, dst);
    if (b_data) {
      bias = dnnl_util::reused_memory(plan.owner, Plan::kBias, plan.bias_md, b_data);
      args.add(DNNL_ARG_BIAS, bias);
    }
    plan.compute.run(stream, args);
    stream.wait();
    const auto transpose = vector_kernels().transpose_2d;
    parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        transpose(reinterpret_cast<const uint32_t*>(product + n * pixels * maps), maps,
                  reinterpret_cast<uint32_t*>(y_data + n * maps * pixels), pixels, pixels, maps);
      }
    });
  }

  struct Plan {
    // The memory objects a call wraps its tensors in, kept per thread (reused_memory).
    enum Role { kUserSrc, kSrc, kUserDst, kDst, kZ, kBias };
    uint64_t owner = dnnl_util::new_memory_owner();
    bool use_reference = false;  // oneDNN declined this shape
    bool patches = false;        // a GEMM over patch rows (run_patches)
    Shape y_shape;               // logical (NCHW)
    Shape y_tensor_shape;        // as stored: blocked for BlockedConv
    Step compute;
    memory::desc src_md, dst_md, weights_md, bias_md;
    memory::desc user_src_md, user_dst_md, user_weights_md;
    Step src_in, dst_out, z_in, weights_in;  // defined where the layouts differ
    memory packed_weights;                   // constant W in weights_md
  };

  bool blocked() const { return kind_ == ConvKind::kBlockedConv; }

  std::optional<Window> window(const Shape& x, const Shape& w) const {
    return kind_ == ConvKind::kConvTranspose ? conv_transpose_window(attrs_, *transpose_, x, w)
                                             : conv_window(attrs_, x, w);
  }

  // oneDNN's view of W: [G, O/G, I/G, k...] with groups, [O, I, k...] without, over ONNX's
  // bytes ([M, C/G, k...] for Conv, [C, M/G, k...] for ConvTranspose).
  memory::desc user_weights_desc(const Shape& w) const {
    const int64_t group = attrs_.group;
    const int64_t kernel = shape_numel(std::span(w).subspan(2));
    memory::dims dims, strides;
    if (kind_ != ConvKind::kConvTranspose) {
      dims = {w[0] / group, w[1]};
      strides = {w[1] * kernel, kernel};
    } else {
      dims = {w[1], w[0] / group};
      strides = {kernel, w[1] * kernel};
    }
    if (group > 1) {
      dims.insert(dims.begin(), group);
      strides.insert(strides.begin(), dims[1] * dims[2] * kernel);
    }
    // Spatial dims: row-major within one (output, input) channel pair.
    const size_t spatial_begin = dims.size();
    for (size_t d = 2; d < w.size(); ++d) dims.push_back(w[d]);
    strides.resize(dims.size());
    int64_t step = 1;
    for (size_t d = dims.size(); d-- > spatial_begin;) {
      strides[d] = step;
      step *= dims[d];
    }
    return memory::desc(dims, memory::data_type::f32, strides);
  }

  // make_plan, with a 2-D conv whose window spans one column of a one-column image (a 1-D
  // conv written as 2-D: [k, 1] kernels over W = 1, as jax2tf writes magika's) given to
  // oneDNN as the 1-D conv it is, over the same bytes: oneDNN's 2-D kernels ran it 4-5x
  // slower (256 -> 512 channels, kernel 5, 512 long, one thread: brgconv 14.9 ms, the 1-D
  // one 2.6 ms; a one-row image, H = 1, runs fast either way). Y keeps its 4-D shape.
  Plan plan_for(const Shape& x, bool blocked_x, const Shape& w, const Window& win, bool has_bias,
                bool constant_w) const {
    const bool one_column = kind_ != ConvKind::kConvTranspose && !blocked() && !blocked_x &&
                            x.size() == 4 && x[3] == 1 && w[3] == 1 && win.y_shape[3] == 1 &&
                            win.pad_begin[1] == 0 && win.pad_end[1] == 0;
    if (!one_column) return make_plan(x, blocked_x, w, win, has_bias, constant_w);
    Window columns = win;
    for (auto* dims : {&columns.strides, &columns.dilations, &columns.pad_begin, &columns.pad_end})
      dims->pop_back();
    columns.y_shape.pop_back();
    Plan plan = make_plan(Shape(x.begin(), x.end() - 1), false, Shape(w.begin(), w.end() - 1),
                          columns, has_bias, constant_w);
    plan.y_shape = plan.y_tensor_shape = win.y_shape;
    return plan;
  }

  // Builds the primitive for one input shape (under the cache's lock: packed_weights_ is
  // only touched here and in the constructor).
  Plan make_plan(const Shape& x, bool blocked_x, const Shape& w, const Window& win, bool has_bias,
                 bool constant_w) const {
    using dt = memory::data_type;
    using tag = memory::format_tag;
    Plan plan;
    plan.y_shape = win.y_shape;
    plan.y_tensor_shape = blocked() ? blocked_shape(win.y_shape) : win.y_shape;
    if (!dnnl_util::dims_fit_int32({x, w, win.y_shape})) {
      plan.use_reference = true;
      return plan;
    }
    plan.user_src_md =
        blocked_x ? memory::desc(to_dims(x), dt::f32, tag::nChw16c) : dnnl_util::plain_f32_desc(x);
    plan.user_dst_md = blocked() ? memory::desc(to_dims(win.y_shape), dt::f32, tag::nChw16c)
                                 : dnnl_util::plain_f32_desc(win.y_shape);
    plan.user_weights_md = user_weights_desc(w);
    const memory::desc any_src(to_dims(x), dt::f32, tag::any);
    const memory::desc any_dst(to_dims(win.y_shape), dt::f32, tag::any);
    const memory::desc any_weights(plan.user_weights_md.dims(), dt::f32, tag::any);
    const memory::desc bias_md =
        has_bias ? memory::desc({win.y_shape[1]}, dt::f32, tag::x) : memory::desc();
    dnnl::primitive_attr attr = dnnl_util::concurrent_attr();
    dnnl::post_ops post_ops;
    if (has_residual_) post_ops.append_sum(1.0f);
    if (!own_activation_) dnnl_util::append_activation(post_ops, activation_);
    attr.set_post_ops(post_ops);
    try {
      if (patch_conv(x, w, win) && make_patch_plan(plan, x, w, win, has_bias, constant_w, attr)) {
        return plan;
      }
      if (kind_ == ConvKind::kConvTranspose) {
        dnnl::deconvolution_forward::desc desc(
            dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, any_src,
            any_weights, bias_md, any_dst, win.strides, win.dilations, win.pad_begin, win.pad_end);
        dnnl::deconvolution_forward::primitive_desc pd(desc, attr, cpu_engine());
        plan.compute = {dnnl::deconvolution_forward(pd), pd.scratchpad_desc(), true};
        plan.src_md = pd.src_desc(), plan.dst_md = pd.dst_desc();
        plan.weights_md = pd.weights_desc(), plan.bias_md = pd.bias_desc();
      } else {
        const dnnl::convolution_forward::primitive_desc pd =
            conv_primitive_desc(plan, x, win, any_weights, bias_md, attr);
        plan.compute = {dnnl::convolution_forward(pd), pd.scratchpad_desc(), true};
        plan.src_md = pd.src_desc(), plan.dst_md = pd.dst_desc();
        plan.weights_md = pd.weights_desc(), plan.bias_md = pd.bias_desc();
      }
      if (has_bias && plan.bias_md != bias_md) {  // never seen for f32; stay safe
        plan.use_reference = true;
        return plan;
      }
      if (plan.src_md != plan.user_src_md)
        plan.src_in = make_reorder(plan.user_src_md, plan.src_md);
      if (plan.dst_md != plan.user_dst_md) {
        plan.dst_out = make_reorder(plan.dst_md, plan.user_dst_md);
        if (has_residual_) plan.z_in = make_reorder(plan.user_dst_md, plan.dst_md);
      }
      if (constant_w) {
        plan.packed_weights = packed_weights(plan.user_weights_md, plan.weights_md);
      } else if (plan.weights_md != plan.user_weights_md) {
        plan.weights_in = make_reorder(plan.user_weights_md, plan.weights_md);
      }
    } catch (const dnnl::error&) {
      plan = Plan{};
      plan.use_reference = true;
    }
    return plan;
  }

  // Whether run_patches can run this conv: 2-D, dense, windows that tile X (kernel ==
  // stride, no padding) larger than one pixel, plain X and Y, no residual (the sum post-op
  // would need Z transposed).
  bool patch_conv(const Shape& x, const Shape& w, const Window& win) const {
    if (kind_ == ConvKind::kConvTranspose || blocked() || has_residual_ || x.size() != 4 ||
        attrs_.group != 1) {
      return false;
    }
    for (size_t d = 0; d < 2; ++d) {
      if (w[2 + d] != attrs_.stride(d) || win.dilations[d] != 0 || win.pad_begin[d] != 0 ||
          win.pad_end[d] > 0) {
        return false;
      }
    }
    return w[2] * w[3] > 1;
  }

  // run_patches' GEMM: rows [N * OH * OW, C * kh * kw] times W^T [C * kh * kw, M] (W's own
  // bytes read transposed, packed once when constant) plus the bias as a row [1, M]. False
  // where oneDNN offers only its reference matmul (the convolution is faster then).
  bool make_patch_plan(Plan& plan, const Shape& x, const Shape& w, const Window& win, bool has_bias,
                       bool constant_w, const dnnl::primitive_attr& attr) const {
    using dt = memory::data_type;
    using tag = memory::format_tag;
    const int64_t rows = x[0] * win.y_shape[2] * win.y_shape[3];
    const int64_t row_length = w[1] * w[2] * w[3], maps = w[0];
    const memory::desc rows_md({rows, row_length}, dt::f32, tag::ab);
    const memory::desc user_weights_md({row_length, maps}, dt::f32, tag::ba);
    const memory::desc any_weights({row_length, maps}, dt::f32, tag::any);
    const memory::desc bias_md =
        has_bias ? memory::desc({1, maps}, dt::f32, tag::ab) : memory::desc();
    const memory::desc product_md({rows, maps}, dt::f32, tag::ab);
    const dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(rows_md, constant_w ? any_weights : user_weights_md, bias_md,
                           product_md),
        attr, cpu_engine());
    if (std::string_view(pd.impl_info_str()).substr(0, 3) == "ref") return false;
    plan.patches = true;
    plan.compute = {dnnl::matmul(pd), pd.scratchpad_desc(), true};
    plan.src_md = rows_md, plan.dst_md = product_md, plan.bias_md = bias_md;
    plan.user_weights_md = user_weights_md;
    plan.weights_md = pd.weights_desc();
    if (constant_w) plan.packed_weights = packed_weights(user_weights_md, plan.weights_md);
    return true;
  }

  // The fastest convolution oneDNN offers for this shape, measured on ResNet-50's convs
  // (AVX-512, one thread): Winograd for 3x3 stride 1 (about twice the direct convolution's
  // speed, error ~2e-5 of the mean output; its weight layout depends on the image size);
  // plain NCHW for pointwise convs (oneDNN runs them as one GEMM at ~190 GFLOP/s, with no
  // reorder of X or Y); otherwise the layout the direct convolution prefers (channels-last
  // brgconv at ~200 GFLOP/s) with reorders at the edges.
  dnnl::convolution_forward::primitive_desc conv_primitive_desc(
      const Plan& plan, const Shape& x, const Window& win, const memory::desc& any_weights,
      const memory::desc& bias_md, const dnnl::primitive_attr& attr) const {
    using dt = memory::data_type;
    using tag = memory::format_tag;
    const memory::desc any_src(to_dims(x), dt::f32, tag::any);
    const memory::desc any_dst(to_dims(win.y_shape), dt::f32, tag::any);
    auto make = [&](dnnl::algorithm algorithm, const memory::desc& src, const memory::desc& dst) {
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, src,
                                           any_weights, bias_md, dst, win.strides, win.dilations,
                                           win.pad_begin, win.pad_end);
      return dnnl::convolution_forward::primitive_desc(desc, attr, cpu_engine());
    };
    // A preferred layout is only worth it with a jit kernel: oneDNN's reference convolution
    // (what it falls back to, e.g., for 24 plain channels into nChw16c) is ~100x slower.
    auto make_fast = [&](dnnl::algorithm algorithm, const memory::desc& src,
                         const memory::desc& dst) {
      auto pd = make(algorithm, src, dst);
      if (std::string_view(pd.impl_info_str()).substr(0, 3) == "ref") {
        throw dnnl::error(dnnl_unimplemented, "only the reference implementation");
      }
      return pd;
    };
    const size_t rank = x.size() - 2;
    bool three_by_three = rank == 2 && attrs_.group == 1;
    bool one_by_one = attrs_.group == 1, dense = true;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t kernel = any_weights.dims()[2 + d];
      dense = dense && win.strides[d] == 1 && win.dilations[d] == 0;
      three_by_three = three_by_three && kernel == 3;
      one_by_one = one_by_one && kernel == 1 && win.pad_begin[d] == 0 && win.pad_end[d] <= 0;
    }
    const int64_t channels = x[1], maps = win.y_shape[1];
    const int64_t image = shape_numel(std::span(win.y_shape).subspan(2));
    // oneDNN transforms Winograd weights slowly (~15 ms for 256x256x3x3, ~150-400 ms for
    // 512x512x3x3, once per session) and the gain shrinks with the image: skip the largest.
    // A one-shot session would pay the transform for one run.
    const bool winograd =
        three_by_three && dense && channels * maps <= kMaxWinogradChannelPairs && !one_shot_;
    // BlockedConv: Winograd, 1x1, depthwise and a chain's first conv (plain X: jit's
    // NCHW-to-nChw16c kernel) run on the activations' own layouts with no reorder; others (3x3
    // stride 2, 512x512 3x3) run faster on channels-last brgconv (~210 against ~150-180 GFLOP/s)
    // even with the reorders, which are cheap on their small images.
    const bool plain_x = plan.user_src_md == dnnl_util::plain_f32_desc(x);
    const bool depthwise = attrs_.group > 1 && attrs_.group == channels && attrs_.group == maps;
    // A 1-D depthwise conv (Silero VAD's): left to choose, oneDNN runs it as an im2col GEMM
    // per group (x64:gemm:jit); channels-last gets its jit depthwise kernel, ~6x faster even
    // with the reorders (258 channels, kernel 5, 8 wide, one thread: 31.7 against 5.4 us).
    if (!blocked() && rank == 1 && depthwise) {
      try {
        return make_fast(dnnl::algorithm::convolution_direct,
                         memory::desc(to_dims(x), dt::f32, tag::nwc),
                         memory::desc(to_dims(win.y_shape), dt::f32, tag::nwc));
      } catch (const dnnl::error&) {
      }
    }
    if (blocked() && (winograd || one_by_one || plain_x || depthwise)) {
      try {
        return make_fast(
            winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct,
            plan.user_src_md, plan.user_dst_md);
      } catch (const dnnl::error&) {
      }
    }
    // A chain's first conv on plain channels that are no multiple of 16 (EfficientNet's and
    // MobileNet's 24 and 40): oneDNN pads them to a block in a cheap reorder of the small X,
    // and its blocked kernel writes Y in place. Left to choose, it picks channels-last and
    // the reorder of the (6x wider) Y into nChw16c cost more than the conv (576 -> 180 us
    // for EfficientNet-B0's 24->144 1x1 at 56x56).
    if (blocked() && plain_x && rank == 2 && channels % 16 != 0 && attrs_.group == 1) {
      try {
        return make_fast(dnnl::algorithm::convolution_direct,
                         memory::desc(to_dims(x), dt::f32, tag::nChw16c), plan.user_dst_md);
      } catch (const dnnl::error&) {
      }
    }
    if (winograd) {
      try {
        return make_fast(dnnl::algorithm::convolution_winograd, any_src, any_dst);
      } catch (const dnnl::error&) {  // not for this ISA, channel count or post-op
      }
    }
    // On tiny images (7x7) the GEMM's N is too short; channels-last wins there. A one-shot
    // session takes the blocked 1x1 kernel below: oneDNN's GEMM convolution initialises its
    // sgemm kernels on first use (30-100 ms; simplify's check of a 50-conv OCR classifier
    // spent a third of its time there).
    if (one_by_one && dense && image >= kMinPointwiseGemmImage && !one_shot_) {
      try {
        return make_fast(dnnl::algorithm::convolution_direct, plan.user_src_md, plan.user_dst_md);
      } catch (const dnnl::error&) {
      }
    }
    // Strided 1x1 (ResNet's downsampling): the blocked 1x1 kernel beats channels-last once
    // the activation reorders are counted (nChw16c reorders run ~3x faster than NHWC ones);
    // also every pointwise conv of a one-shot session.
    if (one_by_one && ((!dense && channels % 16 == 0 && maps % 16 == 0) || one_shot_)) {
      try {
        const memory::format_tag blocked = rank == 1   ? tag::nCw16c
                                           : rank == 2 ? tag::nChw16c
                                                       : tag::nCdhw16c;
        return make_fast(dnnl::algorithm::convolution_direct,
                         memory::desc(to_dims(x), dt::f32, blocked),
                         memory::desc(to_dims(win.y_shape), dt::f32, blocked));
      } catch (const dnnl::error&) {
      }
    }
    return make(dnnl::algorithm::convolution_direct, any_src, any_dst);
  }

  // The constant W in layout `packed`, reordered on first request and shared by plans.
  memory packed_weights(const memory::desc& user, const memory::desc& packed) const {
    for (const auto& [desc, owned] : packed_weights_) {
      if (desc == packed) return owned.memory;
    }
    dnnl_util::OwnedMemory owned = dnnl_util::owned_memory(packed);
    dnnl::stream stream = dnnl_util::make_stream();
    constant_w_->populate_mapped_pages();
    make_reorder(user, packed)
        .reorder(stream, wrap(user, constant_w_->data<float>()), owned.memory);
    stream.wait();
    constant_w_->release_mapped_pages();  // the packed copy is what runs read
    packed_weights_.emplace_back(packed, owned);
    return owned.memory;
  }

  // At session creation: keeps the constant W and B, and builds the plan for the input
  // shape the graph declares (unknown dims guessed), which packs W in the layout that
  // plan's primitive wants. A run with other shapes repacks only if its layout differs.
  void prepack(const KernelCreateContext& context) {
    const auto& inputs = context.node().inputs();
    if (inputs.size() < 2 || !inputs[1] || !inputs[1]->has_initializer()) return;
    const Tensor& w = inputs[1]->initializer();
    if (w.dtype() != DType::kFloat || w.rank() < 3 || w.numel() == 0) return;
    constant_w_ = w;
    const bool has_bias = inputs.size() > 2 && inputs[2] != nullptr;
    if (has_bias && inputs[2]->has_initializer()) {
      const Tensor& b = inputs[2]->initializer();
      if (b.dtype() == DType::kFloat && b.rank() == 1) {
        constant_b_ = b.data<float>();
        bias_ = memory(dnnl_util::plain_f32_desc(b.shape()), cpu_engine());
        std::memcpy(bias_.get_data_handle(), constant_b_, b.nbytes());
      }
    }
    // The probe shape: batch 1 and 32 per unknown spatial dim. W's dim 1 x group is the
    // model's number: past int64 there is nothing to prepack (the run fails).
    int64_t grouped = 0;
    if (__builtin_mul_overflow(w.shape()[1], attrs_.group, &grouped)) return;
    Shape x(w.rank(), 32);
    x[0] = 1;
    x[1] = kind_ == ConvKind::kConvTranspose ? w.shape()[0] : grouped;
    const ValueType& type = inputs[0] ? inputs[0]->type() : ValueType{};
    const bool blocked_x = blocked() && type.shape && type.shape->size() == 5;
    if (type.shape && type.shape->size() == (blocked_x ? 5 : w.rank())) {
      for (size_t d = 0; d < w.rank(); ++d) {
        if ((*type.shape)[d].is_known() && (*type.shape)[d].value > 0) {
          x[d] = (*type.shape)[d].value;
        }
      }
    }
    if (blocked_x) x[1] = grouped;  // dims[1] counted blocks
    std::optional<Window> win = window(x, w.shape());
    if (!win || (blocked() && win->y_shape.size() != 4)) return;
    std::vector<int64_t> key = blocked_x ? blocked_shape(x) : x;
    key.insert(key.end(), w.shape().begin(), w.shape().end());
    key.insert(key.end(), {1, has_bias, max_threads()});
    plans_.get(key, [&] { return plan_for(x, blocked_x, w.shape(), *win, has_bias, true); });
  }

  void delegate(KernelContext& context) const {
    if (!reference_) context.fail("no reference kernel to run this case on");
    reference_->compute(context);
  }

  ConvKind kind_;
  ConvAttributes attrs_;
  std::optional<ConvTransposeAttributes> transpose_;  // kConvTranspose
  ActivationFunction activation_;
  std::optional<Activation> own_activation_;  // applied after the primitive, not as a post-op
  bool own_activation_keeps_zero_ = true;     // maps 0 to 0 (blocked Y's padding stays zero)
  bool has_residual_ = false;
  std::unique_ptr<OpKernel> reference_;
  bool one_shot_;                     // KernelCreateContext::one_shot
  std::optional<Tensor> constant_w_;  // the initializer W, when it is one
  const float* constant_b_ = nullptr;
  memory bias_;  // a copy of the constant B
  mutable std::vector<std::pair<memory::desc, dnnl_util::OwnedMemory>> packed_weights_;
  dnnl_util::PlanCache<Plan> plans_;
};

KernelFactory conv_factory(ConvKind kind) {
  return [kind](const KernelCreateContext& context) -> std::unique_ptr<OpKernel> {
    // The reference kernel validates the attributes (failing naming the node) and serves
    // what oneDNN does not.
    auto reference = context.reference_kernel();
    if (!reference) context.fail("internal: no reference kernel");
    return std::make_unique<DnnlConvKernel>(context, kind, std::move(reference));
  };
}

// ReorderToBlocked / ReorderFromBlocked (ops/blocked_ops.h) as oneDNN reorders between
// nchw and nChw16c (float32; other types on the reference kernel). oneDNN writes zeros into
// the padding lanes of a blocked destination.
class DnnlReorderKernel : public OpKernel {
 public:
  DnnlReorderKernel(const KernelCreateContext& context, bool to_blocked)
      : to_blocked_(to_blocked),
        channels_(to_blocked ? -1 : context.attr_int(kChannelsAttribute, -1)),
        reference_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const bool fits = to_blocked_ ? x.rank() == 4 : is_blocked_shape(x.shape(), channels_);
    if (x.dtype() != DType::kFloat || !fits || x.numel() == 0) {
      return reference_->compute(context);
    }
    const Shape plain = to_blocked_ ? x.shape() : plain_shape(x.shape(), channels_);
    // A 1x1 image of one batch (a global pool's output) is laid out alike both ways, the
    // plain channels being the blocked bytes' prefix: hand the bytes over.
    if (!to_blocked_ && x.buffer() && plain[2] * plain[3] == 1 &&
        (plain[0] == 1 || plain[1] % kChannelBlock == 0)) {
      return context.set_output(0, Tensor::from_buffer(DType::kFloat, plain, x.buffer()));
    }
    std::vector<int64_t> key = x.shape();
    key.push_back(max_threads());
    std::shared_ptr<const Step> step = plans_.get(key, [&] {
      const memory::desc nchw = dnnl_util::plain_f32_desc(plain);
      const memory::desc blocked(to_dims(plain), memory::data_type::f32,
                                 memory::format_tag::nChw16c);
      return to_blocked_ ? make_reorder(nchw, blocked) : make_reorder(blocked, nchw);
    });
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat,
                                                      to_blocked_ ? blocked_shape(plain) : plain);
    try {
      dnnl::stream stream = dnnl_util::make_stream();
      const memory::desc nchw = dnnl_util::plain_f32_desc(plain);
      const memory::desc blocked(to_dims(plain), memory::data_type::f32,
                                 memory::format_tag::nChw16c);
      step->reorder(stream, wrap(to_blocked_ ? nchw : blocked, x.data<float>()),
                    wrap(to_blocked_ ? blocked : nchw, y.mutable_data<float>()));
      stream.wait();
    } catch (const dnnl::error& e) {
      context.fail("oneDNN failed: {}", e.what());
    }
  }

 private:
  bool to_blocked_;
  int64_t channels_;  // ReorderFromBlocked's C (-1: every lane)
  std::unique_ptr<OpKernel> reference_;
  dnnl_util::PlanCache<Step> plans_;
};

void register_dnnl_reorder_kernels(OpRegistry& registry) {
  const std::string domain(kOnnxkitDomain);
  registry.add_optimized(domain, std::string(kReorderToBlocked), 1,
                         [](const KernelCreateContext& context) {
                           return std::make_unique<DnnlReorderKernel>(context, true);
                         });
  registry.add_optimized(domain, std::string(kReorderFromBlocked), 1,
                         [](const KernelCreateContext& context) {
                           return std::make_unique<DnnlReorderKernel>(context, false);
                         });
}

}  // namespace

void register_dnnl_conv_kernels(OpRegistry& registry) {
  for (int64_t since : {1, 11, 22}) {
    registry.add_optimized("", "Conv", since, conv_factory(ConvKind::kConv));
    registry.add_optimized("", "ConvTranspose", since, conv_factory(ConvKind::kConvTranspose));
  }
  registry.add_optimized(std::string(kOnnxkitDomain), "FusedConv", 1,
                         conv_factory(ConvKind::kFusedConv));
  registry.add_optimized(std::string(kOnnxkitDomain), std::string(kBlockedConv), 1,
                         conv_factory(ConvKind::kBlockedConv));
  register_dnnl_reorder_kernels(registry);
  register_dnnl_pool_kernels(registry);
}

}  // namespace onnxkit

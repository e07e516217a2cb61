#include "kernels/dnnl_common.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>

#include "core/block_alloc.h"
#include "core/parallel.h"

namespace onnxkit::dnnl_util {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream make_stream() {
  // One per thread: creating a stream allocates, and a kernel call needs one.
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

namespace {

struct CachedMemory {
  const void* data = nullptr;
  dnnl::memory memory;
};

// This thread's cached memory object for (`owner`, `role`).
CachedMemory& cached_memory(uint64_t owner, int role) {
  // Bounded: sessions come and go in a long-lived process.
  constexpr size_t kMaxEntries = 4096;
  thread_local std::unordered_map<uint64_t, CachedMemory> entries;
  const uint64_t key = owner << 4 | static_cast<uint64_t>(role & 15);
  auto it = entries.find(key);
  if (it == entries.end()) {
    if (entries.size() >= kMaxEntries) entries.clear();
    it = entries.emplace(key, CachedMemory{}).first;
  }
  return it->second;
}

}  // namespace

dnnl::memory reused_memory(uint64_t owner, int role, const dnnl::memory::desc& desc,
                           const void* data) {
  CachedMemory& entry = cached_memory(owner, role);
  if (!entry.memory || entry.data != data) {
    entry.memory = wrap(desc, data);
    entry.data = data;
  }
  return entry.memory;
}

dnnl::memory rebound_memory(uint64_t owner, int role, const dnnl::memory::desc& desc,
                            const void* data) {
  CachedMemory& entry = cached_memory(owner, role);
  if (!entry.memory) {
    entry.memory = wrap(desc, data);
  } else if (entry.data != data) {
    entry.memory.set_data_handle(const_cast<void*>(data));
  }
  entry.data = data;
  return entry.memory;
}

uint64_t new_memory_owner() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

ExecArgs& ExecArgs::add(int arg, const dnnl::memory& memory) {
  if (count_ == kMaxArgs) throw dnnl::error(dnnl_invalid_arguments, "too many arguments");
  args_[count_++] = {arg, memory.get()};
  return *this;
}

void ExecArgs::execute(const dnnl::primitive& primitive, const dnnl::stream& stream) const {
  dnnl::error::wrap_c_api(dnnl_primitive_execute(primitive.get(), stream.get(), count_, args_),
                          "could not execute a primitive");
}

dnnl::memory::desc plain_f32_desc(const Shape& shape) {
  dnnl::memory::dims dims = to_dims(shape);
  dnnl::memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[static_cast<size_t>(i)] =
        strides[static_cast<size_t>(i) + 1] * std::max<dnnl::memory::dim>(dims[i + 1], 1);
  }
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::memory wrap(const dnnl::memory::desc& desc, const void* data) {
  // oneDNN takes a non-const handle; kernels only pass read-only memory as primitive inputs.
  return dnnl::memory(desc, cpu_engine(), const_cast<void*>(data));
}

void append_activation(dnnl::post_ops& post_ops, const ActivationFunction& activation) {
  using A = dnnl::algorithm;
  using Kind = ActivationKind;
  auto eltwise = [&](A algorithm, float alpha = 0.0f, float beta = 0.0f) {
    post_ops.append_eltwise(1.0f, algorithm, alpha, beta);
  };
  switch (activation.kind) {
    case Kind::kNone:
      return;
    case Kind::kRelu:
      return eltwise(A::eltwise_relu);
    case Kind::kLeakyRelu:
      return eltwise(A::eltwise_relu, activation.alpha);
    case Kind::kClip:
      return eltwise(A::eltwise_clip, activation.alpha, activation.beta);
    case Kind::kSigmoid:
      return eltwise(A::eltwise_logistic);
    case Kind::kTanh:
      return eltwise(A::eltwise_tanh);
    case Kind::kHardSigmoid:
      // oneDNN 2.6 has no hardsigmoid: clip(alpha * x + beta, 0, 1).
      eltwise(A::eltwise_linear, activation.alpha, activation.beta);
      return eltwise(A::eltwise_clip, 0.0f, 1.0f);
    case Kind::kHardSwish:
      return eltwise(A::eltwise_hardswish);  // x * relu6(x + 3) / 6, as ONNX
    case Kind::kSilu:
      return eltwise(A::eltwise_swish, 1.0f);
    case Kind::kGelu:
      return eltwise(A::eltwise_gelu_erf);
    case Kind::kGeluTanh:
      return eltwise(A::eltwise_gelu_tanh);
    default:
      // parse_fused_activation gives only the kinds of kActivations, all handled above.
      fail("internal: activation {} has no oneDNN post-op", activation_spec(activation.kind).name);
  }
}

OwnedMemory owned_memory(const dnnl::memory::desc& desc) {
  OwnedMemory owned;
  owned.storage = allocate_long_lived(std::max<size_t>(desc.get_size(), 1));
  owned.memory = dnnl::memory(desc, cpu_engine(), owned.storage->mutable_data());
  return owned;
}

std::optional<Activation> computed_activation(const ActivationFunction& activation) {
  using Kind = ActivationKind;
  switch (activation.kind) {
    case Kind::kSigmoid:
    case Kind::kTanh:
    case Kind::kSilu:
    case Kind::kGelu:
    case Kind::kGeluTanh:
    // oneDNN's GEMM convolution (pointwise convs over NCHW) ran a hardswish post-op ~10x
    // slower than the convolution itself (PP-OCRv4 rec's 16->32 1x1 at 24x160: 6 ms).
    case Kind::kHardSwish:
      return vector_activation(activation);
    default:
      return std::nullopt;
  }
}

void apply_activation_in_place(const Activation& activation, float* y, int64_t n) {
  // Big enough chunks that a thread's share amortizes the dispatch.
  constexpr int64_t kChunk = 16384;
  parallel_for(n, kChunk, [&](int64_t begin, int64_t end) {
    apply_activation(activation, y + begin, y + begin, end - begin);
  });
}

}  // namespace onnxkit::dnnl_util

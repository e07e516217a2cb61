// What every oneDNN-backed kernel shares: the CPU engine, a stream per call, and
// conversions from onnxkit shapes to oneDNN descriptors.
//
// oneDNN JIT-compiles its primitives for the CPU it runs on (AVX2, AVX-512, VNNI, ...), so
// one build serves every x86-64 machine. It threads with the same OpenMP runtime as
// parallel_for (core/parallel.h), so a session's intra_op_threads bound both.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <span>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/buffer.h"
#include "kernels/vector_math.h"
#include "onnxkit/tensor.h"
#include "ops/fused_activation.h"

namespace onnxkit::dnnl_util {

// The process-wide CPU engine.
const dnnl::engine& cpu_engine();

// A fresh stream on the CPU engine (cheap; streams are not shared between threads).
dnnl::stream make_stream();

inline dnnl::memory::dims to_dims(const Shape& shape) {
  return dnnl::memory::dims(shape.begin(), shape.end());
}

// True when every dim of `shapes` is below 2^31: oneDNN 2.6's kernels block dims in 32-bit
// ints, and a dim of 2^32 (a Reshape ahead of a MatMul or Conv) divided by zero inside its
// primitive creation (SIGFPE). Larger shapes go to the reference kernels.
inline bool dims_fit_int32(std::initializer_list<std::span<const int64_t>> shapes) {
  for (std::span<const int64_t> shape : shapes) {
    for (int64_t dim : shape) {
      if (dim > std::numeric_limits<int32_t>::max()) return false;
    }
  }
  return true;
}

// A plain (row-major, "abcd...") f32 descriptor for `shape`.
dnnl::memory::desc plain_f32_desc(const Shape& shape);

// A memory object over `data` (not owned) with descriptor `desc`.
dnnl::memory wrap(const dnnl::memory::desc& desc, const void* data);

// A memory object over `data` for `desc`, kept for this thread under (`owner`, `role`) and
// handed out again while `data` stays the same: runs with a memory plan give a kernel the
// same addresses every time, and creating a dnnl::memory costs two aligned allocations
// (a small conv made three per call). `owner` comes from new_memory_owner() and names
// one immutable descriptor per role (a kernel's plan), so a cached object never outlives
// the meaning of its key.
dnnl::memory reused_memory(uint64_t owner, int role, const dnnl::memory::desc& desc,
                           const void* data);
uint64_t new_memory_owner();

// As reused_memory, but a cached object is pointed at a new `data` (set_data_handle) instead
// of being created again: for the plain, unpadded descriptors of matmul and attention, whose
// operands move per call and per head (oneDNN would zero-fill a padded descriptor's padding
// in the new buffer, which may be a read-only input).
dnnl::memory rebound_memory(uint64_t owner, int role, const dnnl::memory::desc& desc,
                            const void* data);

// The arguments of one primitive execution, kept on the stack: the C++ API's
// std::unordered_map (and the vector it is copied into) cost several allocations per call,
// a visible share of a small convolution's time. The memory objects must outlive execute().
class ExecArgs {
 public:
  ExecArgs& add(int arg, const dnnl::memory& memory);
  void execute(const dnnl::primitive& primitive, const dnnl::stream& stream) const;

 private:
  static constexpr int kMaxArgs = 12;
  dnnl_exec_arg_t args_[kMaxArgs] = {};
  int count_ = 0;
};

// Memory for prepacked weights on long-lived blocks (core/block_alloc.h: on 2 MiB pages,
// as the packed copy is streamed through on every run); `storage` keeps the block alive.
struct OwnedMemory {
  std::shared_ptr<Buffer> storage;
  dnnl::memory memory;
};
OwnedMemory owned_memory(const dnnl::memory::desc& desc);

// Appends FusedConv / FusedMatMul's activation (parse_fused_activation, as the reference
// kernels parse it) as eltwise post-ops.
void append_activation(dnnl::post_ops& post_ops, const ActivationFunction& activation);

// The activations built on exp / erf (Sigmoid, Tanh, SiLU, both GELUs), and HardSwish, as
// onnxkit's vector kernel, which the conv and matmul kernels run over their output after the
// primitive instead of appending them as post-ops: oneDNN 2.6's post-op versions are slower than
// the product itself on memory-bound shapes (EfficientNet-B0's depthwise conv + SiLU took 231 us
// where the conv alone takes 68 and a separate Sigmoid and Mul 91; AVX-512, one thread).
// nullopt for the others (Relu, Clip, ...), which stay cheap post-ops.
std::optional<Activation> computed_activation(const ActivationFunction& activation);
// y = act(y) over n floats, split across the intra-op threads.
void apply_activation_in_place(const Activation& activation, float* y, int64_t n);

}  // namespace onnxkit::dnnl_util

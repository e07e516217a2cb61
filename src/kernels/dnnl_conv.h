// oneDNN-backed optimized kernels of the convolution side: Conv, com.onnxkit FusedConv and
// ConvTranspose (dnnl_conv.cc); MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool
// (dnnl_pool.cc); and the blocked-layout ops of the `layout` level (ops/blocked_ops.h:
// BlockedConv and the reorders in dnnl_conv.cc, the blocked pools in dnnl_pool.cc).
// Float32 only; other types and shapes oneDNN cannot express go to the reference kernel of
// the same node.
//
// Below the registration: what both files share (thread-local scratch memory, the
// per-shape primitive cache), not meant for other kernels.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "ops/conv_attributes.h"

namespace onnxkit {

class OpRegistry;

// Registers every kernel of both files (the pooling ones through the function below).
void register_dnnl_conv_kernels(OpRegistry& registry);
void register_dnnl_pool_kernels(OpRegistry& registry);

namespace dnnl_util {

// Thread-local growable buffers, one per role, 64-byte aligned: a kernel call reuses the
// pages of the previous call instead of faulting in fresh memory for every reordered
// activation. A buffer is valid until the same thread asks for the same role again.
enum class ScratchRole {
  kSource,
  kDestination,
  kWeights,
  kPrimitive,
  // The int8 kernels' (dnnl_int8.cc): shifted u8 sources, int32 products, reordered sources.
  kInt8Shifted,
  kInt8Product,
  kInt8Reordered,
  kCount
};
void* scratch_buffer(ScratchRole role, size_t bytes);

// A memory object over the thread's scratch buffer for `role`, sized for `desc`.
dnnl::memory scratch_memory(ScratchRole role, const dnnl::memory::desc& desc);

// Primitives built per input shape at first use and kept. The key holds the shapes and the
// thread count: oneDNN wants a primitive run with the thread count it was created for.
// Thread-safe; a plan is built once even when several runs ask for it at the same time.
// Bounded: past kMaxPlans shapes the least recently used plan goes, so a server batching
// requests at every size up to its max batch keeps the sizes it runs warm instead of
// rebuilding all of them whenever one more shape arrives.
template <typename Plan>
class PlanCache {
 public:
  static constexpr size_t kMaxPlans = 32;

  template <typename Make>
  std::shared_ptr<const Plan> get(const std::vector<int64_t>& key, Make&& make) const {
    std::lock_guard lock(mutex_);
    const uint64_t now = ++clock_;
    auto it = plans_.find(key);
    if (it != plans_.end()) {
      it->second.last_used = now;
      return it->second.plan;
    }
    if (plans_.size() >= kMaxPlans) {
      auto oldest = std::min_element(
          plans_.begin(), plans_.end(),
          [](const auto& a, const auto& b) { return a.second.last_used < b.second.last_used; });
      plans_.erase(oldest);
    }
    auto plan = std::make_shared<const Plan>(make());
    ++built_;
    plans_.emplace(key, Entry{plan, now});
    return plan;
  }

  // Plans built so far (rebuilt ones included), and plans held now.
  size_t built() const {
    std::lock_guard lock(mutex_);
    return built_;
  }
  size_t size() const {
    std::lock_guard lock(mutex_);
    return plans_.size();
  }

 private:
  struct Entry {
    std::shared_ptr<const Plan> plan;
    uint64_t last_used = 0;
  };
  mutable std::mutex mutex_;
  mutable std::map<std::vector<int64_t>, Entry> plans_;
  mutable uint64_t clock_ = 0;
  mutable size_t built_ = 0;
};

// Where one convolution's windows lie, in oneDNN's terms (dilation 0 = dense).
struct Window {
  dnnl::memory::dims strides, dilations, pad_begin, pad_end;
  Shape y_shape;
};

// Conv: the output and padding for X and W, or nullopt when they do not fit (the
// reference kernel then says why).
std::optional<Window> conv_window(const ConvAttributes& a, const Shape& x, const Shape& w);

// An attribute set for primitives that run concurrently: the caller passes the
// scratchpad, so two runs of one primitive never share oneDNN's own.
dnnl::primitive_attr concurrent_attr();

}  // namespace dnnl_util
}  // namespace onnxkit

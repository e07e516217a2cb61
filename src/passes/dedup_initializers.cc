// Pass dedup_initializers: initializers with identical contents are merged.
//
// Identical means the same dtype, shape and bytes (so NaNs with the same bits match and
// 0.0 / -0.0 do not). Contents are hashed, and compared in full only on a hash match. The
// first initializer in file order survives; readers of the others read it instead.
// Initializers that are graph inputs (overridable defaults) or graph outputs are part of
// the interface and never merged, nor those a nested subgraph returns directly, nor any
// when initializers are declared mutable.
#include <functional>
#include <string_view>
#include <unordered_map>

#include "passes/passes.h"

namespace onnxkit {
namespace {

void mix(size_t& seed, size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

size_t hash_contents(const Tensor& tensor) {
  size_t seed = static_cast<size_t>(tensor.dtype());
  for (int64_t d : tensor.shape()) mix(seed, std::hash<int64_t>{}(d));
  if (tensor.dtype() == DType::kString) {
    for (const std::string& s : tensor.strings()) mix(seed, std::hash<std::string>{}(s));
  } else if (tensor.nbytes() > 0) {
    // Hash a sample of the bytes: the pass runs every round, and hashing every weight of a
    // 400 MB model each time dominated simplify's run time. Equal hashes are compared in
    // full, so sampling costs only a few extra comparisons, never a wrong merge.
    const char* bytes = static_cast<const char*>(tensor.raw_data());
    const size_t size = tensor.nbytes();
    constexpr size_t kChunk = 64, kSamples = 64;
    if (size <= kChunk * kSamples) {
      mix(seed, std::hash<std::string_view>{}(std::string_view(bytes, size)));
    } else {
      const size_t stride = (size - kChunk) / (kSamples - 1);
      for (size_t i = 0; i < kSamples; ++i) {
        mix(seed, std::hash<std::string_view>{}(std::string_view(bytes + i * stride, kChunk)));
      }
    }
  }
  return seed;
}

class DedupInitializersPass : public GraphPass {
 public:
  std::string_view name() const override { return "dedup_initializers"; }

  size_t run(Graph& graph, PassContext& context) override {
    if (context.mutable_initializers) return 0;  // each may be changed on its own later
    std::unordered_map<size_t, std::vector<Value*>> survivors;
    std::vector<std::pair<Value*, Value*>> merges;  // duplicate, survivor
    for (Value* value : graph.initializers()) {
      if (graph.is_input(value) || graph.is_output(value) || value->returned_by_subgraph() ||
          context.keep_values.count(value->name()) || !value->initializer().defined()) {
        continue;
      }
      std::vector<Value*>& bucket = survivors[hash_contents(value->initializer())];
      Value* survivor = nullptr;
      for (Value* candidate : bucket) {
        if (candidate->initializer().same_contents(value->initializer())) {
          survivor = candidate;
          break;
        }
      }
      if (survivor) {
        merges.emplace_back(value, survivor);
      } else {
        bucket.push_back(value);
      }
      // Hashing faults in the pages around each sampled chunk (the kernel maps 64 KiB
      // around a fault): over the sources of folded weights, which nothing reads any more
      // and remove_unused_initializers drops next, that is most of their bytes again, beside
      // the folded copies (BERT-base: +210 MB). Live weights keep theirs for the next reader.
      if (value->uses().empty()) value->initializer().release_mapped_pages();
    }
    for (auto [duplicate, survivor] : merges) {
      replace_value(graph, duplicate, survivor);
      graph.remove_value(duplicate);
    }
    return merges.size();
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_dedup_initializers_pass() {
  return std::make_unique<DedupInitializersPass>();
}

}  // namespace onnxkit

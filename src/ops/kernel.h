// The kernel interface every op implements, and the contexts it sees.
//
// A kernel object is created once per node when a session is built: its constructor
// parses the node's attributes into typed members (errors name the node). compute() runs
// once per inference: it reads inputs, works out output shapes from them, allocates the
// outputs and fills them. compute() is const: one kernel may serve concurrent runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"
#include "onnxkit/runtime_value.h"

namespace onnxkit {

class CompiledGraph;   // runtime: an executable plan of a (sub)graph
class Frame;           // runtime: the values of one running graph
class Profiler;        // runtime: per-kernel timings of a run
class BlockAllocator;  // core: where output tensors come from (pool, arena)
class OpRegistry;      // ops/registry.h: where kernels come from

// Runs compiled subgraphs on behalf of control-flow kernels (If, Loop, Scan).
class SubgraphRunner {
 public:
  virtual ~SubgraphRunner() = default;
  // Runs `graph` with `inputs` bound to its formal inputs; `outer` resolves captured values.
  virtual std::vector<RuntimeValue> run(const CompiledGraph& graph,
                                        std::vector<RuntimeValue> inputs, const Frame& outer) = 0;
  // Where kernel timings go, or nullptr when the run is not profiled.
  virtual Profiler* profiler() const { return nullptr; }
  // Where output tensors come from, or nullptr for the heap.
  virtual BlockAllocator* allocator() const { return nullptr; }
  // True for one-off runs: the resident pages of a file-mapped initializer are dropped after
  // its last reader (SessionOptions::release_weights_after_use).
  virtual bool release_weights_after_use() const { return false; }
};

// Throws Error prefixed with the node's description: "[Gather] node 'g1': ...". Kernels
// call their context's fail(); this serves helpers that see only the node.
template <typename... Args>
[[noreturn]] void fail_at(const Node& node, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(node.describe() + ": " + fmt::format(format, std::forward<Args>(args)...));
}

class KernelContext {
 public:
  // Bit i of `donatable_inputs` set: this step is input i's last reader, so its storage may
  // become an output's (sequential execution only).
  KernelContext(const Node& node, std::span<const RuntimeValue* const> inputs,
                std::span<RuntimeValue* const> outputs, SubgraphRunner* runner, const Frame* frame,
                uint64_t donatable_inputs = 0)
      : node_(node),
        inputs_(inputs),
        outputs_(outputs),
        runner_(runner),
        frame_(frame),
        donatable_inputs_(donatable_inputs) {}

  const Node& node() const { return node_; }

  size_t num_inputs() const { return inputs_.size(); }
  // True when input `i` exists and is not an omitted optional / empty optional.
  bool has_input(size_t i) const {
    return i < inputs_.size() && inputs_[i] && !inputs_[i]->is_none();
  }
  // The tensor at input `i`; fails naming the node when it is absent or not a tensor.
  const Tensor& input(size_t i) const;
  // Any input value (tensor, sequence, none); a none value when absent.
  const RuntimeValue& input_value(size_t i) const;

  size_t num_outputs() const { return outputs_.size(); }
  // True when the graph reads output `i` (omitted optional outputs need not be computed).
  bool wants_output(size_t i) const { return i < outputs_.size() && outputs_[i] != nullptr; }
  // A new zero-filled output tensor (returns a scratch tensor for unwanted outputs).
  Tensor& allocate_output(size_t i, DType dtype, Shape shape);
  // The same with unspecified contents, for kernels that write every element.
  Tensor& allocate_output_uninitialized(size_t i, DType dtype, Shape shape);
  // In-place execution: output `output` takes input `input`'s storage when nothing reads
  // the input after this kernel, nobody else holds its bytes, and dtype and byte size
  // match. Returns where to write (the input's bytes; write through this pointer, as the
  // output tensor shares them with the input until the step ends), or nullptr when the
  // input cannot be reused: allocate as usual then. The kernel must read each element
  // before it writes the same element (elementwise ops).
  void* reuse_input_for_output(size_t input, size_t output, DType dtype, const Shape& shape);
  // Hands over an existing tensor (Identity, Reshape: no copy).
  void set_output(size_t i, Tensor tensor);
  void set_output_value(size_t i, RuntimeValue value);

  SubgraphRunner& subgraph_runner() const;
  const Frame& frame() const;

  // Throws Error prefixed with the node's description: "[Gather] node 'g1': ...".
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    fail_at(node_, format, std::forward<Args>(args)...);
  }

 private:
  const Node& node_;
  std::span<const RuntimeValue* const> inputs_;
  Tensor& allocate(size_t i, DType dtype, Shape shape, bool zero);
  std::span<RuntimeValue* const> outputs_;
  SubgraphRunner* runner_;
  const Frame* frame_;
  uint64_t donatable_inputs_ = 0;
  Tensor scratch_;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual void compute(KernelContext& context) const = 0;
};

// What a kernel constructor sees: the node, the opset it is resolved against, the registry
// the kernel comes from, typed attribute readers, and a way to compile subgraphs.
class KernelCreateContext {
 public:
  using SubgraphCompiler = std::function<std::shared_ptr<const CompiledGraph>(const Graph&)>;

  KernelCreateContext(const Node& node, int64_t opset, const OpRegistry& registry,
                      SubgraphCompiler compiler = {}, bool one_shot = false)
      : node_(node),
        opset_(opset),
        registry_(registry),
        compiler_(std::move(compiler)),
        one_shot_(one_shot) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  const OpRegistry& registry() const { return registry_; }
  // The session runs once or a few times (SessionOptions::one_shot): prefer what is cheap
  // to create over what is fastest in the steady state.
  bool one_shot() const { return one_shot_; }
  // The node's reference kernel from the same registry (what an optimized kernel hands the
  // cases it does not handle), or nullptr when the op has no reference registration.
  std::unique_ptr<OpKernel> reference_kernel() const;

  bool has_attribute(std::string_view name) const { return node_.find_attribute(name); }
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  int64_t attr_int(std::string_view name) const;  // required
  float attr_float(std::string_view name, float fallback) const;
  float attr_float(std::string_view name) const;  // required
  std::string attr_string(std::string_view name, std::string fallback) const;
  std::string attr_string(std::string_view name) const;  // required
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::optional<std::vector<int64_t>> attr_ints_opt(std::string_view name) const;
  std::vector<float> attr_floats(std::string_view name, std::vector<float> fallback = {}) const;
  std::vector<std::string> attr_strings(std::string_view name,
                                        std::vector<std::string> fallback = {}) const;
  const Tensor* attr_tensor(std::string_view name) const;  // nullptr when absent
  const Graph* attr_graph(std::string_view name) const;    // nullptr when absent

  std::shared_ptr<const CompiledGraph> compile_subgraph(const Graph& graph) const;

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    fail_at(node_, format, std::forward<Args>(args)...);
  }

 private:
  // The attribute `name` when present (nullptr when absent); fails when it has another type.
  const Attribute* typed(std::string_view name, AttrType type) const;
  // The same for a required attribute: fails when it is absent.
  const Attribute& required(std::string_view name, AttrType type) const;
  const Node& node_;
  int64_t opset_;
  const OpRegistry& registry_;
  SubgraphCompiler compiler_;
  bool one_shot_;
};

}  // namespace onnxkit

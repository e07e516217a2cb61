// An executable plan of one graph: its nodes in topological order with their kernels,
// every value mapped to a slot, and the step after which each slot can be freed.
// Subgraphs (If/Loop/Scan bodies) are compiled by their kernels into child plans whose
// captured outer values resolve through the parent frames.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/model.h"
#include "onnxkit/runtime_value.h"
#include "ops/kernel.h"
#include "ops/registry.h"

namespace onnxkit {

// Where a value lives at run time: `depth` frames up from the reading graph, at `slot`.
struct SlotRef {
  int depth = 0;
  int slot = -1;
  bool omitted() const { return slot < 0; }
};

class CompiledGraph {
 public:
  struct Step {
    const Node* node = nullptr;
    std::unique_ptr<OpKernel> kernel;
    std::vector<SlotRef> inputs;
    std::vector<int> outputs;  // -1 for omitted outputs
    std::vector<int> release;  // slots whose last reader is this step
    // Bit i: input i is read only once by this step and never after it (its storage may
    // become an output's; see KernelContext::reuse_input_for_output).
    uint64_t donatable_inputs = 0;
    // For parallel execution: steps reading this step's outputs (directly or through a
    // subgraph), and how many distinct earlier steps this one waits for.
    std::vector<size_t> consumers;
    size_t dependencies = 0;
    std::vector<int> reads;  // distinct slots of this graph the step reads
  };

  // Compiles `graph`. `opsets` resolves each node's domain to the imported version;
  // `tier` picks reference or optimized kernels (subgraphs get the same); `parent` is the
  // plan of the enclosing graph (nullptr for a main graph or a function); `one_shot` is
  // SessionOptions::one_shot, for every kernel.
  static std::shared_ptr<const CompiledGraph> compile(const Graph& graph,
                                                      const OpRegistry& registry,
                                                      const std::vector<OpsetImport>& opsets,
                                                      KernelTier tier = KernelTier::kReference,
                                                      const CompiledGraph* parent = nullptr,
                                                      bool one_shot = false);

  const Graph& graph() const { return graph_; }
  const std::vector<Step>& steps() const { return steps_; }
  size_t slot_count() const { return slot_count_; }
  const std::vector<int>& input_slots() const { return input_slots_; }
  const std::vector<SlotRef>& outputs() const { return outputs_; }
  // The initializer a slot holds, read in place by every run (frames do not copy it), or
  // nullptr. A graph input with an initializer (a default) has one too.
  const RuntimeValue* constant(int slot) const {
    const RuntimeValue& value = constant_values_[static_cast<size_t>(slot)];
    return value.is_none() ? nullptr : &value;
  }
  int slot_of(const Value* value) const;
  // Steps reading each slot (0 for unread slots), and whether the graph returns it.
  const std::vector<int>& slot_readers() const { return slot_readers_; }
  bool is_output_slot(int slot) const { return output_slot_[static_cast<size_t>(slot)]; }

 private:
  explicit CompiledGraph(const Graph& graph, const CompiledGraph* parent)
      : graph_(graph), parent_(parent) {}
  SlotRef resolve(const Value* value) const;

  const Graph& graph_;
  const CompiledGraph* parent_;
  std::vector<Step> steps_;
  size_t slot_count_ = 0;
  std::unordered_map<const Value*, int> slots_;
  std::vector<int> input_slots_;
  std::vector<SlotRef> outputs_;
  std::vector<RuntimeValue> constant_values_;  // per slot; none where no initializer
  std::vector<int> slot_readers_;
  std::vector<bool> output_slot_;
};

// The values of one running graph; `parent` is the frame of the enclosing graph.
// Each slot is written by one step; in a parallel run, readers start only after it. An
// empty slot with an initializer resolves to the plan's constant (binding ~250 weights
// into every run's frame cost EfficientNet-B0 75 us per run).
class Frame {
 public:
  Frame(const CompiledGraph& graph, const Frame* parent)
      : graph_(graph), parent_(parent), slots_(graph.slot_count()) {}
  RuntimeValue& slot(int index) { return slots_[static_cast<size_t>(index)]; }
  const RuntimeValue& resolve(SlotRef ref) const;
  const CompiledGraph& graph() const { return graph_; }

 private:
  const CompiledGraph& graph_;
  const Frame* parent_;
  std::vector<RuntimeValue> slots_;
};

// Runs `graph` with `inputs` bound to its inputs in order; returns its outputs in order.
// `bound_outputs` (empty, or one per graph output; none = unbound) preset the slots of
// node-produced outputs with the caller's tensors, so kernels allocate straight into them.
// Fails unless `shape` has the rank of `declared`'s shape and its known dims (symbolic and
// unknown dims take any size; an undeclared shape takes any): "input 'x' must have shape
// [1,3] (rank 2), got [3]". `what` names the value ("input 'x'").
void check_declared_shape(const std::string& what, const ValueType& declared,
                          std::span<const int64_t> shape);

std::vector<RuntimeValue> execute_graph(const CompiledGraph& graph,
                                        std::vector<RuntimeValue> inputs, const Frame* outer,
                                        SubgraphRunner& runner,
                                        std::vector<RuntimeValue> bound_outputs = {});

// Parallel execution of the main graph: independent steps run at once on `workers`
// threads (the caller and workers - 1 from the process-wide inter-op pool), each kernel
// with `threads_per_worker` intra-op threads. Same contract as execute_graph.
std::vector<RuntimeValue> execute_graph_parallel(const CompiledGraph& graph,
                                                 std::vector<RuntimeValue> inputs,
                                                 SubgraphRunner& runner,
                                                 std::vector<RuntimeValue> bound_outputs,
                                                 int workers, int threads_per_worker);

// The runner control-flow kernels use: plain recursive execution. With a profiler, every
// kernel call (inside subgraphs too) is timed into it.
class SequentialRunner : public SubgraphRunner {
 public:
  explicit SequentialRunner(Profiler* profiler = nullptr, BlockAllocator* allocator = nullptr,
                            bool release_weights = false)
      : profiler_(profiler), allocator_(allocator), release_weights_(release_weights) {}
  std::vector<RuntimeValue> run(const CompiledGraph& graph, std::vector<RuntimeValue> inputs,
                                const Frame& outer) override {
    return execute_graph(graph, std::move(inputs), &outer, *this);
  }
  Profiler* profiler() const override { return profiler_; }
  BlockAllocator* allocator() const override { return allocator_; }
  bool release_weights_after_use() const override { return release_weights_; }

 private:
  Profiler* profiler_;
  BlockAllocator* allocator_;
  bool release_weights_;
};

}  // namespace onnxkit

#include "runtime/compiled_graph.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <span>

#include "core/parallel.h"
#include "core/resource_limits.h"
#include "runtime/inter_op_pool.h"

#include "runtime/profiler.h"

namespace onnxkit {

int CompiledGraph::slot_of(const Value* value) const {
  auto it = slots_.find(value);
  return it == slots_.end() ? -1 : it->second;
}

SlotRef CompiledGraph::resolve(const Value* value) const {
  int depth = 0;
  for (const CompiledGraph* plan = this; plan; plan = plan->parent_, ++depth) {
    int slot = plan->slot_of(value);
    if (slot >= 0) return SlotRef{depth, slot};
  }
  fail("internal: value '{}' has no slot in any enclosing graph", value->name());
}

std::shared_ptr<const CompiledGraph> CompiledGraph::compile(
    const Graph& graph, const OpRegistry& registry, const std::vector<OpsetImport>& opsets,
    KernelTier tier, const CompiledGraph* parent, bool one_shot) {
  int depth = 0;
  for (const CompiledGraph* outer = parent; outer; outer = outer->parent_) ++depth;
  if (depth > kMaxSubgraphDepth) {
    fail("subgraph '{}' is nested {} levels deep, more than the {} onnxkit runs", graph.name(),
         depth, kMaxSubgraphDepth);
  }
  std::shared_ptr<CompiledGraph> plan(new CompiledGraph(graph, parent));
  auto add_slot = [&](const Value* value) {
    auto [it, inserted] = plan->slots_.try_emplace(value, static_cast<int>(plan->slot_count_));
    if (inserted) ++plan->slot_count_;
    return it->second;
  };
  // Slots first, so subgraphs compiled below can resolve captures into this plan.
  for (const Value* input : graph.inputs()) plan->input_slots_.push_back(add_slot(input));
  std::vector<std::pair<int, const Tensor*>> constants;  // slot, initializer
  for (const Value* value : graph.initializers()) {
    constants.emplace_back(add_slot(value), &value->initializer());
  }
  std::vector<Node*> order = graph.topological_order();
  for (const Node* node : order) {
    for (const Value* output : node->outputs()) {
      if (output) add_slot(output);
    }
  }
  for (const auto& [value, sparse] : graph.sparse_initializers()) {
    if (plan->slot_of(value) < 0) {
      fail("sparse initializer '{}' is not supported by the executor yet", value->name());
    }
  }

  KernelCreateContext::SubgraphCompiler compiler = [&registry, &opsets, tier, one_shot,
                                                    raw = plan.get()](const Graph& sub) {
    return compile(sub, registry, opsets, tier, raw, one_shot);
  };
  std::unordered_map<int, size_t> last_reader;  // slot -> step index
  for (const Node* node : order) {
    Step step;
    step.node = node;
    KernelCreateContext context(*node, opset_version(opsets, node->domain()), registry, compiler,
                                one_shot);
    try {
      step.kernel = registry.create_kernel(context, tier);
    } catch (const Error& e) {
      std::string message = e.what();
      if (message.rfind(node->describe(), 0) == 0) throw;
      throw Error(fmt::format("{}: {}", node->describe(), message), e.kind());
    }
    for (const Value* input : node->inputs()) {
      step.inputs.push_back(input ? plan->resolve(input) : SlotRef{});
    }
    for (const Value* output : node->outputs()) {
      // Outputs nobody reads are still computed (kernels may need them), into a slot.
      step.outputs.push_back(output ? plan->slot_of(output) : -1);
    }
    std::vector<const Value*> reads(node->inputs().begin(), node->inputs().end());
    for (const Graph* sub : node->subgraphs()) collect_captures(*sub, graph, reads);
    for (const Value* value : reads) {
      if (!value || value->graph() != &graph) continue;
      const int slot = plan->slot_of(value);
      last_reader[slot] = plan->steps_.size();
      if (std::find(step.reads.begin(), step.reads.end(), slot) == step.reads.end()) {
        step.reads.push_back(slot);
      }
    }
    plan->steps_.push_back(std::move(step));
  }
  for (const Value* output : graph.outputs()) plan->outputs_.push_back(plan->resolve(output));
  // Dependencies between steps, and readers per slot (parallel execution).
  plan->slot_readers_.assign(plan->slot_count_, 0);
  plan->output_slot_.assign(plan->slot_count_, false);
  for (SlotRef ref : plan->outputs_) {
    if (ref.depth == 0) plan->output_slot_[static_cast<size_t>(ref.slot)] = true;
  }
  std::vector<int> producer(plan->slot_count_, -1);
  for (size_t i = 0; i < plan->steps_.size(); ++i) {
    Step& step = plan->steps_[i];
    std::vector<int> waits_for;
    for (int slot : step.reads) {
      ++plan->slot_readers_[static_cast<size_t>(slot)];
      const int from = producer[static_cast<size_t>(slot)];
      if (from >= 0 && std::find(waits_for.begin(), waits_for.end(), from) == waits_for.end()) {
        waits_for.push_back(from);
        plan->steps_[static_cast<size_t>(from)].consumers.push_back(i);
      }
    }
    step.dependencies = waits_for.size();
    for (int slot : step.outputs) {
      if (slot >= 0) producer[static_cast<size_t>(slot)] = static_cast<int>(i);
    }
  }
  // Free each slot after its last reader, unless the graph returns it.
  for (auto [slot, step_index] : last_reader) {
    bool is_output = std::any_of(plan->outputs_.begin(), plan->outputs_.end(),
                                 [&](SlotRef ref) { return ref.depth == 0 && ref.slot == slot; });
    if (!is_output) plan->steps_[step_index].release.push_back(slot);
  }
  plan->constant_values_.resize(plan->slot_count_);
  for (const auto& [slot, tensor] : constants) {
    plan->constant_values_[static_cast<size_t>(slot)] = RuntimeValue(*tensor);
  }
  for (Step& step : plan->steps_) {
    for (size_t i = 0; i < step.inputs.size() && i < 64; ++i) {
      const SlotRef ref = step.inputs[i];
      // Constants are shared by every run: never an output's storage.
      if (ref.omitted() || ref.depth != 0 || plan->constant(ref.slot)) continue;
      const bool last_read =
          std::find(step.release.begin(), step.release.end(), ref.slot) != step.release.end();
      const auto same_slot = [&](SlotRef other) {
        return other.depth == 0 && other.slot == ref.slot;
      };
      if (last_read && std::count_if(step.inputs.begin(), step.inputs.end(), same_slot) == 1) {
        step.donatable_inputs |= uint64_t{1} << i;
      }
    }
  }
  return plan;
}

const RuntimeValue& Frame::resolve(SlotRef ref) const {
  const Frame* frame = this;
  for (int i = 0; i < ref.depth; ++i) frame = frame->parent_;
  const RuntimeValue& value = frame->slots_[static_cast<size_t>(ref.slot)];
  if (value.is_none()) {
    if (const RuntimeValue* constant = frame->graph_.constant(ref.slot)) return *constant;
  }
  return value;
}

namespace {

// Inputs and bound outputs into a fresh frame (constants stay in the plan).
void bind_frame(Frame& frame, const CompiledGraph& graph, std::vector<RuntimeValue>& inputs,
                std::vector<RuntimeValue>& bound_outputs) {
  const auto& input_slots = graph.input_slots();
  if (inputs.size() > input_slots.size()) {
    fail("graph '{}' takes {} inputs, got {}", graph.graph().name(), input_slots.size(),
         inputs.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    // A graph input without a value keeps its initializer (old-style default), if any.
    if (!inputs[i].is_none()) frame.slot(input_slots[i]) = std::move(inputs[i]);
  }
  for (size_t i = 0; i < bound_outputs.size() && i < graph.outputs().size(); ++i) {
    const SlotRef ref = graph.outputs()[i];
    // Only slots a node writes: an output that is an input or a constant stays as it is.
    const bool is_input =
        std::find(input_slots.begin(), input_slots.end(), ref.slot) != input_slots.end();
    if (bound_outputs[i].is_none() || ref.depth != 0 || is_input || graph.constant(ref.slot) ||
        !frame.slot(ref.slot).is_none()) {
      continue;
    }
    frame.slot(ref.slot) = std::move(bound_outputs[i]);
  }
}

// A subgraph's inputs come from its node, not from a caller the session checks: a tensor of
// another rank, or another known dim, than the subgraph declares would run where passes folded
// the declaration (a Shape of a Loop's carried value) and give other values than level none.
void check_subgraph_inputs(const CompiledGraph& graph, const std::vector<RuntimeValue>& inputs) {
  const auto& formal = graph.graph().inputs();
  for (size_t i = 0; i < inputs.size() && i < formal.size(); ++i) {
    if (!inputs[i].is_tensor() || !formal[i]->type().is_tensor()) continue;
    check_declared_shape(
        fmt::format("subgraph '{}': input '{}'", graph.graph().name(), formal[i]->name()),
        formal[i]->type(), inputs[i].tensor().shape());
  }
}

// `in_place`: sequential execution, where a step's last-reader inputs may be donated.
void run_step(const CompiledGraph::Step& step, Frame& frame, SubgraphRunner& runner,
              bool in_place) {
  // The pointers sit on the stack for all but the widest nodes (Concat, Sum).
  constexpr size_t kInline = 16;
  std::array<const RuntimeValue*, kInline> input_array;
  std::array<RuntimeValue*, kInline> output_array;
  std::vector<const RuntimeValue*> input_vector;
  std::vector<RuntimeValue*> output_vector;
  const size_t inputs = step.inputs.size(), outputs = step.outputs.size();
  if (inputs > kInline) input_vector.resize(inputs);
  if (outputs > kInline) output_vector.resize(outputs);
  const std::span<const RuntimeValue*> input_ptrs(
      inputs > kInline ? input_vector.data() : input_array.data(), inputs);
  const std::span<RuntimeValue*> output_ptrs(
      outputs > kInline ? output_vector.data() : output_array.data(), outputs);
  {
    for (size_t i = 0; i < inputs; ++i) {
      const SlotRef ref = step.inputs[i];
      input_ptrs[i] = ref.omitted() ? nullptr : &frame.resolve(ref);
    }
    for (size_t i = 0; i < outputs; ++i) {
      const int slot = step.outputs[i];
      output_ptrs[i] = slot < 0 ? nullptr : &frame.slot(slot);
    }
    KernelContext context(*step.node, input_ptrs, output_ptrs, &runner, &frame,
                          in_place ? step.donatable_inputs : 0);
    try {
      if (Profiler* profiler = runner.profiler()) {
        const int64_t start = profiler->now_ns();
        step.kernel->compute(context);
        profiler->record(*step.node, start, profiler->now_ns());
      } else {
        step.kernel->compute(context);
      }
    } catch (const Error& e) {
      std::string message = e.what();
      if (message.find(step.node->describe()) != std::string::npos) throw;
      throw Error(fmt::format("{}: {}", step.node->describe(), message), e.kind());
    } catch (const std::bad_alloc&) {
      fail_resource_limit("{}: out of memory", step.node->describe());
    }
  }
}

std::vector<RuntimeValue> collect_outputs(const CompiledGraph& graph, const Frame& frame) {
  std::vector<RuntimeValue> outputs;
  outputs.reserve(graph.outputs().size());
  for (SlotRef ref : graph.outputs()) outputs.push_back(frame.resolve(ref));
  return outputs;
}

}  // namespace

void check_declared_shape(const std::string& what, const ValueType& declared,
                          std::span<const int64_t> shape) {
  if (!declared.shape) return;
  const auto& dims = *declared.shape;
  if (dims.size() != shape.size()) {
    fail("{} must have shape {} (rank {}), got {}", what, symbolic_shape_to_string(declared.shape),
         dims.size(), shape_to_string(shape));
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d].is_known() && dims[d].value != shape[d]) {
      fail("{} must have shape {}, got {} (dim {} is {}, expected {})", what,
           symbolic_shape_to_string(declared.shape), shape_to_string(shape), d, shape[d],
           dims[d].value);
    }
  }
}

std::vector<RuntimeValue> execute_graph(const CompiledGraph& graph,
                                        std::vector<RuntimeValue> inputs, const Frame* outer,
                                        SubgraphRunner& runner,
                                        std::vector<RuntimeValue> bound_outputs) {
  if (outer) check_subgraph_inputs(graph, inputs);
  Frame frame(graph, outer);
  bind_frame(frame, graph, inputs, bound_outputs);
  const bool release_weights = runner.release_weights_after_use();
  for (const auto& step : graph.steps()) {
    run_step(step, frame, runner, true);
    for (int slot : step.release) {
      // An initializer read for the last time in a one-off run.
      if (const RuntimeValue* constant = graph.constant(slot);
          release_weights && constant && constant->is_tensor()) {
        constant->tensor().release_mapped_pages();
      }
      frame.slot(slot) = RuntimeValue();
    }
  }
  return collect_outputs(graph, frame);
}

std::vector<RuntimeValue> execute_graph_parallel(const CompiledGraph& graph,
                                                 std::vector<RuntimeValue> inputs,
                                                 SubgraphRunner& runner,
                                                 std::vector<RuntimeValue> bound_outputs,
                                                 int workers, int threads_per_worker) {
  Frame frame(graph, nullptr);
  bind_frame(frame, graph, inputs, bound_outputs);
  const auto& steps = graph.steps();
  // `waiting` changes only under `mutex`; `readers` drops as kernels finish, outside it.
  std::vector<size_t> waiting(steps.size());
  std::vector<std::atomic<int>> readers(graph.slot_count());
  for (size_t i = 0; i < steps.size(); ++i) waiting[i] = steps[i].dependencies;
  for (size_t i = 0; i < graph.slot_count(); ++i) readers[i] = graph.slot_readers()[i];

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<size_t> ready;
  size_t finished = 0;
  std::exception_ptr error;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].dependencies == 0) ready.push_back(i);
  }
  RunLimits* limits = current_run_limits();
  auto worker = [&] {
    ThreadCountScope threads(threads_per_worker);
    RunLimitsScope limits_scope(limits);
    std::unique_lock lock(mutex);
    while (true) {
      wake.wait(lock, [&] { return !ready.empty() || finished == steps.size() || error; });
      if (finished == steps.size() || error) return;
      const size_t index = ready.front();
      ready.pop_front();
      lock.unlock();
      const CompiledGraph::Step& step = steps[index];
      std::exception_ptr failure;
      try {
        run_step(step, frame, runner, false);
        for (int slot : step.reads) {
          if (--readers[static_cast<size_t>(slot)] == 0 && !graph.is_output_slot(slot)) {
            frame.slot(slot) = RuntimeValue();
          }
        }
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      if (failure && !error) error = failure;
      ++finished;
      for (size_t next : step.consumers) {
        if (--waiting[next] == 0) ready.push_back(next);
      }
      wake.notify_all();
    }
  };
  InterOpPool::instance().run(workers, worker);
  if (error) std::rethrow_exception(error);
  return collect_outputs(graph, frame);
}

}  // namespace onnxkit

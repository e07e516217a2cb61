#include "onnxkit/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "core/arena_plan.h"
#include "core/buffer.h"
#include "core/memory_pool.h"
#include "core/parallel.h"
#include "core/resource_limits.h"
#include "core/status.h"
#include "ir/model.h"
#include "onnx/onnx_checks.h"
#include "onnxkit/model_io.h"
#include "ops/registry.h"
#include "passes/inline_functions.h"
#include "passes/pipeline.h"
#include "registry/builtin_registry.h"
#include "registry/custom_op_library.h"
#include "runtime/compiled_graph.h"
#include "runtime/profiler.h"

namespace onnxkit {
namespace {

// Checks one input against its declared type; binds symbolic dims across inputs.
void validate_input(const Value& declared, const RuntimeValue& value,
                    std::map<std::string, std::pair<int64_t, std::string>>& symbols) {
  const ValueType& type = declared.type();
  const std::string& name = declared.name();
  switch (type.kind) {
    case ValueType::Kind::kTensor:
      break;
    case ValueType::Kind::kSequence:
      if (!value.is_sequence())
        fail("input '{}' must be a sequence, got {}", name, value.describe());
      return;
    case ValueType::Kind::kOptional:
      return;
    default:
      return;
  }
  if (!value.is_tensor()) fail("input '{}' must be a tensor, got {}", name, value.describe());
  const Tensor& tensor = value.tensor();
  if (type.elem_type != DType::kUndefined && tensor.dtype() != type.elem_type) {
    fail("input '{}' must be {}, got {}", name, dtype_name(type.elem_type),
         dtype_name(tensor.dtype()));
  }
  if (!type.shape) return;
  check_declared_shape(fmt::format("input '{}'", name), type, tensor.shape());
  const auto& dims = *type.shape;
  for (size_t d = 0; d < dims.size(); ++d) {
    const int64_t actual = tensor.shape()[d];
    if (dims[d].is_symbolic()) {
      auto [it, inserted] = symbols.try_emplace(dims[d].param, actual, name);
      if (!inserted && it->second.first != actual) {
        fail("input '{}' has {} = {} (dim {}), but input '{}' set {} = {}", name, dims[d].param,
             actual, d, it->second.second, dims[d].param, it->second.first);
      }
    }
  }
}

// Plans are per input-shape set; a model fed many shapes keeps at most this many.
constexpr size_t kMaxPlans = 16;
constexpr int kMaxPlanFailures = 2;
constexpr size_t kMaxPlannedAllocations = 10000;

std::string shape_key(const std::vector<RuntimeValue>& inputs) {
  std::string key;
  for (const RuntimeValue& value : inputs) {
    if (value.is_tensor()) {
      key += std::to_string(static_cast<int>(value.tensor().dtype()));
      for (int64_t dim : value.tensor().shape()) key += "," + std::to_string(dim);
    } else {
      key += value.describe();
    }
    key += ';';
  }
  return key;
}

ValueInfo describe_value(const Value& value) {
  const ValueType& type = value.type();
  ValueInfo info;
  info.name = value.name();
  info.is_tensor = type.kind == ValueType::Kind::kTensor;
  if (info.is_tensor) {
    info.dtype = type.elem_type;
    info.shape = type.shape;
  }
  info.type = value_type_to_string(type);
  return info;
}

}  // namespace

// Everything a session holds; behind a pointer so the public header needs none of it.
struct Session::State {
  State(Model model, const SessionOptions& options)
      : model(std::move(model)), options(options), pool(MemoryPool::create()) {}

  Model model;
  SessionOptions options;
  // The registry with the custom op libraries' ops, when the options name any: the kernels
  // refer to it.
  std::shared_ptr<const OpRegistry> custom_registry;
  SessionStats stats;
  std::shared_ptr<const CompiledGraph> plan;
  std::shared_ptr<MemoryPool> pool;
  // Memory plans by input-shape key.
  struct PlanEntry {
    std::shared_ptr<const ArenaPlan> plan;
    int failures = 0;  // replays that diverged; after a few the key stays on the pool
  };
  std::mutex plans_mutex;
  std::map<std::string, PlanEntry> plans;
  MemoryPlanStats plan_stats;
};

Session::Session(std::unique_ptr<State> state) : state_(std::move(state)) {}

Session::~Session() {
  // Outputs the caller keeps hold the pool; its cache (up to a run's largest tensors) must
  // not live on with them. Cached arena blocks released below go straight to the system.
  state_->pool->close();
}

const Model& Session::model() const {
  return state_->model;
}

const SessionOptions& Session::options() const {
  return state_->options;
}

const SessionStats& Session::stats() const {
  return state_->stats;
}

MemoryPoolStats Session::memory_stats() const {
  return state_->pool->stats();
}

MemoryPlanStats Session::memory_plan_stats() const {
  std::lock_guard lock(state_->plans_mutex);
  return state_->plan_stats;
}

Result<std::unique_ptr<Session>> Session::create(Model model, const SessionOptions& options) {
  return capture([&] {
    // A kernel registered for an op's newest version would otherwise run a node of an opset
    // that may have changed its meaning.
    check_opsets_supported(model).throw_if_error();
    const OpRegistry& base_registry = options.registry ? *options.registry : builtin_registry();
    std::shared_ptr<const OpRegistry> custom_registry;
    if (!options.custom_op_libraries.empty()) {
      custom_registry = registry_with_custom_ops(base_registry, options.custom_op_libraries);
    }
    const OpRegistry& registry = custom_registry ? *custom_registry : base_registry;
    InlineOptions inline_options;
    inline_options.has_kernel = [&](const Node& node) {
      return registry.find(node.domain(), node.op_type(), model.opset_version(node.domain())) !=
             nullptr;
    };
    inline_functions(model, inline_options).value();
    using Clock = std::chrono::steady_clock;
    auto seconds_since = [](Clock::time_point start) {
      return std::chrono::duration<double>(Clock::now() - start).count();
    };
    ThreadCountScope threads(options.intra_op_threads);
    SessionStats stats;
    stats.nodes_loaded = model.graph().nodes().size();
    auto start = Clock::now();
    for (auto& passes : pass_lists_for_level(options.level)) {
      PipelineOptions pipeline;
      pipeline.skip = options.skip_passes;
      PassContext context;
      context.registry = &registry;
      context.kernel_tier = options.kernels;
      context.keep_weight_transposes = true;
      auto result = run_pipeline(model, passes, context, pipeline);
      if (!result) fail("optimizing the graph: {}", result.error());
    }
    stats.nodes_optimized = model.graph().nodes().size();
    stats.optimize_seconds = seconds_since(start);
    start = Clock::now();
    auto state = std::make_unique<State>(std::move(model), options);
    state->custom_registry = std::move(custom_registry);
    state->plan = CompiledGraph::compile(state->model.graph(), registry, state->model.opset_imports,
                                         options.kernels, nullptr, options.one_shot);
    // Kernels drop the pages of the weights they packed as they pack them; what else
    // creation read of the mapped weights (passes comparing or folding initializers) leaves
    // the resident set here, and what a run reads comes back from the file.
    for (const Value* value : state->model.graph().initializers()) {
      value->initializer().release_mapped_pages();
    }
    stats.compile_seconds = seconds_since(start);
    state->stats = stats;
    return std::unique_ptr<Session>(new Session(std::move(state)));
  });
}

Result<std::unique_ptr<Session>> Session::load(const std::filesystem::path& path,
                                               const SessionOptions& options) {
  auto model = load_model(path);
  if (!model) return Status::error(model.error());
  auto session = create(std::move(model).value(), options);
  if (!session) return Status::error(path.string() + ": " + session.error());
  return session;
}

std::vector<const Value*> Session::required_inputs() const {
  std::vector<const Value*> inputs;
  for (const Value* value : state_->model.graph().inputs()) {
    if (!value->has_initializer()) inputs.push_back(value);
  }
  return inputs;
}

std::vector<ValueInfo> Session::inputs() const {
  std::vector<ValueInfo> infos;
  for (const Value* value : required_inputs()) infos.push_back(describe_value(*value));
  return infos;
}

std::vector<ValueInfo> Session::outputs() const {
  std::vector<ValueInfo> infos;
  for (const Value* value : state_->model.graph().outputs()) {
    infos.push_back(describe_value(*value));
  }
  return infos;
}

Result<NamedValues> Session::run(const NamedValues& inputs, const RunOptions& run_options) const {
  return capture([&] { return run_checked(inputs, run_options); });
}

NamedValues Session::run_checked(const NamedValues& inputs, const RunOptions& run_options) const {
  State& state = *state_;
  const SessionOptions& options = state.options;
  const auto& graph_inputs = state.model.graph().inputs();
  std::vector<RuntimeValue> ordered(graph_inputs.size());
  std::vector<bool> fed(graph_inputs.size(), false);
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  for (const auto& [name, value] : inputs) {
    auto it = std::find_if(graph_inputs.begin(), graph_inputs.end(),
                           [&](const Value* v) { return v->name() == name; });
    if (it == graph_inputs.end()) {
      std::string known;
      for (const Value* v : required_inputs()) known += (known.empty() ? "" : ", ") + v->name();
      fail("unknown input '{}' (the model's inputs: {})", name, known);
    }
    size_t index = static_cast<size_t>(it - graph_inputs.begin());
    if (fed[index]) fail("input '{}' is given twice", name);
    if (options.validate_inputs) validate_input(**it, value, symbols);
    ordered[index] = value;
    fed[index] = true;
  }
  for (size_t i = 0; i < graph_inputs.size(); ++i) {
    const Value* input = graph_inputs[i];
    if (!fed[i] && !input->has_initializer() && input->type().kind != ValueType::Kind::kOptional) {
      fail("input '{}' ({}) is missing", input->name(), value_type_to_string(input->type()));
    }
  }
  const auto& graph_outputs = state.model.graph().outputs();
  // Bound outputs enter the run as fresh tensors over the caller's memory, held only by
  // their slots, so kernels write into that memory without a copy-on-write.
  std::vector<RuntimeValue> bound;
  if (!run_options.bound_outputs.empty()) bound.resize(graph_outputs.size());
  std::vector<const Tensor*> bound_targets(graph_outputs.size(), nullptr);
  for (const auto& [name, value] : run_options.bound_outputs) {
    auto it = std::find_if(graph_outputs.begin(), graph_outputs.end(),
                           [&](const Value* v) { return v->name() == name; });
    if (it == graph_outputs.end()) fail("bound output '{}' is not an output of the model", name);
    const Tensor* target = value.is_tensor() ? &value.tensor() : nullptr;
    if (!target || !target->buffer() || !target->buffer()->writable() ||
        target->dtype() == DType::kString) {
      fail("bound output '{}' must be a writable numeric tensor (Tensor::external)", name);
    }
    const size_t index = static_cast<size_t>(it - graph_outputs.begin());
    bound[index] = RuntimeValue(
        Tensor::external(target->dtype(), target->shape(), const_cast<void*>(target->raw_data())));
    bound_targets[index] = target;
  }
  ThreadCountScope threads(options.intra_op_threads);
  // Sequential runs follow the memory plan for these input shapes, or record one.
  std::shared_ptr<ArenaRun> arena;
  bool recording = false;
  std::string plan_key;
  if (options.memory_planning && !options.parallel_execution) {
    plan_key = shape_key(ordered);
    std::lock_guard lock(state.plans_mutex);
    auto it = state.plans.find(plan_key);
    if (it != state.plans.end() && it->second.plan) {
      arena = ArenaRun::replay(state.pool, it->second.plan);
    } else if ((it != state.plans.end() && it->second.failures < kMaxPlanFailures) ||
               (it == state.plans.end() && state.plans.size() < kMaxPlans)) {
      arena = ArenaRun::record(state.pool);
      recording = true;
    }
  }
  SequentialRunner runner(run_options.profiler,
                          arena ? static_cast<BlockAllocator*>(arena.get()) : state.pool.get(),
                          options.release_weights_after_use);
  // Installed after the arena is reserved: its planned blocks are charged as they are lent.
  auto limits = std::make_shared<RunLimits>(options.max_tensor_bytes, options.max_run_bytes,
                                            options.max_loop_iterations);
  RunLimitsScope limits_scope(limits.get());
  std::vector<RuntimeValue> results;
  if (options.parallel_execution) {
    // One budget: intra_op_threads split across the inter-op workers.
    const int budget = options.intra_op_threads > 0 ? options.intra_op_threads : available_cores();
    const int workers = std::clamp(options.inter_op_threads > 0 ? options.inter_op_threads : 2, 1,
                                   std::max(1, budget));
    results = execute_graph_parallel(*state.plan, std::move(ordered), runner, std::move(bound),
                                     workers, std::max(1, budget / workers));
  } else {
    results = execute_graph(*state.plan, std::move(ordered), nullptr, runner, std::move(bound));
  }
  if (arena) {
    arena->finish();
    std::lock_guard lock(state.plans_mutex);
    State::PlanEntry& entry = state.plans[plan_key];
    if (!recording) {
      if (arena->diverged()) {
        entry.plan = nullptr;
        ++entry.failures;
        ++state.plan_stats.diverged_runs;
      } else {
        ++state.plan_stats.planned_runs;
      }
    } else if (!entry.plan) {
      AllocationTrace trace = arena->take_trace();
      if (trace.sizes.size() > kMaxPlannedAllocations) {
        // Planning is quadratic in allocations (long Loops): such runs stay on the pool.
        entry.failures = kMaxPlanFailures;
      } else {
        entry.plan = ArenaPlan::from_trace(std::move(trace));
        ++state.plan_stats.plans;
        if (entry.plan->arena_bytes > state.plan_stats.largest_arena_bytes) {
          state.plan_stats.largest_arena_bytes = entry.plan->arena_bytes;
          state.plan_stats.planned_tensors = entry.plan->planned_tensors;
        }
      }
    }
  }
  NamedValues outputs;
  for (size_t i = 0; i < results.size(); ++i) {
    if (const Tensor* target = bound_targets[i]) {
      // Kernels that hand over a tensor (Reshape, Identity) did not write the caller's
      // memory: copy into it.
      if (!results[i].is_tensor()) {
        fail("bound output '{}': the model produced {}", graph_outputs[i]->name(),
             results[i].describe());
      }
      const Tensor& produced = results[i].tensor();
      if (produced.dtype() != target->dtype() || produced.shape() != target->shape()) {
        fail("bound output '{}' is {}, the model produced {}", graph_outputs[i]->name(),
             RuntimeValue(*target).describe(), results[i].describe());
      }
      void* memory = const_cast<void*>(target->raw_data());
      if (produced.raw_data() != memory && target->nbytes()) {
        std::memcpy(memory, produced.raw_data(), target->nbytes());
      }
      results[i] = RuntimeValue(*target);
    }
    outputs.emplace_back(graph_outputs[i]->name(), std::move(results[i]));
  }
  return outputs;
}

}  // namespace onnxkit

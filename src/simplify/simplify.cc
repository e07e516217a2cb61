#include "onnxkit/simplify.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <random>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/buffer.h"
#include "core/resource_limits.h"
#include "core/status.h"
#include "ir/graph_clone.h"
#include "ir/model.h"
#include "ir/verifier.h"
#include "onnx/onnx_checks.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "passes/convert_opset.h"
#include "passes/inline_functions.h"
#include "passes/pipeline.h"
#include "registry/builtin_registry.h"
#include "registry/custom_op_library.h"
#include "runtime/compare.h"
#include "simplify/check_cost.h"
#include "simplify/check_inputs.h"

namespace onnxkit {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void count_graph(const Graph& graph, ModelCounts& counts) {
  for (const Node* node : graph.nodes()) {
    ++counts.nodes;
    ++counts.ops[node->domain().empty() ? node->op_type() : node->domain() + "." + node->op_type()];
    for (const Graph* sub : node->subgraphs()) count_graph(*sub, counts);
  }
  for (const Value* value : graph.initializers()) {
    ++counts.initializers;
    counts.parameters += static_cast<uint64_t>(value->initializer().numel());
    counts.tensor_bytes += value->initializer().nbytes();
  }
}

// The input model's outputs on the check inputs, computed before any pass runs, so the
// input model need not be kept (with its weights resident) beside the simplified one.
struct CheckRun {
  NamedValues inputs;
  NamedValues expected;
  // Per 16-bit float output: OutputCheck::precision_floor on these inputs.
  std::map<std::string, double> precision_floor;
};

// Both graphs run exactly as they are (no session-level rewrites), on the optimized kernels
// by default: a check then costs about two runs at full speed (`check_kernels` picks the
// reference kernels, the ones every other kernel is tested on).
SessionOptions check_session_options(const SimplifyOptions& options, const OpRegistry& registry) {
  SessionOptions session_options;
  session_options.registry = &registry;
  session_options.level = OptimizationLevel::kNone;
  session_options.kernels = options.check_kernels;
  session_options.intra_op_threads = 0;
  session_options.release_weights_after_use = true;
  session_options.one_shot = true;
  session_options.max_tensor_bytes = options.max_tensor_bytes;
  session_options.max_run_bytes = options.max_run_bytes;
  session_options.max_loop_iterations = options.max_loop_iterations;
  return session_options;
}

// A computed output of dtype float16 or bfloat16 (declared types may be missing).
bool is_16bit_float(const RuntimeValue& value) {
  if (!value.is_tensor()) return false;
  const DType dtype = value.tensor().dtype();
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

// The graph as given, its 16-bit float regions computed in float32: the one rewrite that
// changes no semantics but precision (compute_fp16_in_fp32).
SessionOptions float32_compute_options(const SimplifyOptions& options, const OpRegistry& registry) {
  SessionOptions session_options = check_session_options(options, registry);
  session_options.level = OptimizationLevel::kExtended;
  for (const std::string& pass : all_pass_names()) {
    if (pass != "compute_fp16_in_fp32") session_options.skip_passes.insert(pass);
  }
  return session_options;
}

// Records each 16-bit output's precision floor: the input model run again in float32.
void measure_precision_floor(const Model& model, const SimplifyOptions& options,
                             const OpRegistry& registry, std::vector<CheckRun>& runs) {
  std::set<std::string> narrow_outputs;
  for (const auto& [name, value] : runs.front().expected) {
    if (is_16bit_float(value)) narrow_outputs.insert(name);
  }
  if (narrow_outputs.empty()) return;
  auto session = Session::create(clone_model(model), float32_compute_options(options, registry));
  if (!session) fail("the input model cannot run in float32 for the check: {}", session.error());
  for (CheckRun& run : runs) {
    auto wide = session.value()->run(run.inputs);
    if (!wide) fail("the input model failed in float32 on the check inputs: {}", wide.error());
    for (size_t i = 0; i < run.expected.size() && i < wide.value().size(); ++i) {
      const auto& [name, expected] = run.expected[i];
      if (!narrow_outputs.count(name)) continue;
      const Comparison c = compare_values(wide.value()[i].second, expected, Tolerance{0, 0});
      run.precision_floor[name] = c.max_abs_error;
    }
  }
}

constexpr const char* kDimOptions =
    "set them with --dim NAME=V (a named dim), --test-input-shape NAME:D0,D1,... (the check's "
    "shapes; the model stays dynamic) or --overwrite-input-shape NAME:D0,D1,... (makes the "
    "model static)";

// Ops of custom domains in `graph` (and its subgraphs) that neither `registry` nor the model's
// own functions define.
void collect_unknown_custom_ops(const Graph& graph, const Model& model, const OpRegistry& registry,
                                std::set<std::string>& unknown) {
  for (const Node* node : graph.nodes()) {
    for (const Graph* sub : node->subgraphs()) {
      collect_unknown_custom_ops(*sub, model, registry, unknown);
    }
    const std::string& domain = node->domain();
    if (domain.empty() || domain == "ai.onnx.ml" || domain == "ai.onnx.preview.training") continue;
    if (!registry.find(node->domain(), node->op_type(), model.opset_version(node->domain())) &&
        !find_local_function(model, *node)) {
      unknown.insert(node->domain() + "::" + node->op_type());
    }
  }
}

// True (with a warning saying why) when the check cannot run for want of a custom op library.
bool skip_check_for_custom_ops(const Model& model, const OpRegistry& registry,
                               SimplifyReport& report) {
  std::set<std::string> unknown;
  collect_unknown_custom_ops(model.graph(), model, registry, unknown);
  if (unknown.empty()) return false;
  std::string ops;
  for (const std::string& op : unknown) ops += (ops.empty() ? "" : ", ") + op;
  report.warnings.push_back(fmt::format(
      "check skipped: no kernel for {} (custom ops kept as they are; load their library with "
      "--custom-op-lib to fold and check them)",
      ops));
  return true;
}

// Runs the input model on check inputs. The first run tries the dynamic dims' candidate
// sizes in turn while the model fails (a broadcast, a kernel window, a reshape that the sizes
// do not fit; any failure but a bound of the run, which larger sizes cannot cure); later runs
// reuse the sizes that worked.
std::vector<CheckRun> run_input_model(const Model& model, const CheckDims& dims, int check_n,
                                      const SimplifyOptions& options, const OpRegistry& registry,
                                      SimplifyReport& report) {
  auto session = Session::create(clone_model(model), check_session_options(options, registry));
  if (!session) fail("the input model cannot run for the check: {}", session.error());
  // Generated inputs are held to the bounds of the run they feed: a declared [2^31] int64
  // input is refused, not allocated.
  auto generate_inputs = [&](uint64_t seed, size_t try_index) {
    auto limits = std::make_shared<RunLimits>(options.max_tensor_bytes, options.max_run_bytes);
    RunLimitsScope limits_scope(limits.get());
    return make_check_inputs(model, dims, options.check_inputs, seed, try_index);
  };
  std::vector<CheckRun> runs;
  size_t attempt = 0;
  for (int run = 0; run < check_n; ++run) {
    CheckRun check_run;
    const uint64_t seed = options.seed + static_cast<uint64_t>(run);
    check_run.inputs = generate_inputs(seed, attempt);
    auto expected = session.value()->run(check_run.inputs);
    while (!expected && run == 0 && expected.error_kind() != ErrorKind::kResourceLimit &&
           attempt + 1 < dims.tries()) {
      check_run.inputs = generate_inputs(seed, ++attempt);
      expected = session.value()->run(check_run.inputs);
    }
    if (!expected) {
      if (dims.dims().empty()) {
        fail("the input model failed on the check inputs: {}", expected.error());
      }
      std::string tried = attempt == 0 ? dims.describe_try(0)
                                       : fmt::format("{} tries, the last {}", attempt + 1,
                                                     dims.describe_try(attempt));
      fail(
          "the input model failed on the check inputs ({}): {}\nthe dynamic input dims, what "
          "they feed and the sizes to try:{}\n{}",
          tried, expected.error(), dims.explain(), kDimOptions);
    }
    check_run.expected = std::move(expected.value());
    runs.push_back(std::move(check_run));
  }
  report.check_dims = dims.describe_try(attempt);
  if (!runs.empty()) measure_precision_floor(model, options, registry, runs);
  return runs;
}

// How many check runs to make: check_n, or for kCheckAuto one when the estimated cost of
// the two runs (the input model's and the result's, taken as twice the result's) fits the
// budget, none otherwise (report.check_skipped says why and how to force it).
int checks_to_run(const Model& simplified, const std::map<std::string, Shape>& input_shapes,
                  const OpRegistry& registry, const SimplifyOptions& options,
                  SimplifyReport& report) {
  if (options.check_n != SimplifyOptions::kCheckAuto) return options.check_n;
  const RunCostEstimate estimate = estimate_run_cost(simplified, input_shapes, registry);
  report.check_cost_estimate = estimate.units();
  const uint64_t two_runs = estimate.units() > UINT64_MAX / 2 ? UINT64_MAX : 2 * estimate.units();
  if (two_runs <= options.check_auto_budget) return 1;
  report.check_skipped = fmt::format(
      "check skipped: its two runs would cost about {:.2g}G multiply-adds and elements written, "
      "over the {:.2g}G of --check-n auto; --check-n 1 runs it",
      static_cast<double>(two_runs) / 1e9, static_cast<double>(options.check_auto_budget) / 1e9);
  return 0;
}

void collect_mappings(const Graph& graph, std::set<const FileMapping*>& mappings) {
  for (const Value* value : graph.initializers()) {
    if (const FileRegion* region = value->initializer().file_region()) {
      mappings.insert(region->file.get());
    }
  }
  for (const Node* node : graph.nodes()) {
    for (const Graph* sub : node->subgraphs()) collect_mappings(*sub, mappings);
  }
}

// Drops the pages of the model's mapped weights that a run touched: the passes touch only
// what they fold, and the simplified model's check faults back in only what it keeps.
void release_weight_pages(const Model& model) {
  std::set<const FileMapping*> mappings;
  collect_mappings(model.graph(), mappings);
  for (const FileMapping* mapping : mappings) mapping->release_pages();
}

// Runs the simplified model on the recorded inputs; fills per-output errors. Returns false
// on a mismatch.
bool check_simplified(const std::vector<CheckRun>& runs, const Model& simplified,
                      const OpRegistry& registry, const SimplifyOptions& options,
                      SimplifyReport& report) {
  auto session = Session::create(clone_model(simplified), check_session_options(options, registry));
  if (!session) {
    report.check_ok = false;
    report.check_message = "the simplified model cannot run: " + session.error();
    return false;
  }
  report.checks.clear();
  for (const Value* output : simplified.graph().outputs()) {
    OutputCheck check;
    check.name = output->name();
    report.checks.push_back(check);
  }
  std::set<std::string> input_names;
  for (const Value* input : simplified.graph().inputs()) input_names.insert(input->name());
  for (const CheckRun& run : runs) {
    NamedValues inputs;
    for (const auto& [name, value] : run.inputs) {
      if (input_names.count(name)) inputs.emplace_back(name, value);
    }
    auto actual = session.value()->run(inputs);
    if (!actual) {
      report.check_ok = false;
      report.check_message = "the simplified model failed: " + actual.error();
      return false;
    }
    ++report.checks_run;
    // By name, once per run: a scan of the expected values per output was quadratic in a
    // model's outputs (100,000 of them took minutes). The last of a repeated name counts.
    std::unordered_map<std::string_view, const RuntimeValue*> expected;
    for (const auto& [name, value] : run.expected) expected.insert_or_assign(name, &value);
    for (size_t i = 0; i < report.checks.size(); ++i) {
      OutputCheck& check = report.checks[i];
      const auto found = expected.find(check.name);
      if (found == expected.end()) continue;
      const RuntimeValue* want = found->second;
      auto floor = run.precision_floor.find(check.name);
      const double precision_floor = floor == run.precision_floor.end() ? 0.0 : floor->second;
      check.precision_floor = std::max(check.precision_floor, precision_floor);
      Comparison c = compare_values(
          actual.value()[i].second, *want,
          Tolerance{options.check_rtol, options.check_atol + 2 * precision_floor, true});
      check.max_abs_error = std::max(check.max_abs_error, c.max_abs_error);
      check.max_rel_error = std::max(check.max_rel_error, c.max_rel_error);
      if (!c.ok && check.ok) {
        check.ok = false;
        check.message = c.message;
      }
    }
  }
  for (const OutputCheck& check : report.checks) {
    if (!check.ok) {
      report.check_ok = false;
      report.check_message =
          fmt::format("output '{}' differs: {} (max abs error {:.3g}, max relative error {:.3g})",
                      check.name, check.message, check.max_abs_error, check.max_rel_error);
      return false;
    }
  }
  return true;
}

void apply_input_shapes(Model& model, const SimplifyOptions& options) {
  for (const auto& [name, dims] : options.input_shapes) {
    Value* input = nullptr;
    for (Value* v : model.graph().inputs()) {
      if (v->name() == name) input = v;
    }
    if (!input) {
      std::string known;
      for (const Value* v : model.graph().inputs()) {
        if (!v->has_initializer()) known += (known.empty() ? "" : ", ") + v->name();
      }
      fail("--overwrite-input-shape names '{}', which is not an input (inputs: {})", name, known);
    }
    ValueType type = input->type();
    if (type.kind != ValueType::Kind::kTensor) fail("input '{}' is not a tensor", name);
    if (type.shape && type.shape->size() != dims.size()) {
      fail("input '{}' has rank {}, --overwrite-input-shape gives {} dims", name,
           type.shape->size(), dims.size());
    }
    type.shape = dims;
    input->set_type(std::move(type));
  }
  // Intermediate shapes inferred under the old input shapes are stale now.
  for (Value* value : model.graph().value_info()) {
    ValueType type = value->type();
    if (type.kind == ValueType::Kind::kTensor) type.shape.reset();
    value->set_type(type);
  }
}

void remove_outputs(Model& model, const std::vector<std::string>& names) {
  Graph& graph = model.graph();
  for (const std::string& name : names) {
    bool found = false;
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      if (graph.outputs()[i]->name() == name) {
        graph.remove_output(i);
        found = true;
        break;
      }
    }
    if (!found) fail("--unused-output names '{}', which is not an output of the model", name);
  }
  if (graph.outputs().empty()) fail("--unused-output would remove every output of the model");
}

// The input model again, with the outputs the user dropped gone and the input shapes set.
Model reload_input(const SimplifyOptions& options) {
  Model model = options.reload().value();
  if (!options.unused_outputs.empty()) remove_outputs(model, options.unused_outputs);
  if (!options.input_shapes.empty()) apply_input_shapes(model, options);
  return model;
}

PipelineOptions pipeline_options(const SimplifyOptions& options) {
  PipelineOptions pipeline;
  pipeline.skip = options.skip_passes;
  if (options.skip_fuse_bn) {
    pipeline.skip.insert("fuse_conv_bn");
    pipeline.skip.insert("fuse_convtranspose_bn");
  }
  if (options.skip_constant_folding) {
    pipeline.skip.insert("constant_folding");
    pipeline.skip.insert("shape_folding");
  }
  pipeline.include_subgraphs = options.include_subgraphs;
  pipeline.shape_inference = !options.skip_shape_inference;
  if (options.progress) {
    pipeline.on_change = [&](std::string_view pass, size_t) { options.progress(pass); };
  }
  return pipeline;
}

// Nodes left whose inputs are all constants or shapes: why they were not folded.
void explain_leftovers(const Graph& graph, const PassContext& context, SimplifyReport& report) {
  for (const Node* node : graph.nodes()) {
    for (const Graph* sub : node->subgraphs()) explain_leftovers(*sub, context, report);
    if (node->inputs().empty()) continue;
    bool constant_like = true;
    for (const Value* input : node->inputs()) {
      if (!input) continue;
      bool is_constant = input->has_initializer() && !input->graph()->is_input(input);
      bool is_shape = input->producer() && (input->producer()->op_type() == "Shape" ||
                                            input->producer()->op_type() == "Size");
      if (!is_constant && !is_shape) constant_like = false;
    }
    if (!constant_like && node->op_type() != "Shape" && node->op_type() != "Size") continue;
    std::string key = node->output(0) ? node->output(0)->name() : std::string();
    auto it = context.not_folded.find(key);
    std::string reason;
    if (it != context.not_folded.end()) {
      reason = it->second;
    } else if (node->op_type() == "Shape" || node->op_type() == "Size") {
      const Value* x = node->input(0);
      std::string dynamic;
      if (x && x->type().shape) {
        for (const Dim& d : *x->type().shape) {
          if (!d.is_known())
            dynamic += (dynamic.empty() ? "" : ", ") + (d.param.empty() ? "?" : d.param);
        }
      }
      reason = x && !x->type().shape
                   ? "the rank of '" + x->name() + "' is unknown"
                   : "reads dynamic dims [" + dynamic + "] of '" + (x ? x->name() : "?") + "'";
    } else {
      reason = "depends on a dynamic shape";
    }
    report.explain.emplace_back(node->describe(), reason);
  }
}

}  // namespace

ModelCounts count_model(const Model& model) {
  ModelCounts counts;
  count_graph(model.graph(), counts);
  return counts;
}

NamedValues make_check_inputs(const Model& model, const std::map<std::string, int64_t>& dims,
                              const std::map<std::string, Tensor>& given, uint64_t seed) {
  return make_check_inputs(model, CheckDims(model, dims, {}, given), given, seed, 0);
}

Result<SimplifyReport> simplify(Model& model, const SimplifyOptions& options) {
  return capture([&] {
    SimplifyReport report;
    report.before = count_model(model);
    // The built-in ops, and those of the custom op libraries (shared, not owned, when none).
    std::shared_ptr<const OpRegistry> registry(std::shared_ptr<const OpRegistry>(),
                                               &builtin_registry());
    if (!options.custom_op_libraries.empty()) {
      registry = registry_with_custom_ops(builtin_registry(), options.custom_op_libraries);
    }
    auto progress = [&](std::string_view phase) {
      if (options.progress) options.progress(phase);
    };
    if (options.check_n < SimplifyOptions::kCheckAuto) {
      fail("check_n must be 0 or more, or kCheckAuto; not {}", options.check_n);
    }
    if (!options.unused_outputs.empty()) remove_outputs(model, options.unused_outputs);
    if (!options.input_shapes.empty()) apply_input_shapes(model, options);
    // The check compares with the model as given, after the outputs the user dropped are
    // gone and --overwrite-input-shape fixed the dims of the inputs. A count of checks runs
    // the input model now, before the passes, so that its weights and the result's are not
    // resident together. kCheckAuto weighs the simplified graph (the passes infer its shapes)
    // and then runs the input model: it comes back through `reload` when there is one;
    // otherwise a copy (sharing the weights, copy-on-write) waits beside the passes.
    std::vector<CheckRun> check_runs;
    // A node of a custom domain that no registry defines (its op library not loaded) cannot
    // run: the model is simplified around it, unchecked, as onnxsim cannot check it either.
    const bool may_check =
        options.check_n != 0 && !skip_check_for_custom_ops(model, *registry, report);
    std::optional<Model> input_model;
    std::optional<CheckDims> check_dims;
    std::map<std::string, Shape> check_shapes;  // the first try's input shapes
    if (may_check) {
      check_dims.emplace(model, options.check_dims, options.test_input_shapes,
                         options.check_inputs);
      for (const Value* input : model.graph().inputs()) {
        if (input->has_initializer() || !input->type().shape) continue;
        check_shapes[input->name()] = check_dims->shape_of(*input, 0);
      }
      if (options.check_n > 0) {
        progress("running the input model");
        auto check_start = Clock::now();
        check_runs =
            run_input_model(model, *check_dims, options.check_n, options, *registry, report);
        release_weight_pages(model);
        report.seconds_check = seconds_since(check_start);
      } else if (!options.reload) {
        input_model = clone_model(model);
      }
    }
    if (options.target_opset > 0) {
      progress("converting opset");
      auto start = Clock::now();
      convert_opset(model, options.target_opset).throw_if_error();
      report.seconds_convert = seconds_since(start);
    }
    check_opsets_supported(model).throw_if_error();

    PassContext context;
    context.registry = registry.get();
    context.tensor_size_threshold = options.tensor_size_threshold;
    context.mutable_initializers = options.mutable_initializers;
    auto passes = basic_passes();
    PipelineOptions pipeline = pipeline_options(options);
    if (options.skip_all_optimization) {
      passes.clear();
    }
    auto start = Clock::now();
    progress("optimizing");
    report.pipeline = run_pipeline(model, passes, context, pipeline).value();
    report.seconds_passes = seconds_since(start);
    if (!report.pipeline.shape_inference_warning.empty()) {
      report.warnings.push_back("ONNX shape inference: " + report.pipeline.shape_inference_warning);
    }
    if (!report.pipeline.type_inference_note.empty()) {
      report.notes.push_back("type inference: " + report.pipeline.type_inference_note);
    }
    Status verified = verify_model(model);
    if (!verified.ok()) fail("internal: the simplified graph is invalid: {}", verified.message());
    report.after = count_model(model);
    if (options.explain) explain_leftovers(model.graph(), context, report);

    auto check_start = Clock::now();
    const int check_n =
        may_check ? checks_to_run(model, check_shapes, *registry, options, report) : 0;
    if (check_n > 0) {
      if (check_runs.empty()) {  // kCheckAuto
        progress("running the input model");
        if (!input_model) input_model = reload_input(options);
        check_runs =
            run_input_model(*input_model, *check_dims, check_n, options, *registry, report);
        input_model.reset();
        release_weight_pages(model);
      }
      progress("checking");
      bool ok = check_simplified(check_runs, model, *registry, options, report);
      if (!ok && options.bisect && options.reload) {
        progress("bisecting");
        size_t low = 0, high = report.pipeline.applications;  // high fails, find first failing
        std::vector<std::string> applied;
        while (low + 1 < high || (low == 0 && high == 1 && applied.empty())) {
          size_t mid = (low + high) / 2;
          if (mid == low) mid = low + 1;
          Model trial = reload_input(options);
          PassContext trial_context = context;
          trial_context.not_folded.clear();
          auto trial_passes = basic_passes();
          PipelineOptions limited = pipeline_options(options);
          std::vector<std::string> names;
          limited.on_change = [&](std::string_view pass, size_t) { names.emplace_back(pass); };
          limited.max_applications = mid;
          run_pipeline(trial, trial_passes, trial_context, limited).value();
          SimplifyReport scratch;
          bool trial_ok = check_simplified(check_runs, trial, *registry, options, scratch);
          if (trial_ok) {
            low = mid;
          } else {
            high = mid;
            applied = names;
          }
          if (high - low <= 1) break;
        }
        report.bisect_application = high;
        if (!applied.empty() && applied.size() >= high) report.bisect_pass = applied[high - 1];
      }
    }
    report.seconds_check += seconds_since(check_start);
    return report;
  });
}

}  // namespace onnxkit

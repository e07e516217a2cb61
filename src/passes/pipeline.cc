#include "passes/pipeline.h"

#include <chrono>

#include "onnx/onnx_checks.h"
#include "passes/passes.h"

namespace onnxkit {

// Why this order: Constants become initializers first so every later pass sees one kind of
// constant; leftovers (Identity, Dropout, no-op ops) go before folding so chains connect;
// folding and shape folding turn shape arithmetic into constants, which the fusions and
// merges need (BatchNorm parameters, Reshape targets); If with a constant condition can
// only be inlined after folding; CSE and dedup run late when most duplicates are visible;
// dead code and unused initializers are cleaned last. The driver repeats the list until a
// round changes nothing.
std::vector<std::unique_ptr<GraphPass>> basic_passes() {
  std::vector<std::unique_ptr<GraphPass>> passes;
  passes.push_back(make_constant_to_initializer_pass());
  passes.push_back(make_eliminate_identity_pass());
  passes.push_back(make_eliminate_noop_pass());
  passes.push_back(make_constant_folding_pass());
  passes.push_back(make_shape_folding_pass());
  passes.push_back(make_inline_constant_if_pass());
  passes.push_back(make_fuse_pad_into_conv_pass());
  passes.push_back(make_fuse_conv_bn_pass());
  passes.push_back(make_fuse_convtranspose_bn_pass());
  passes.push_back(make_fuse_conv_mul_pass());
  passes.push_back(make_fuse_conv_add_pass());
  passes.push_back(make_fuse_matmul_add_into_gemm_pass());
  passes.push_back(make_fuse_transpose_into_gemm_pass());
  passes.push_back(make_merge_transposes_pass());
  passes.push_back(make_merge_reshapes_pass());
  passes.push_back(make_merge_squeeze_unsqueeze_pass());
  passes.push_back(make_merge_slices_pass());
  passes.push_back(make_merge_concats_pass());
  passes.push_back(make_common_subexpression_elimination_pass());
  passes.push_back(make_dedup_initializers_pass());
  passes.push_back(make_dead_code_elimination_pass());
  passes.push_back(make_remove_unused_initializers_pass());
  return passes;
}

std::vector<std::string> basic_pass_names() {
  std::vector<std::string> names;
  for (const auto& pass : basic_passes()) names.emplace_back(pass->name());
  return names;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs `pass` on `graph` and, when asked, on every subgraph below it.
size_t run_on_graph(GraphPass& pass, Graph& graph, PassContext& context, bool subgraphs) {
  size_t changes = pass.run(graph, context);
  if (subgraphs) {
    for (Node* node : graph.nodes()) {
      for (Graph* sub : node->subgraphs()) changes += run_on_graph(pass, *sub, context, true);
    }
  }
  return changes;
}

}  // namespace

Result<PipelineResult> run_pipeline(Model& model, std::vector<std::unique_ptr<GraphPass>>& passes,
                                    PassContext& context, const PipelineOptions& options) {
  return capture([&] {
    context.model = &model;
    PipelineResult result;
    for (const auto& pass : passes) result.passes.push_back({std::string(pass->name())});
    for (int round = 0; round < options.max_rounds; ++round) {
      ++result.rounds;
      if (options.shape_inference) {
        auto start = Clock::now();
        Status inferred = infer_shapes(model);
        if (!inferred.ok() && result.shape_inference_warning.empty()) {
          result.shape_inference_warning = inferred.message();
        }
        result.shape_inference_seconds += seconds_since(start);
      }
      size_t round_changes = 0;
      for (size_t i = 0; i < passes.size(); ++i) {
        GraphPass& pass = *passes[i];
        if (options.skip.count(std::string(pass.name()))) continue;
        if (result.applications >= options.max_applications) return result;
        auto start = Clock::now();
        size_t changes = 0;
        try {
          changes = run_on_graph(pass, model.graph(), context, options.include_subgraphs);
        } catch (const Error& e) {
          fail("pass {}: {}", pass.name(), e.what());
        }
        result.passes[i].seconds += seconds_since(start);
        if (changes == 0) continue;
        ++result.passes[i].applications;
        result.passes[i].changes += changes;
        ++result.applications;
        round_changes += changes;
        if (options.on_change) options.on_change(pass.name(), changes);
      }
      if (round_changes == 0) {
        result.converged = true;
        break;
      }
    }
    model.graph().sort_topologically();
    return result;
  });
}

}  // namespace onnxkit

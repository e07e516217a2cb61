#include "passes/pipeline.h"

#include <chrono>

#include "core/enum_names.h"
#include "onnx/onnx_checks.h"
#include "passes/infer_types.h"
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
  passes.push_back(make_fuse_reshape_gemm_into_matmul_pass());
  passes.push_back(make_fuse_matmul_add_into_gemm_pass());
  passes.push_back(make_fuse_transpose_into_gemm_pass());
  passes.push_back(make_max_min_into_clip_pass());
  passes.push_back(make_cancel_transposes_pass());
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

// Why this order: 16-bit float regions turn float32 first, so the fusions and the fast
// kernels, which are float32, see them. Then the transformer fusions: LayerNormalization is
// recognised before SkipLayerNormalization is built on it; BiasSoftmax before Attention, which
// takes a BiasSoftmax's bias as its mask. Attention renames the symbols of its output's dims
// (GPT-2's Where makes fresh ones), so the next round's skip_layer_norm can see equal
// shapes on the residual Add. The linear fusions come after them: attention reads the
// plain MatMul / Transpose / Div it is made of, and Gelu must exist before it can join a
// FusedMatMul or FusedConv. fuse_transpose_into_matmul goes first of those, so a scale
// after the product becomes alpha before an activation is fused (a scale after an
// activation cannot). The int8 fusions touch none of those ops and come first.
std::vector<std::unique_ptr<GraphPass>> extended_passes() {
  std::vector<std::unique_ptr<GraphPass>> passes;
  passes.push_back(make_compute_fp16_in_fp32_pass());
  passes.push_back(make_fuse_integer_to_float_pass());
  passes.push_back(make_fuse_qdq_into_qlinear_pass());
  passes.push_back(make_fuse_qdq_into_qlinear_elementwise_pass());
  passes.push_back(make_fuse_qdq_into_int8_maxpool_pass());
  passes.push_back(make_fuse_layer_norm_pass());
  passes.push_back(make_fuse_gelu_pass());
  passes.push_back(make_fuse_skip_layer_norm_pass());
  passes.push_back(make_fuse_bias_softmax_pass());
  passes.push_back(make_fuse_attention_pass());
  passes.push_back(make_fuse_transpose_into_attention_pass());
  passes.push_back(make_fuse_transpose_into_matmul_pass());
  passes.push_back(make_fuse_matmul_bias_activation_pass());
  passes.push_back(make_fuse_conv_activation_pass());
  return passes;
}

std::vector<std::unique_ptr<GraphPass>> layout_passes() {
  std::vector<std::unique_ptr<GraphPass>> passes;
  passes.push_back(make_int8_channels_last_pass());
  passes.push_back(make_convert_layout_pass());
  return passes;
}

std::vector<std::unique_ptr<GraphPass>> runtime_passes() {
  std::vector<std::unique_ptr<GraphPass>> passes;
  return passes;
}

std::vector<std::vector<std::unique_ptr<GraphPass>>> pass_lists_for_level(OptimizationLevel level) {
  std::vector<std::vector<std::unique_ptr<GraphPass>>> lists;
  if (level >= OptimizationLevel::kBasic) lists.push_back(basic_passes());
  if (level >= OptimizationLevel::kExtended) lists.push_back(extended_passes());
  if (level >= OptimizationLevel::kLayout) lists.push_back(layout_passes());
  if (level >= OptimizationLevel::kAll) lists.push_back(runtime_passes());
  return lists;
}

namespace {

constexpr EnumName<OptimizationLevel> kLevelNames[] = {{OptimizationLevel::kNone, "none"},
                                                       {OptimizationLevel::kBasic, "basic"},
                                                       {OptimizationLevel::kExtended, "extended"},
                                                       {OptimizationLevel::kLayout, "layout"},
                                                       {OptimizationLevel::kAll, "all"}};

}  // namespace

std::string_view optimization_level_name(OptimizationLevel level) {
  return enum_name<OptimizationLevel>(kLevelNames, level);
}

std::optional<OptimizationLevel> parse_optimization_level(std::string_view name) {
  return enum_from_name<OptimizationLevel>(kLevelNames, name);
}

std::vector<std::string> all_pass_names() {
  std::vector<std::string> names;
  for (const auto& list : pass_lists_for_level(OptimizationLevel::kAll)) {
    for (const auto& pass : list) names.emplace_back(pass->name());
  }
  return names;
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
    auto infer = [&] {
      auto start = Clock::now();
      Result<TypeInferenceReport> inferred = infer_types(model, context.ops());
      if (!inferred.ok()) {
        if (result.shape_inference_warning.empty()) {
          result.shape_inference_warning = inferred.error();
        }
      } else {
        const TypeInferenceReport& report = inferred.value();
        if (!report.warnings.empty() && result.shape_inference_warning.empty()) {
          result.shape_inference_warning = report.warnings.front();
        }
        result.type_inference_note =
            report.by_rule == 0 && report.unknown == 0
                ? std::string()
                : fmt::format(
                      "{} node(s) typed by libonnx {} (ai.onnx opsets up to {}), {} by onnxkit's "
                      "op rules, {} left untyped",
                      report.by_libonnx, libonnx_version(), max_known_opset(""), report.by_rule,
                      report.unknown);
      }
      result.shape_inference_seconds += seconds_since(start);
    };
    if (options.shape_inference) context.refresh_shapes = infer;
    for (const auto& pass : passes) result.passes.push_back({std::string(pass->name())});
    for (int round = 0; round < options.max_rounds; ++round) {
      ++result.rounds;
      if (options.shape_inference) infer();
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
    context.refresh_shapes = nullptr;
    model.graph().sort_topologically();
    return result;
  });
}

}  // namespace onnxkit

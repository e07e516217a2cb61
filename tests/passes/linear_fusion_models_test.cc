// End to end: the small PyTorch exports in tests/data/models at level extended on the
// reference kernels: their stored outputs still match, and the linear fusions happened.
#include <filesystem>

#include "linear_fusion_test_util.h"
#include "runtime/conformance.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;

const fs::path kModels = fs::path(ONNXKIT_SOURCE_DIR) / "tests/data/models";

SessionOptions extended_reference() {
  SessionOptions options;
  options.level = OptimizationLevel::kExtended;
  options.kernels = KernelTier::kReference;
  options.intra_op_threads = 1;
  return options;
}

// Op type -> count in the session's optimized graph.
std::map<std::string, size_t> op_counts(const std::string& name) {
  auto session = Session::load(kModels / name / "model.onnx", extended_reference());
  EXPECT_TRUE(session) << session.error();
  std::map<std::string, size_t> counts;
  if (!session) return counts;
  for (const Node* node : session.value()->model().graph().nodes()) ++counts[node->op_type()];
  return counts;
}

TEST(LinearFusionModels, StoredOutputsStillMatch) {
  for (const ConformanceCase& test_case : find_conformance_cases({kModels})) {
    CaseResult result =
        run_conformance_case(test_case, extended_reference(), Tolerance{1e-3, 1e-7});
    EXPECT_TRUE(result.passed) << test_case.name << ": " << result.message;
  }
}

TEST(LinearFusionModels, ConvNetConvsCarryTheirActivations) {
  auto counts = op_counts("convnet_bn_tiny");
  EXPECT_EQ(counts["FusedConv"], 6u);
  EXPECT_EQ(counts["Conv"], 1u);  // its output is read twice
  EXPECT_EQ(counts["Relu"] + counts["Clip"] + counts["Sigmoid"], 0u);
  EXPECT_EQ(counts["Gemm"], 0u);
  EXPECT_EQ(counts["FusedMatMul"], 1u);
}

TEST(LinearFusionModels, TransformersUseFusedMatMul) {
  for (std::string name : {"bert_tiny", "vit_tiny", "gpt2_tiny"}) {
    SCOPED_TRACE(name);
    auto counts = op_counts(name);
    EXPECT_GE(counts["FusedMatMul"], 4u);
    EXPECT_EQ(counts["Gemm"], 0u);
  }
}

}  // namespace
}  // namespace onnxkit

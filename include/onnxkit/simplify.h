// onnxkit::simplify: shape inference, constant and shape folding, cleanups and fusions
// (the basic pass pipeline), then a check that the result computes what the input did.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxkit/model.h"
#include "onnxkit/optimization.h"
#include "onnxkit/session.h"
#include "onnxkit/status.h"
#include "onnxkit/tensor.h"
#include "onnxkit/value_info.h"

namespace onnxkit {

// What simplify does; the defaults are onnxsim's (the fields follow its flags).
struct SimplifyOptions {
  // --overwrite-input-shape NAME:D0,D1,...: dims are numbers or symbol names.
  std::map<std::string, std::vector<Dim>> input_shapes;
  bool skip_all_optimization = false;  // --skip-optimization (no names)
  std::set<std::string> skip_passes;   // --skip-optimization PASS ...
  bool skip_fuse_bn = false;
  bool skip_constant_folding = false;
  bool skip_shape_inference = false;
  uint64_t tensor_size_threshold = uint64_t{1536} << 20;
  std::vector<std::string> unused_outputs;  // graph outputs to drop
  bool mutable_initializers = false;
  bool include_subgraphs = true;
  int64_t target_opset = -1;  // -1: keep the model's opset
  // --custom-op-lib PATH: custom op libraries (include/onnxkit/custom_op.h) whose ops the
  // passes and the check evaluate. Nodes of ops no library defines stay as they are.
  std::vector<std::string> custom_op_libraries;

  // Equivalence check: check_n runs with generated (or given) inputs; 0 disables it.
  // kCheckAuto (the default): one run when its cost, estimated from the simplified graph's
  // static shapes at the check's sizes, is at most check_auto_budget; none otherwise, and
  // SimplifyReport::check_skipped says why (a check runs both models, so on a big model it
  // costs more than simplifying; onnxsim checks nothing unless asked).
  // Dynamic dims the options below leave open get sizes from evidence: 1 for a batch,
  // sizes that survive downsampling for a dim reaching Conv / pool / Resize spatial axes
  // (224, 256, 320, ... tried in turn while the model fails for a shape reason), moderate
  // lengths for sequences; one value per symbol across all inputs.
  static constexpr int kCheckAuto = -1;
  int check_n = kCheckAuto;
  // kCheckAuto's budget for the check's two runs, in estimate units (multiply-adds plus
  // elements written: simplify/check_cost.h). 200M units are about 45 ms of CPU at the rate
  // measured on MobileNetV2's check (depthwise convolutions, the slowest per unit of the
  // model set): a twentieth of the ~1 s onnxsim takes on the smallest model.
  uint64_t check_auto_budget = 200'000'000;
  double check_rtol = 1e-4;
  double check_atol = 1e-5;
  std::map<std::string, Tensor> check_inputs;  // --input NAME=FILE
  std::map<std::string, int64_t> check_dims;   // --dim NAME=V: values for symbolic dims
  // --test-input-shape NAME:D0,D1,...: an input's shape in checks; the model keeps its dims.
  std::map<std::string, std::vector<int64_t>> test_input_shapes;
  // Both models run as given (no session rewrites) on these kernels.
  KernelTier check_kernels = KernelTier::kOptimized;
  // Resource bounds of the check's runs (SessionOptions' fields of the same names).
  size_t max_tensor_bytes = 0;
  size_t max_run_bytes = 0;
  int64_t max_loop_iterations = SessionOptions{}.max_loop_iterations;
  uint64_t seed = 0;
  // On a failed check, find the first pass application that broke it. Needs a fresh
  // copy of the input model for every try.
  bool bisect = false;
  // A fresh copy of the input model (as loaded): bisect's tries, and the check's run of the
  // input model, which otherwise keeps a copy beside the passes. Optional.
  std::function<Result<Model>()> reload;

  bool explain = false;
  std::function<void(std::string_view phase)> progress;  // called as phases/passes run
};

// How one output compared in the equivalence check.
struct OutputCheck {
  std::string name;
  double max_abs_error = 0;
  double max_rel_error = 0;
  // A float16 / bfloat16 output: how far the input model's own 16-bit computation is from
  // the same graph computed in float32 (max abs). Folding rounds constants to 16 bits, which
  // moves outputs by this much; the check allows twice it on top of its tolerance.
  double precision_floor = 0;
  bool ok = true;
  std::string message;
};

// Size of a model: ops, nodes, initializers, parameters.
struct ModelCounts {
  std::map<std::string, size_t> ops;  // op histogram over all graphs
  size_t nodes = 0;                   // including subgraph nodes
  size_t initializers = 0;
  uint64_t parameters = 0;
  uint64_t tensor_bytes = 0;
};

// Counts `model` (subgraphs included).
ModelCounts count_model(const Model& model);

// What simplify did: sizes before and after, per-pass work, timings, the check's result.
struct SimplifyReport {
  ModelCounts before;
  ModelCounts after;
  PipelineResult pipeline;
  double seconds_convert = 0;
  double seconds_passes = 0;
  double seconds_check = 0;
  int checks_run = 0;
  // The estimated cost of one run of the simplified model at the check's sizes (multiply-adds
  // plus elements written; 0 when check_n was not kCheckAuto).
  uint64_t check_cost_estimate = 0;
  // kCheckAuto over its budget: why the check did not run (empty when it ran or was off).
  std::string check_skipped;
  std::string check_dims;  // the sizes the check gave dynamic input dims: "N=1, H=224, W=224"
  bool check_ok = true;
  std::vector<OutputCheck> checks;  // worst per output over all runs
  std::string check_message;        // why the check failed (which output, by how much)
  std::string bisect_pass;          // the pass application that first broke the check
  size_t bisect_application = 0;
  std::vector<std::pair<std::string, std::string>> explain;  // node, why it was not folded
  std::vector<std::string> warnings;
  // What the result rests on that is no fault: nodes of opsets newer than libonnx knows
  // (typed by onnxkit's op rules, not checked by libonnx).
  std::vector<std::string> notes;
};

// Simplifies `model` in place. An error means the model could not be processed; a failed
// equivalence check is reported in the report (check_ok false), not as an error.
Result<SimplifyReport> simplify(Model& model, const SimplifyOptions& options);

// Inputs for checks: floats normal(0,1); integers that feed Gather-like indices get ids in
// range of the table; masks get 0/1; other integers [0, 10). Symbolic dims from `dims`, the
// others sized from evidence as SimplifyOptions says (the first size of each).
NamedValues make_check_inputs(const Model& model, const std::map<std::string, int64_t>& dims,
                              const std::map<std::string, Tensor>& given, uint64_t seed);

}  // namespace onnxkit

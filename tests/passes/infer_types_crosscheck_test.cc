// The op definitions' type inference rules against libonnx 1.12's inference: every model of
// ONNX 1.12's backend node suite and the bench model set (when present) is inferred twice,
// by libonnx (onnx_checks.h infer_shapes) and by the rules alone (infer_types with
// use_libonnx = false), from the graph inputs and initializers only (the node outputs'
// declared types are dropped first). Every value both know is compared: dtype, rank, dims
// both know, dims both name. The node suite's declared outputs are the true types: the rules
// are compared against them too. A disagreement is a bug in a rule unless
// infer_types_crosscheck_allow.txt lists it with the reason libonnx is the one that is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ir/model.h"
#include "onnx/onnx_checks.h"
#include "onnx/tensor_io.h"
#include "onnxkit/model_io.h"
#include "passes/infer_types.h"
#include "registry/builtin_registry.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;

bool is_unknown_symbol(const Dim& dim) {
  return !dim.is_known() && (dim.param.empty() || dim.param.starts_with("unk__"));
}

// Where `a` and `b`, two inferences of one value, contradict each other ("" when they
// agree wherever both know). With `b_names_mean_nothing`, b's named dims count as unknown (a
// declared output's names are placeholders, not facts another inference must repeat).
std::string contradiction(const ValueType& a, const ValueType& b,
                          bool b_names_mean_nothing = false) {
  if (a.kind == ValueType::Kind::kNone || b.kind == ValueType::Kind::kNone) return {};
  if (a.kind != b.kind) return "kinds differ";
  if (a.kind == ValueType::Kind::kSequence || a.kind == ValueType::Kind::kOptional) {
    if (!a.has_element() || !b.has_element()) return {};
    return contradiction(a.element_type(), b.element_type(), b_names_mean_nothing);
  }
  if (a.kind != ValueType::Kind::kTensor) return {};
  if (a.elem_type != DType::kUndefined && b.elem_type != DType::kUndefined &&
      a.elem_type != b.elem_type) {
    return "dtypes differ";
  }
  if (!a.shape || !b.shape) return {};
  if (a.shape->size() != b.shape->size()) return "ranks differ";
  for (size_t d = 0; d < a.shape->size(); ++d) {
    const Dim& x = (*a.shape)[d];
    const Dim& y = (*b.shape)[d];
    if (is_unknown_symbol(x) || is_unknown_symbol(y)) continue;
    if (b_names_mean_nothing && !y.is_known()) continue;
    if (x.is_known() != y.is_known() || x.value != y.value ||
        (!x.is_known() && x.param != y.param)) {
      return "dim " + std::to_string(d) + " differs";
    }
  }
  return {};
}

// Whether `type` tells anything (a dtype or a shape).
bool knows_something(const ValueType& type) {
  return type.kind != ValueType::Kind::kNone && (type.kind != ValueType::Kind::kTensor ||
                                                 type.elem_type != DType::kUndefined || type.shape);
}

// "model value" (value "*": every value of the model) -> reason.
std::map<std::string, std::string> read_allow_list() {
  std::map<std::string, std::string> allowed;
  std::ifstream in(fs::path(ONNXKIT_SOURCE_DIR) / "tests/passes/infer_types_crosscheck_allow.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t hash = line.find('#');
    std::istringstream fields(line.substr(0, hash));
    std::string model, value;
    fields >> model >> value;
    if (!model.empty())
      allowed[model + " " + value] = hash == std::string::npos ? "" : line.substr(hash + 1);
  }
  return allowed;
}

struct Tally {
  size_t models = 0, skipped = 0;
  size_t values = 0;     // node outputs of the main graphs
  size_t both_know = 0;  // ... both inferences say something about
  size_t agree = 0;      // ... without contradicting each other
  size_t only_rules = 0, only_libonnx = 0, neither = 0;
  size_t declared = 0, declared_agree = 0;  // the rules against the suite's declared outputs
  std::vector<std::string> disagreements;   // not allow-listed
  std::vector<std::string> rule_failures;   // the engine's warnings: a rule that failed
  std::set<std::string> allowed_seen;
};

// The node outputs of a model's main graph, by name.
std::map<std::string, const Value*> node_outputs(const Model& model) {
  std::map<std::string, const Value*> values;
  for (const Node* node : model.graph().nodes()) {
    for (const Value* value : node->outputs()) {
      if (value) values[value->name()] = value;
    }
  }
  return values;
}

void forget_node_output_types(Model& model) {
  for (const Node* node : model.graph().nodes()) {
    for (Value* value : node->outputs()) {
      if (value) value->set_type(ValueType{});
    }
  }
}

// Makes the small inputs of a backend case constants with their test values: the integer
// ones (shapes, axes, pads, sizes, k, ...) and float ones of at most 16 elements and rank <= 1
// (scales, roi, Range's bounds), so the rules' reading of constant inputs is compared too.
// Returns false when the case has none.
bool make_inputs_constant(Model& model, const fs::path& case_dir) {
  Graph& graph = model.graph();
  bool any = false;
  const std::vector<Value*> inputs = graph.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const fs::path file = case_dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(file)) continue;
    Result<Tensor> tensor = read_tensor_pb(file);
    if (!tensor.ok()) continue;
    const Tensor& value = tensor.value();
    const bool integer = value.dtype() == DType::kInt64 || value.dtype() == DType::kInt32;
    const bool small_float = (value.dtype() == DType::kFloat || value.dtype() == DType::kDouble) &&
                             value.rank() <= 1 && value.numel() <= 16;
    if (!integer && !small_float) continue;
    if (graph.is_output(inputs[i])) continue;
    Value* constant = graph.add_initializer(inputs[i]->name() + "__constant", value);
    graph.replace_all_uses(inputs[i], constant);
    any = true;
  }
  return any;
}

// `with_libonnx` false: the rules against the declared outputs only (opsets libonnx does not
// know).
void cross_check(const fs::path& path, const std::string& name,
                 const std::map<std::string, std::string>& allowed, Tally& tally,
                 bool with_libonnx = true, bool constant_inputs = false) {
  Result<Model> by_libonnx = load_model(path);
  Result<Model> by_rules = load_model(path);
  if (!by_libonnx.ok() || !by_rules.ok()) {
    ++tally.skipped;
    return;
  }
  if (constant_inputs && (!make_inputs_constant(by_libonnx.value(), path.parent_path()) ||
                          !make_inputs_constant(by_rules.value(), path.parent_path()))) {
    return;
  }
  std::map<std::string, ValueType> declared;
  for (const Value* value : by_rules.value().graph().outputs())
    declared[value->name()] = value->type();
  forget_node_output_types(by_libonnx.value());
  forget_node_output_types(by_rules.value());
  if (with_libonnx && !infer_shapes(by_libonnx.value()).ok()) {
    ++tally.skipped;
    return;
  }
  TypeInferenceOptions options;
  options.use_libonnx = false;
  Result<TypeInferenceReport> report = infer_types(by_rules.value(), builtin_registry(), options);
  ASSERT_TRUE(report.ok()) << name << ": " << report.error();
  ++tally.models;
  for (const std::string& warning : report.value().warnings) {
    tally.rule_failures.push_back(name + ": " + warning);
  }
  const auto libonnx_values = node_outputs(by_libonnx.value());
  const auto rule_values = node_outputs(by_rules.value());
  const auto disagree = [&](const std::string& value, const std::string& what) {
    for (const std::string& key : {name + " " + value, name + " *"}) {
      if (allowed.contains(key)) {
        tally.allowed_seen.insert(key);
        return;
      }
    }
    tally.disagreements.push_back(name + " " + value + ": " + what);
  };
  for (const auto& [value_name, rule_value] : rule_values) {
    ++tally.values;
    const ValueType& rules = rule_value->type();
    const auto it = libonnx_values.find(value_name);
    const ValueType libonnx = it == libonnx_values.end() ? ValueType{} : it->second->type();
    const bool rules_know = knows_something(rules), libonnx_knows = knows_something(libonnx);
    if (rules_know && libonnx_knows) {
      ++tally.both_know;
      const std::string why = contradiction(rules, libonnx);
      if (why.empty()) {
        ++tally.agree;
      } else {
        disagree(value_name, why + ": libonnx " + value_type_to_string(libonnx) + ", rules " +
                                 value_type_to_string(rules));
      }
    } else if (rules_know) {
      ++tally.only_rules;
    } else if (libonnx_knows) {
      ++tally.only_libonnx;
    } else {
      ++tally.neither;
    }
    if (const auto truth = declared.find(value_name);
        truth != declared.end() && knows_something(truth->second) && rules_know) {
      ++tally.declared;
      const std::string why = contradiction(rules, truth->second, true);
      if (why.empty()) {
        ++tally.declared_agree;
      } else {
        disagree(value_name, why + " from the declared output: declared " +
                                 value_type_to_string(truth->second) + ", rules " +
                                 value_type_to_string(rules));
      }
    }
  }
}

std::string summary(const std::string& what, const Tally& t) {
  std::ostringstream out;
  out << what << ": " << t.models << " models (" << t.skipped << " skipped), " << t.values
      << " values; both know " << t.both_know << ", agree " << t.agree << "; only the rules "
      << t.only_rules << ", only libonnx " << t.only_libonnx << ", neither " << t.neither
      << "; rules vs declared outputs " << t.declared_agree << "/" << t.declared
      << "; rule failures " << t.rule_failures.size() << "; allow-listed " << t.allowed_seen.size()
      << ", new disagreements " << t.disagreements.size();
  return out.str();
}

void expect_no_disagreements(const Tally& tally) {
  std::string listed;
  for (size_t i = 0; i < tally.disagreements.size() && i < 200; ++i) {
    listed += "  " + tally.disagreements[i] + "\n";
  }
  std::string failures;
  for (const std::string& failure : tally.rule_failures) failures += "  " + failure + "\n";
  EXPECT_TRUE(tally.rule_failures.empty()) << "rules failed on valid models:\n" << failures;
  EXPECT_TRUE(tally.disagreements.empty()) << tally.disagreements.size() << " disagreements:\n"
                                           << listed;
}

void check_suite(const fs::path& root, const std::map<std::string, std::string>& allowed,
                 Tally& tally, bool with_libonnx, bool constant_inputs = false) {
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(root)) cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());
  for (const fs::path& dir : cases) {
    if (fs::exists(dir / "model.onnx")) {
      cross_check(dir / "model.onnx",
                  dir.filename().string() + (constant_inputs ? "+constants" : ""), allowed, tally,
                  with_libonnx, constant_inputs);
    }
  }
}

TEST(InferTypesCrossCheckTest, BackendNodeSuite) {
  const fs::path root = fs::path(ONNXKIT_TESTDATA_DIR) / "node";
  if (!fs::exists(root)) GTEST_SKIP() << "no backend test data at " << root;
  const auto allowed = read_allow_list();
  Tally tally;
  check_suite(root, allowed, tally, true);
  std::cout << summary("ONNX 1.12 backend node suite", tally) << "\n";
  EXPECT_GT(tally.models, 900u);
  expect_no_disagreements(tally);
}

// The same with the small inputs constant (make_inputs_constant): cases named
// "<case>+constants" in the allow-list.
TEST(InferTypesCrossCheckTest, BackendNodeSuiteWithConstantInputs) {
  const fs::path root = fs::path(ONNXKIT_TESTDATA_DIR) / "node";
  if (!fs::exists(root)) GTEST_SKIP() << "no backend test data at " << root;
  Tally tally;
  check_suite(root, read_allow_list(), tally, true, true);
  std::cout << summary("ONNX 1.12 backend node suite, small inputs constant", tally) << "\n";
  EXPECT_GT(tally.models, 300u);
  expect_no_disagreements(tally);
}

// onnx 1.23's suite's declared outputs (opsets up to 28, which libonnx 1.12 does not know):
// scripts/test.sh writes its node folder into the build folder; ONNXKIT_NODE_SUITE_DIR names
// another.
TEST(InferTypesCrossCheckTest, NewerNodeSuiteDeclaredOutputs) {
  const char* env = std::getenv("ONNXKIT_NODE_SUITE_DIR");
  const std::string dir = env ? env : std::string(ONNXKIT_BUILD_DIR) + "/onnx123_node";
  if (!fs::exists(dir)) GTEST_SKIP() << "no node suite at " << dir << " (scripts/test.sh makes it)";
  Tally tally;
  check_suite(dir, read_allow_list(), tally, false);
  std::cout << summary(std::string("node suite ") + dir, tally) << "\n";
  expect_no_disagreements(tally);
}

TEST(InferTypesCrossCheckTest, BenchModels) {
  // The bench set lives beside the sources (untracked: large); ONNXKIT_BENCH_MODELS_DIR
  // names another copy.
  const char* dir = std::getenv("ONNXKIT_BENCH_MODELS_DIR");
  const fs::path root = dir ? fs::path(dir) : fs::path(ONNXKIT_SOURCE_DIR) / "bench/models";
  std::vector<fs::path> models;
  if (fs::exists(root)) {
    for (const auto& entry : fs::directory_iterator(root)) {
      if (entry.path().extension() == ".onnx") models.push_back(entry.path());
    }
  }
  if (models.empty()) GTEST_SKIP() << "no models in " << root;
  std::sort(models.begin(), models.end());
  const auto allowed = read_allow_list();
  Tally tally;
  for (const fs::path& path : models) {
    cross_check(path, "bench/" + path.filename().string(), allowed, tally);
  }
  std::cout << summary("bench models", tally) << "\n";
  expect_no_disagreements(tally);
}

}  // namespace
}  // namespace onnxkit

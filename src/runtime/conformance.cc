#include "runtime/conformance.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "ir/model.h"
#include "onnx/tensor_io.h"
#include "onnxkit/model_io.h"
#include "registry/builtin_registry.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (size_t i = 0;; ++i) {
    fs::path file = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(file)) break;
    files.push_back(file);
  }
  return files;
}

// ONNX 1.12's test generator stores bfloat16 tensors as uint16 (numpy has no bfloat16):
// read such data as the bfloat16 the model declares.
void adapt_stored_type(RuntimeValue& value, const ValueType& declared) {
  if (declared.kind == ValueType::Kind::kTensor && declared.elem_type == DType::kBFloat16 &&
      value.is_tensor() && value.tensor().dtype() == DType::kUInt16) {
    const Tensor& stored = value.tensor();
    value = RuntimeValue(Tensor::from_buffer(DType::kBFloat16, stored.shape(), stored.buffer()));
  }
}

// Models with a random op (OpTraits::deterministic false): their cases compare dtype and
// shape only.
bool has_random_op(const Model& model) {
  const OpRegistry& registry = builtin_registry();
  bool found = false;
  for_each_node_recursive(model.graph(), [&](const Node* node) {
    found = found || !registry.traits(*node, model.opset_version(node->domain())).deterministic;
  });
  return found;
}

}  // namespace

std::vector<ConformanceCase> find_conformance_cases(const std::vector<fs::path>& roots) {
  std::vector<ConformanceCase> cases;
  for (const fs::path& root : roots) {
    if (!fs::is_directory(root)) fail("{}: not a folder", root.string());
    fs::path canonical = fs::weakly_canonical(root);
    if (fs::exists(root / "model.onnx")) {
      cases.push_back(
          {canonical.parent_path().filename().string() + "/" + canonical.filename().string(),
           root});
      continue;
    }
    for (const auto& entry : fs::directory_iterator(root)) {
      if (entry.is_directory() && fs::exists(entry.path() / "model.onnx")) {
        cases.push_back(
            {canonical.filename().string() + "/" + entry.path().filename().string(), entry.path()});
      }
    }
  }
  std::sort(cases.begin(), cases.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return cases;
}

CaseResult run_conformance_case(const ConformanceCase& test_case, const SessionOptions& options,
                                const Tolerance& tolerance, const ModelTransform& transform) {
  CaseResult result;
  auto loaded = load_model(test_case.dir / "model.onnx");
  Result<std::unique_ptr<Session>> session = Status::error(loaded.ok() ? "" : loaded.error());
  if (loaded.ok()) {
    Model model = std::move(loaded).value();
    Status transformed = transform ? transform(model) : Status();
    session = transformed.ok() ? Session::create(std::move(model), options)
                               : Result<std::unique_ptr<Session>>(transformed);
  }
  if (!session) {
    // The case name already says which model: drop the path prefix.
    result.message = session.error();
    const std::string prefix = (test_case.dir / "model.onnx").string() + ": ";
    if (result.message.rfind(prefix, 0) == 0) result.message.erase(0, prefix.size());
    return result;
  }
  const Session& s = *session.value();
  std::vector<fs::path> data_sets;
  for (const auto& entry : fs::directory_iterator(test_case.dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      data_sets.push_back(entry.path());
    }
  }
  std::sort(data_sets.begin(), data_sets.end());
  if (data_sets.empty()) {
    result.message = "no test_data_set_* folder";
    return result;
  }
  result.shape_only = has_random_op(s.model());
  const auto inputs = s.required_inputs();
  const auto& outputs = s.model().graph().outputs();
  for (const fs::path& data_set : data_sets) {
    const std::string set_name = data_set.filename().string();
    auto input_files = numbered_files(data_set, "input_");
    auto output_files = numbered_files(data_set, "output_");
    if (input_files.size() > inputs.size() &&
        input_files.size() > s.model().graph().inputs().size()) {
      result.message = fmt::format("{}: {} input files for {} inputs", set_name, input_files.size(),
                                   inputs.size());
      return result;
    }
    // Files bind to the inputs without initializers; when a data set feeds more files than
    // that, they bind to all graph inputs in order (old models list weights as inputs).
    std::vector<const Value*> targets = inputs;
    if (input_files.size() > inputs.size()) {
      targets.assign(s.model().graph().inputs().begin(), s.model().graph().inputs().end());
    }
    NamedValues feeds;
    for (size_t i = 0; i < input_files.size(); ++i) {
      auto value = read_value_pb(input_files[i], targets[i]->type());
      if (!value) {
        result.message = value.error();
        return result;
      }
      adapt_stored_type(value.value(), targets[i]->type());
      feeds.emplace_back(targets[i]->name(), std::move(value).value());
    }
    auto computed = s.run(feeds);
    if (!computed) {
      result.message = set_name + ": " + computed.error();
      return result;
    }
    if (output_files.size() != outputs.size()) {
      result.message = fmt::format("{}: {} output files for {} outputs", set_name,
                                   output_files.size(), outputs.size());
      return result;
    }
    for (size_t i = 0; i < output_files.size(); ++i) {
      auto expected = read_value_pb(output_files[i], outputs[i]->type());
      if (!expected) {
        result.message = expected.error();
        return result;
      }
      adapt_stored_type(expected.value(), outputs[i]->type());
      const RuntimeValue& actual = computed.value()[i].second;
      if (result.shape_only) {
        const bool same = actual.is_tensor() && expected.value().is_tensor() &&
                          actual.tensor().dtype() == expected.value().tensor().dtype() &&
                          actual.tensor().shape() == expected.value().tensor().shape();
        if (!same) {
          result.message =
              fmt::format("{}: output '{}': got {}, expected {}", set_name, outputs[i]->name(),
                          actual.describe(), expected.value().describe());
          return result;
        }
        continue;
      }
      Comparison comparison = compare_values(actual, expected.value(), tolerance);
      result.max_abs_error = std::max(result.max_abs_error, comparison.max_abs_error);
      if (!comparison.ok) {
        result.message =
            fmt::format("{}: output '{}': {}", set_name, outputs[i]->name(), comparison.message);
        return result;
      }
    }
  }
  result.passed = true;
  return result;
}

Result<std::map<std::string, std::string>> read_expectations(const fs::path& path) {
  return capture([&] {
    std::ifstream in(path);
    if (!in) fail("{}: cannot open", path.string());
    std::map<std::string, std::string> expectations;
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      auto start = line.find_first_not_of(" \t");
      if (start == std::string::npos || line[start] == '#') continue;
      auto end = line.find_first_of(" \t", start);
      std::string name = line.substr(start, end - start);
      std::string reason;
      if (end != std::string::npos) {
        auto reason_start = line.find_first_not_of(" \t", end);
        if (reason_start != std::string::npos) reason = line.substr(reason_start);
      }
      if (reason.empty()) fail("{}:{}: case '{}' has no reason", path.string(), number, name);
      if (!expectations.emplace(name, reason).second) {
        fail("{}:{}: case '{}' is listed twice", path.string(), number, name);
      }
    }
    return expectations;
  });
}

}  // namespace onnxkit

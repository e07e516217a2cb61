// The ONNX backend-test runner: a case is a folder with model.onnx and
// test_data_set_N/{input,output}_K.pb; it passes when every data set's outputs match.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "onnxkit/session.h"
#include "runtime/compare.h"

namespace onnxkit {

struct ConformanceCase {
  std::string name;  // "<suite>/<case>", e.g. "node/test_abs"
  std::filesystem::path dir;
};

struct CaseResult {
  bool passed = false;
  double max_abs_error = 0;
  bool shape_only = false;  // the model has random ops: only dtypes and shapes were compared
  std::string message;      // the first failure
};

// Finds cases: each path is a case folder itself or a folder of case folders. Sorted by name.
std::vector<ConformanceCase> find_conformance_cases(
    const std::vector<std::filesystem::path>& roots);

// `transform`, when set, rewrites the model before it runs (e.g. simplify it first).
using ModelTransform = std::function<Status(Model&)>;
CaseResult run_conformance_case(const ConformanceCase& test_case, const SessionOptions& options,
                                const Tolerance& tolerance, const ModelTransform& transform = {});

// Expected failures: "<case name> <reason>" per line; '#' starts a comment.
Result<std::map<std::string, std::string>> read_expectations(const std::filesystem::path& path);

}  // namespace onnxkit

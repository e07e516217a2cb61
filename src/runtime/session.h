// Session: a loaded model compiled for execution. run() takes named inputs and returns
// the named outputs; it is const and may be called from several threads at once.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "ir/model.h"
#include "ir/runtime_value.h"

namespace onnxkit {

class CompiledGraph;

struct SessionOptions {
  // Check inputs against the model's declared dtypes and shapes before running.
  bool validate_inputs = true;
};

using NamedValues = std::vector<std::pair<std::string, RuntimeValue>>;

class Session {
 public:
  // Compiles `model` (taking ownership). Fails naming the node when an op has no kernel
  // or its attributes are invalid.
  static Result<std::unique_ptr<Session>> create(Model model, const SessionOptions& options = {});
  static Result<std::unique_ptr<Session>> load(const std::filesystem::path& path,
                                               const SessionOptions& options = {});
  ~Session();

  const Model& model() const { return model_; }
  // Graph inputs the caller must feed (initializer-backed inputs are optional overrides).
  std::vector<const Value*> required_inputs() const;
  const std::vector<Value*>& outputs() const { return model_.graph().outputs(); }

  // Runs the model. Unknown, missing or mistyped inputs fail naming the input.
  Result<NamedValues> run(const NamedValues& inputs) const;

 private:
  Session(Model model, const SessionOptions& options);
  NamedValues run_checked(const NamedValues& inputs) const;

  Model model_;
  SessionOptions options_;
  std::shared_ptr<const CompiledGraph> plan_;
};

}  // namespace onnxkit

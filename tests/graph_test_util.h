// Building small models by hand and running them: the one graph builder the op, kernel and
// pass tests share.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "attribute_test_util.h"
#include "core/half.h"
#include "onnxkit/session.h"
#include "ops/fused_ops.h"

namespace onnxkit::testing {

// Runs `model` on `feeds`; a failed create or run throws its Error.
inline NamedValues run_model(Model model, const NamedValues& feeds,
                             const SessionOptions& options = SessionOptions::reference()) {
  auto session = Session::create(std::move(model), options);
  if (!session) throw Error(session.error());
  auto result = session.value()->run(feeds);
  if (!result) throw Error(result.error());
  return std::move(result).value();
}

// The optimized kernels at level none (the graph as built).
inline SessionOptions optimized(int threads = 1) {
  SessionOptions options;
  options.level = OptimizationLevel::kNone;
  options.kernels = KernelTier::kOptimized;
  options.intra_op_threads = threads;
  return options;
}

// The output tensors of a run, in graph output order.
inline std::vector<Tensor> tensors_of(const NamedValues& values) {
  std::vector<Tensor> tensors;
  for (const auto& [name, value] : values) tensors.push_back(value.tensor());
  return tensors;
}

// Adds graph inputs (declared, or fed with a value kept for the run), constants and nodes,
// with generated names, to a model's main graph: a model given by the caller (pass tests
// build the model a pass then rewrites) or one of its own (op and kernel tests run it).
class GraphBuilder {
 public:
  explicit GraphBuilder(Model& model) : model_(&model) {}
  // A model of its own importing ai.onnx `opset` and com.onnxkit (for the fused ops).
  explicit GraphBuilder(int64_t opset = 14) : owned_(std::make_unique<Model>()) {
    owned_->ir_version = 8;
    owned_->opset_imports = {{"", opset}, {std::string(kOnnxkitDomain), kOnnxkitDomainVersion}};
    model_ = owned_.get();
  }

  Model& model() { return *model_; }
  Graph& graph() { return model_->graph(); }
  // The values of the fed inputs, by name.
  const NamedValues& feeds() const { return feeds_; }

  // A declared graph input; -1 dims become the symbol "n".
  Value* input(const std::string& name, const std::vector<int64_t>& dims,
               DType dtype = DType::kFloat) {
    std::vector<Dim> shape;
    for (int64_t d : dims) shape.push_back(d >= 0 ? Dim::known(d) : Dim::symbol("n"));
    return input(name, std::move(shape), dtype);
  }
  Value* input(const std::string& name, std::vector<Dim> dims, DType dtype) {
    return graph().add_input(name, ValueType::tensor(dtype, std::move(dims)));
  }
  // A graph input fed with `value` (named x0, x1, ... unless named); its declared shape is
  // unknown unless `static_shape`.
  Value* input(Tensor value, bool static_shape = false) {
    return input(fmt::format("x{}", feeds_.size()), std::move(value), static_shape);
  }
  Value* input(const std::string& name, Tensor value, bool static_shape = false) {
    std::optional<std::vector<Dim>> dims;
    if (static_shape) {
      dims.emplace();
      for (int64_t d : value.shape()) dims->push_back(Dim::known(d));
    }
    Value* v = graph().add_input(name, ValueType::tensor(value.dtype(), dims));
    feeds_.emplace_back(name, std::move(value));
    return v;
  }

  Value* constant(Tensor value) { return graph().add_initializer(fresh("c"), std::move(value)); }
  // A scalar constant of a float type.
  Value* scalar(float value, DType dtype = DType::kFloat) {
    Tensor t(dtype, {});
    switch (dtype) {
      case DType::kFloat:
        *t.mutable_data<float>() = value;
        break;
      case DType::kDouble:
        *t.mutable_data<double>() = value;
        break;
      case DType::kFloat16:
        *t.mutable_data<Float16>() = Float16(value);
        break;
      default:
        throw Error("GraphBuilder::scalar: not a float type");
    }
    return constant(std::move(t));
  }
  Value* ints(std::vector<int64_t> values) {
    const auto n = static_cast<int64_t>(values.size());
    return constant(Tensor::from_vector(DType::kInt64, {n}, values));
  }

  Node* node(const std::string& op, std::vector<Value*> inputs, const Attributes& attributes = {},
             size_t outputs = 1, const std::string& domain = "") {
    const std::string base = fresh(op);
    std::vector<std::string> names;
    for (size_t i = 0; i < outputs; ++i) names.push_back(base + "_out" + std::to_string(i));
    Node* n = graph().add_node(op, std::move(inputs), names, domain, base);
    attributes.apply(n);
    return n;
  }
  // A node's first output.
  Value* op(const std::string& op, std::vector<Value*> inputs, const Attributes& attributes = {},
            const std::string& domain = "") {
    return node(op, std::move(inputs), attributes, 1, domain)->output(0);
  }

  Value* output(Value* value) {
    graph().add_output(value);
    return value;
  }

  // Marks `outputs` as graph outputs too and runs the model (which the builder gives up) on
  // the fed inputs.
  std::vector<Tensor> run(const std::vector<Value*>& outputs = {},
                          const SessionOptions& options = SessionOptions::reference()) {
    for (Value* v : outputs) output(v);
    return tensors_of(run_model(std::move(model()), feeds_, options));
  }

 private:
  std::string fresh(const std::string& prefix) { return prefix + "_" + std::to_string(next_++); }

  std::unique_ptr<Model> owned_;
  Model* model_ = nullptr;
  NamedValues feeds_;
  int next_ = 0;
};

}  // namespace onnxkit::testing

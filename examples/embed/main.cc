// An embedding program: loads a model, simplifies it, compiles it into a session, runs it
// once on inputs it builds, and prints each output's dtype, shape and first values. It
// includes <onnxkit/onnxkit.h> only and links the `onnxkit::onnxkit` CMake target (in-tree
// or from an installed onnxkit: find_package(onnxkit)).
//
//   onnxkit_embed_example [MODEL]   (default: examples/models/tiny_cnn.onnx)
//
// Exit codes: 0 success, 1 an error (one line on stderr says what and where).
#include <onnxkit/onnxkit.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

int report_error(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

// The shape to feed for a declared one: fixed dims as declared, symbolic or unknown dims 1.
onnxkit::Shape concrete_shape(const onnxkit::ValueInfo& input) {
  onnxkit::Shape shape;
  if (input.shape) {
    for (const onnxkit::Dim& dim : *input.shape) shape.push_back(dim.is_known() ? dim.value : 1);
  }
  return shape;
}

// An input tensor built from this program's own data: floats ramp through [-1, 1], other
// element types are zeros.
onnxkit::Result<onnxkit::Tensor> make_input(const onnxkit::ValueInfo& input) {
  if (!input.is_tensor || input.dtype == onnxkit::DType::kUndefined) {
    return onnxkit::Status::error("input '" + input.name + "' is " + input.type +
                                  ": this example feeds typed tensors only");
  }
  onnxkit::Shape shape = concrete_shape(input);
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  if (input.dtype != onnxkit::DType::kFloat) return onnxkit::Tensor(input.dtype, shape);
  std::vector<float> data(static_cast<size_t>(count));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 17) / 8.0f - 1.0f;
  return onnxkit::Tensor::from_vector(onnxkit::DType::kFloat, shape, data);
}

// "0.125 -0.5 ..." for the first few elements of a float, int32 or int64 tensor.
std::string first_values(const onnxkit::Tensor& tensor, int64_t count) {
  std::string text;
  const int64_t shown = std::min(count, tensor.numel());
  for (int64_t i = 0; i < shown; ++i) {
    if (i) text += ' ';
    switch (tensor.dtype()) {
      case onnxkit::DType::kFloat:
        text += std::to_string(tensor.data<float>()[i]);
        break;
      case onnxkit::DType::kInt32:
        text += std::to_string(tensor.data<int32_t>()[i]);
        break;
      case onnxkit::DType::kInt64:
        text += std::to_string(tensor.data<int64_t>()[i]);
        break;
      default:
        return "(values of this type not shown)";
    }
  }
  if (tensor.numel() > shown) text += " ...";
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path path = argc > 1 ? argv[1] : ONNXKIT_EXAMPLE_MODEL;

  onnxkit::Result<onnxkit::Model> model = onnxkit::load_model(path);
  if (!model) return report_error(model.error());
  std::printf("model     %s\n", path.string().c_str());

  // The defaults: the basic passes, then one run of both models on generated inputs to
  // check that the simplified one computes the same outputs.
  onnxkit::Result<onnxkit::SimplifyReport> simplified =
      onnxkit::simplify(model.value(), onnxkit::SimplifyOptions());
  if (!simplified) return report_error(simplified.error());
  const onnxkit::SimplifyReport& report = simplified.value();
  if (!report.check_ok)
    return report_error("simplifying changed the outputs: " + report.check_message);
  std::printf("simplify  %zu -> %zu nodes, check %s\n", report.before.nodes, report.after.nodes,
              report.checks_run > 0 ? "passed" : "not run");

  onnxkit::SessionOptions options;
  options.intra_op_threads = 1;
  onnxkit::Result<std::unique_ptr<onnxkit::Session>> created =
      onnxkit::Session::create(std::move(model).value(), options);
  if (!created) return report_error(created.error());
  const onnxkit::Session& session = *created.value();

  onnxkit::NamedValues inputs;
  for (const onnxkit::ValueInfo& input : session.inputs()) {
    onnxkit::Result<onnxkit::Tensor> tensor = make_input(input);
    if (!tensor) return report_error(tensor.error());
    std::printf("input     %s: %s, fed %s\n", input.name.c_str(), input.type.c_str(),
                onnxkit::shape_to_string(tensor.value().shape()).c_str());
    inputs.emplace_back(input.name, std::move(tensor).value());
  }

  onnxkit::Result<onnxkit::NamedValues> outputs = session.run(inputs);
  if (!outputs) return report_error(outputs.error());
  for (const auto& [name, value] : outputs.value()) {
    if (!value.is_tensor()) {
      std::printf("output    %s: %s\n", name.c_str(), value.describe().c_str());
      continue;
    }
    const onnxkit::Tensor& tensor = value.tensor();
    std::printf("output    %s: %s%s  %s\n", name.c_str(),
                std::string(onnxkit::dtype_name(tensor.dtype())).c_str(),
                onnxkit::shape_to_string(tensor.shape()).c_str(), first_values(tensor, 4).c_str());
  }
  return 0;
}

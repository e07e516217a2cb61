// Custom op libraries (registry/custom_op_library.h): the example library
// (examples/custom_op, com.microsoft::Inverse) through the registry, sessions, type inference
// and simplify, and each way a library can be wrong giving an error that names it.
#include "registry/custom_op_library.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ir/graph.h"
#include "onnxkit/model_io.h"
#include "onnxkit/session.h"
#include "onnxkit/simplify.h"
#include "passes/infer_types.h"
#include "registry/builtin_registry.h"

namespace onnxkit {
namespace {

// The error of loading `library` into a copy of the built-in registry ("" when it loads).
std::string load_error(const std::string& library) {
  OpRegistry registry = builtin_registry();
  Status status = capture([&] { load_custom_op_library(library, registry); });
  return status.ok() ? "" : status.message();
}

TEST(CustomOpLibrary, AddsItsOpsToTheRegistry) {
  OpRegistry registry = builtin_registry();
  EXPECT_FALSE(registry.knows("com.microsoft", "Inverse"));
  load_custom_op_library(INVERSE_OP_LIB, registry);
  const OpRegistration* registration = registry.find("com.microsoft", "Inverse", 1);
  ASSERT_NE(registration, nullptr);
  EXPECT_EQ(registration->since_version, 1);
  EXPECT_TRUE(registration->definition.infer_types);
  // The built-in registry itself is untouched.
  EXPECT_FALSE(builtin_registry().knows("com.microsoft", "Inverse"));
}

TEST(CustomOpLibrary, BadLibrariesAreClearErrorsNamingThem) {
  const std::string missing = std::string(ONNXKIT_BUILD_DIR) + "/no_such_library.so";
  struct Case {
    std::string library;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {missing, "cannot be loaded"},
           {INVERSE_MODEL, "cannot be loaded"},  // a file that is no shared library
           {BAD_OP_NO_EXPORT_LIB, "exports no onnxkit_register_custom_ops function"},
           {BAD_OP_TWICE_LIB, "registers test.bad::Twice since version 1 twice"},
           {BAD_OP_BUILTIN_LIB, "registers Relu, which is already defined"},
           {BAD_OP_FAILS_LIB, "this library needs a GPU"},
       }) {
    std::string error = load_error(c.library);
    EXPECT_NE(error.find("custom op library '" + c.library + "'"), std::string::npos) << error;
    EXPECT_NE(error.find(c.expected), std::string::npos) << error;
  }
}

TEST(CustomOpLibrary, TwoTypeCallbacksForOneOpVersionAreRefused) {
  ASSERT_EQ(load_error(INVERSE_OP_LIB), "");
  std::string error = load_error(BAD_OP_OTHER_TYPES_LIB);
  EXPECT_NE(error.find(BAD_OP_OTHER_TYPES_LIB), std::string::npos) << error;
  EXPECT_NE(error.find("type callback other than the one library '" INVERSE_OP_LIB "'"),
            std::string::npos)
      << error;
  // Loading the same library again (another session) is fine.
  EXPECT_EQ(load_error(INVERSE_OP_LIB), "");
}

TEST(CustomOpLibrary, ItsTypeCallbackTypesTheOutputs) {
  OpRegistry registry = builtin_registry();
  load_custom_op_library(INVERSE_OP_LIB, registry);
  Model model = load_model(INVERSE_MODEL).value();
  TypeInferenceReport report = infer_types(model, registry).value();
  EXPECT_TRUE(report.warnings.empty());
  for (const Node* node : model.graph().nodes()) {
    if (node->op_type() != "Inverse") continue;
    // Known dims from the callback; a named dim the exporter declared keeps its name.
    const ValueType& type = node->outputs()[0]->type();
    ASSERT_TRUE(type.is_tensor() && type.shape) << node->describe();
    EXPECT_EQ(type.elem_type, DType::kFloat);
    const std::vector<Dim>& dims = *type.shape;
    ASSERT_EQ(dims.size(), node->inputs()[0]->name() == "x" ? 3u : 2u) << node->describe();
    EXPECT_EQ(dims[dims.size() - 1], Dim::known(3));
    EXPECT_EQ(dims[dims.size() - 2], Dim::known(3));
  }
}

// y = inverse(x) @ inverse(w) * (scale * 2): checked by its definition, x @ (y / s) @ w = I,
// with w and scale read from the model.
TEST(CustomOpLibrary, SessionsRunTheModel) {
  SessionOptions options;
  options.custom_op_libraries = {INVERSE_OP_LIB};
  Model model = load_model(INVERSE_MODEL).value();
  Tensor w = model.graph().find_value("w")->initializer();
  Tensor scale = model.graph().find_value("scale")->initializer();
  auto session = Session::create(std::move(model), options);
  ASSERT_TRUE(session) << session.error();
  std::vector<float> x = {2, 1, 0, 1, 3, 1, 0, 1, 4,  // two well-conditioned matrices
                          5, 0, 1, 0, 2, 0, 1, 0, 3};
  auto outputs = session.value()->run({{"x", Tensor::from_vector(DType::kFloat, {2, 3, 3}, x)}});
  ASSERT_TRUE(outputs) << outputs.error();
  const Tensor& y = outputs.value()[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{2, 3, 3}));
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        double sum = 0;
        for (int k = 0; k < 3; ++k) {
          for (int l = 0; l < 3; ++l) {
            double y_kl = y.data<float>()[b * 9 + k * 3 + l] / (scale.data<float>()[l] * 2);
            sum += x[b * 9 + i * 3 + k] * y_kl * w.data<float>()[l * 3 + j];
          }
        }
        EXPECT_NEAR(sum, i == j ? 1.0 : 0.0, 1e-4) << b << " " << i << " " << j;
      }
    }
  }
  // The kernel's errors name the node and the library.
  std::vector<float> singular(9, 1.0f);
  auto failed =
      session.value()->run({{"x", Tensor::from_vector(DType::kFloat, {1, 3, 3}, singular)}});
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().find("[Inverse]"), std::string::npos) << failed.error();
  EXPECT_NE(failed.error().find(INVERSE_OP_LIB), std::string::npos) << failed.error();
  EXPECT_NE(failed.error().find("matrix 0 of 1 is singular"), std::string::npos) << failed.error();
}

TEST(CustomOpLibrary, SessionsWithoutTheLibraryNameTheOp) {
  auto session = Session::load(INVERSE_MODEL);
  ASSERT_FALSE(session);
  EXPECT_NE(session.error().find("Inverse"), std::string::npos) << session.error();
  SessionOptions options;
  options.custom_op_libraries = {BAD_OP_NO_EXPORT_LIB};
  session = Session::load(INVERSE_MODEL, options);
  ASSERT_FALSE(session);
  EXPECT_NE(session.error().find(BAD_OP_NO_EXPORT_LIB), std::string::npos) << session.error();
}

size_t count_ops(const Model& model, const std::string& op_type) {
  size_t count = 0;
  for (const Node* node : model.graph().nodes()) count += node->op_type() == op_type;
  return count;
}

TEST(CustomOpLibrary, SimplifyFoldsTheOpWithItsLibrary) {
  Model model = load_model(INVERSE_MODEL).value();
  SimplifyOptions options;
  options.custom_op_libraries = {INVERSE_OP_LIB};
  options.check_n = 2;
  SimplifyReport report = simplify(model, options).value();
  EXPECT_TRUE(report.check_ok) << report.check_message;
  EXPECT_EQ(report.checks_run, 2);
  EXPECT_EQ(count_ops(model, "Inverse"), 1u);  // inverse(w) folded, inverse(x) kept
  EXPECT_EQ(count_ops(model, "Constant"), 0u);
  EXPECT_EQ(model.graph().nodes().size(), 3u);  // Inverse, MatMul, Mul
}

TEST(CustomOpLibrary, SimplifyWithoutTheLibraryKeepsTheOpAndFoldsAroundIt) {
  Model model = load_model(INVERSE_MODEL).value();
  SimplifyOptions options;
  SimplifyReport report = simplify(model, options).value();
  EXPECT_EQ(count_ops(model, "Inverse"), 2u);
  EXPECT_EQ(count_ops(model, "Constant"), 0u);  // scale * 2 folded
  EXPECT_EQ(model.graph().nodes().size(), 4u);  // Inverse x2, MatMul, Mul
  EXPECT_EQ(report.checks_run, 0);
  bool warned = false;
  for (const std::string& warning : report.warnings) {
    warned = warned || (warning.find("com.microsoft::Inverse") != std::string::npos &&
                        warning.find("--custom-op-lib") != std::string::npos);
  }
  EXPECT_TRUE(warned) << "no warning that the check was skipped for the custom op";
}

}  // namespace
}  // namespace onnxkit

// Bad files give one clear error naming the file and the fault; never a crash.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "../test_util.h"
#include "model_builder.h"
#include "onnxkit/model_io.h"

namespace onnxkit {
namespace {

using testing::TempDir;

::testing::AssertionResult load_fails_with(const std::filesystem::path& path,
                                           const std::vector<std::string>& fragments) {
  auto loaded = load_model(path);
  if (loaded.ok()) return ::testing::AssertionFailure() << path << " loaded without error";
  for (const auto& fragment : fragments) {
    if (loaded.error().find(fragment) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "error '" << loaded.error() << "' does not mention '" << fragment << "'";
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(BadInput, MissingFileAndDirectory) {
  TempDir dir;
  EXPECT_TRUE(load_fails_with(dir / "absent.onnx", {"absent.onnx", "no such file"}));
  EXPECT_TRUE(load_fails_with(dir.path(), {"directory"}));
}

TEST(BadInput, EmptyFile) {
  TempDir dir;
  std::ofstream(dir / "empty.onnx").close();
  EXPECT_TRUE(load_fails_with(dir / "empty.onnx", {"empty.onnx", "empty"}));
}

TEST(BadInput, TruncatedFileAtEveryLength) {
  TempDir dir;
  std::string bytes = testing::add_model(64).SerializeAsString();
  // Cutting anywhere must fail cleanly; a cut on a field boundary leaves a shorter but
  // valid message only when the graph or its nodes are dropped, which is also an error.
  for (size_t cut = 1; cut < bytes.size(); cut += 7) {
    std::ofstream(dir / "cut.onnx", std::ios::binary).write(bytes.data(), cut);
    auto loaded = load_model(dir / "cut.onnx");
    if (!loaded.ok()) {
      EXPECT_NE(loaded.error().find("cut.onnx"), std::string::npos) << loaded.error();
    }
  }
  std::ofstream(dir / "half.onnx", std::ios::binary).write(bytes.data(), bytes.size() / 2);
  EXPECT_TRUE(load_fails_with(dir / "half.onnx", {"half.onnx"}));
}

TEST(BadInput, RandomBytes) {
  TempDir dir;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::string bytes(1 + rng() % 4096, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    std::ofstream(dir / "random.onnx", std::ios::binary).write(bytes.data(), bytes.size());
    EXPECT_TRUE(load_fails_with(dir / "random.onnx", {"random.onnx"})) << "trial " << trial;
  }
}

// A node with more inputs or outputs than its op's schema allows is refused, naming the
// node: kernels read the inputs they know, so the run would ignore an extra input while
// passes saw it (fuzz: an Identity given a float16 second input changed dtype at level all).
TEST(BadInput, NodeArityOutsideItsSchema) {
  TempDir dir;
  auto model = testing::add_model(4);
  model.mutable_graph()->mutable_node(0)->add_input("w");
  testing::write_model(model, dir / "model.onnx");
  EXPECT_TRUE(load_fails_with(dir / "model.onnx",
                              {"model.onnx", "node 'add_0' (Add-13) has 3 inputs", "takes 2"}));

  model = testing::add_model(4);
  model.mutable_graph()->mutable_node(0)->add_output("extra");
  testing::write_model(model, dir / "model.onnx");
  EXPECT_TRUE(load_fails_with(dir / "model.onnx", {"node 'add_0'", "2 outputs", "gives 1"}));

  model = testing::add_model(4);  // the same graph, well formed, loads
  testing::write_model(model, dir / "model.onnx");
  EXPECT_TRUE(load_model(dir / "model.onnx").ok());
}

// Attributes the op does not define, or of another type, are refused as ONNX's checker
// refuses them: the run would ignore them while passes (and subgraph walks) saw them.
TEST(BadInput, NodeAttributeOutsideItsSchema) {
  TempDir dir;
  auto model = testing::add_model(4);
  auto* extra = model.mutable_graph()->mutable_node(0)->add_attribute();
  extra->set_name("alpha");
  extra->set_type(onnx::AttributeProto::FLOAT);
  extra->set_f(2);
  testing::write_model(model, dir / "model.onnx");
  EXPECT_TRUE(load_fails_with(dir / "model.onnx",
                              {"model.onnx", "node 'add_0' (Add-13) has an attribute 'alpha'"}));

  model = testing::add_model(4);
  auto* node = model.mutable_graph()->mutable_node(0);
  node->set_op_type("Sum");
  auto* wrong = node->add_attribute();
  wrong->set_name("__internal");  // reserved names pass, as in ONNX's checker
  wrong->set_type(onnx::AttributeProto::INT);
  testing::write_model(model, dir / "model.onnx");
  EXPECT_TRUE(load_model(dir / "model.onnx").ok());

  // LayerNormalization-17 lets undeclared attributes through (its schema says so), and a
  // declared one must have its type.
  onnx::ModelProto norm = testing::add_model(4, 17);
  auto* ln = norm.mutable_graph()->mutable_node(0);
  ln->set_op_type("LayerNormalization");
  auto* custom = ln->add_attribute();
  custom->set_name("exporter_hint");
  custom->set_type(onnx::AttributeProto::INT);
  testing::write_model(norm, dir / "norm.onnx");
  auto loaded = load_model(dir / "norm.onnx");
  EXPECT_TRUE(loaded.ok()) << loaded.error();
  auto* axis = ln->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::FLOAT);
  axis->set_f(-1);
  testing::write_model(norm, dir / "norm.onnx");
  EXPECT_TRUE(load_fails_with(dir / "norm.onnx",
                              {"(LayerNormalization-17): attribute 'axis' is float, the op "
                               "takes int"}));
}

TEST(BadInput, ExternalDataOffsetPastTheEnd) {
  TempDir dir;
  auto model = testing::add_model(16);
  testing::set_external(model.mutable_graph()->mutable_initializer(0), "weights.bin", 32, 64);
  std::ofstream(dir / "weights.bin", std::ios::binary) << std::string(64, '\0');
  testing::write_model(model, dir / "model.onnx");
  EXPECT_TRUE(load_fails_with(dir / "model.onnx", {"model.onnx", "'w'", "past the end"}));
}

TEST(BadInput, ExternalDataLocationEscapingTheFolder) {
  TempDir dir;
  std::filesystem::create_directory(dir / "m");
  std::ofstream(dir / "secret.bin", std::ios::binary) << std::string(64, '\0');
  auto model = testing::add_model(16);
  testing::set_external(model.mutable_graph()->mutable_initializer(0), "../secret.bin", 0, 64);
  testing::write_model(model, dir / "m" / "model.onnx");
  EXPECT_TRUE(load_fails_with(dir / "m" / "model.onnx", {"'w'", "escapes the model's folder"}));

  testing::set_external(model.mutable_graph()->mutable_initializer(0),
                        (dir / "secret.bin").string(), 0, 64);
  testing::write_model(model, dir / "m" / "model.onnx");
  EXPECT_TRUE(load_fails_with(dir / "m" / "model.onnx", {"'w'", "absolute"}));
}

TEST(BadInput, ExternalDataMissingFileOrWrongLength) {
  TempDir dir;
  auto model = testing::add_model(16);
  testing::set_external(model.mutable_graph()->mutable_initializer(0), "nowhere.bin", 0, 64);
  testing::write_model(model, dir / "model.onnx");
  EXPECT_TRUE(load_fails_with(dir / "model.onnx", {"'w'", "nowhere.bin"}));

  std::ofstream(dir / "w.bin", std::ios::binary) << std::string(128, '\0');
  testing::set_external(model.mutable_graph()->mutable_initializer(0), "w.bin", 0, 60);
  testing::write_model(model, dir / "model.onnx");
  EXPECT_TRUE(load_fails_with(dir / "model.onnx", {"'w'", "length 60"}));
}

TEST(BadInput, NodeInputThatNamesNothing) {
  TempDir dir;
  auto model = testing::add_model(4);
  model.mutable_graph()->mutable_node(0)->set_input(1, "ghost");
  testing::write_model(model, dir / "model.onnx");
  EXPECT_TRUE(load_fails_with(dir / "model.onnx",
                              {"model.onnx", "[Add] node 'add_0'", "'ghost'", "not produced"}));
}

TEST(BadInput, RawDataOfTheWrongSize) {
  TempDir dir;
  auto model = testing::add_model(4);
  model.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(10, '\0'));
  testing::write_model(model, dir / "model.onnx");
  EXPECT_TRUE(load_fails_with(dir / "model.onnx", {"'w'", "raw_data has 10 bytes"}));
}

TEST(BadInput, DuplicateOutputsAndCycles) {
  TempDir dir;
  auto model = testing::add_model(4);
  *model.mutable_graph()->add_node() = model.graph().node(0);
  testing::write_model(model, dir / "dup.onnx");
  EXPECT_TRUE(load_fails_with(dir / "dup.onnx", {"'y'", "more than once"}));

  auto cyclic = testing::add_model(4);
  auto* graph = cyclic.mutable_graph();
  graph->mutable_node(0)->set_input(0, "z");
  auto* relu = graph->add_node();
  relu->set_op_type("Relu");
  relu->set_name("relu_0");
  relu->add_input("y");
  relu->add_output("z");
  testing::write_model(cyclic, dir / "cycle.onnx");
  EXPECT_TRUE(load_fails_with(dir / "cycle.onnx", {"cycle"}));
}

TEST(BadInput, ProtobufThatIsNotAModel) {
  TempDir dir;
  onnx::TensorProto tensor;
  tensor.set_name("t");
  tensor.add_dims(2);
  std::ofstream out(dir / "tensor.onnx", std::ios::binary);
  tensor.SerializeToOstream(&out);
  out.close();
  EXPECT_TRUE(load_fails_with(dir / "tensor.onnx", {"tensor.onnx", "ONNX"}));
}

}  // namespace
}  // namespace onnxkit

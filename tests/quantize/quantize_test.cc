// onnxkit::quantize: ONNX Runtime's scale / zero-point rules, the streaming calibration
// statistics, the dynamic and static rewrites (structure and outputs against the float
// model) and the bad-input rules.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "../graph_test_util.h"
#include "ir/graph_clone.h"
#include "onnx/tensor_io.h"
#include "onnxkit/model_io.h"
#include "onnxkit/quantize.h"
#include "quantize/calibration.h"
#include "quantize/quant_params.h"
#include "quantize/weight_file.h"
#include "runtime/random_inputs.h"

namespace onnxkit {
namespace {

using testing::GraphBuilder;
using namespace quant;

Tensor random_floats(Shape shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return random_tensor(DType::kFloat, shape, rng);
}

double cosine(const Tensor& a, const Tensor& b) {
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    dot += double(a.data<float>()[i]) * b.data<float>()[i];
    na += double(a.data<float>()[i]) * a.data<float>()[i];
    nb += double(b.data<float>()[i]) * b.data<float>()[i];
  }
  return dot / std::sqrt(na * nb);
}

std::map<std::string, size_t> op_counts(const Model& model) {
  std::map<std::string, size_t> ops;
  for (const Node* node : model.graph().nodes()) ++ops[node->op_type()];
  return ops;
}

Tensor run_one(Model model, const NamedValues& feeds) {
  SessionOptions options = SessionOptions::reference();
  auto session = Session::create(std::move(model), options);
  EXPECT_TRUE(session.ok()) << session.error();
  auto outputs = session.value()->run(feeds);
  EXPECT_TRUE(outputs.ok()) << outputs.error();
  return outputs.value().front().second.tensor();
}

// x[4, 16] -> MatMul(W[16, 8]) -> Add(b) -> Relu -> Gemm(W2[8, 3], transB=0) -> y
struct Mlp {
  GraphBuilder builder{13};
  Mlp() {
    Value* x = builder.input("x", random_floats({4, 16}, 3), true);
    Value* h = builder.op("MatMul", {x, builder.constant(random_floats({16, 8}, 4))});
    h = builder.op("Add", {h, builder.constant(random_floats({8}, 5))});
    h = builder.op("Relu", {h});
    Value* y = builder.op("Gemm", {h, builder.constant(random_floats({8, 3}, 6)),
                                   builder.constant(random_floats({3}, 7))});
    builder.output(y);
  }
};

Model load_test_model(const std::string& name) {
  auto model =
      load_model(std::string(ONNXKIT_SOURCE_DIR) + "/tests/data/models/" + name + "/model.onnx");
  EXPECT_TRUE(model.ok()) << model.error();
  return std::move(model).value();
}

NamedValues test_inputs(const Model& model, const std::string& name) {
  NamedValues feeds;
  size_t k = 0;
  for (const Value* input : model.graph().inputs()) {
    if (input->has_initializer()) continue;
    auto value = read_value_pb(std::string(ONNXKIT_SOURCE_DIR) + "/tests/data/models/" + name +
                                   "/test_data_set_0/input_" + std::to_string(k++) + ".pb",
                               input->type());
    EXPECT_TRUE(value.ok()) << value.error();
    feeds.emplace_back(input->name(), value.value());
  }
  return feeds;
}

// ---- ONNX Runtime's parameter rules (quant_utils.compute_scale_zp) ----

TEST(QuantParams, RangesFollowOnnxRuntime) {
  EXPECT_EQ(qrange(DType::kInt8, false, false).qmin, -128);
  EXPECT_EQ(qrange(DType::kInt8, false, true).qmin, -127);
  EXPECT_EQ(qrange(DType::kInt8, true, true).qmin, -64);
  EXPECT_EQ(qrange(DType::kInt8, true, true).qmax, 64);
  EXPECT_EQ(qrange(DType::kUInt8, true, false).qmax, 127);
  EXPECT_THROW(qrange(DType::kInt32, false, false), Error);
}

TEST(QuantParams, ScaleAndZeroPoint) {
  // uint8 over [-1, 3]: scale 4/255, zero point round(0 - (-1) / scale) = round(63.75).
  QParams p = compute_qparams(-1.0f, 3.0f, {0, 255}, false);
  EXPECT_FLOAT_EQ(p.scale, 4.0f / 255);
  EXPECT_EQ(p.zero_point, 64);
  // The range always holds 0: [2, 5] is quantized as [0, 5].
  p = compute_qparams(2.0f, 5.0f, {0, 255}, false);
  EXPECT_FLOAT_EQ(p.scale, 5.0f / 255);
  EXPECT_EQ(p.zero_point, 0);
  // Symmetric int8: the middle of [-127, 127]; symmetric uint8: round(127.5) = 128.
  p = compute_qparams(-0.5f, 2.0f, {-127, 127}, true);
  EXPECT_FLOAT_EQ(p.scale, 4.0f / 254);
  EXPECT_EQ(p.zero_point, 0);
  EXPECT_EQ(compute_qparams(-0.5f, 2.0f, {0, 255}, true).zero_point, 128);
  // A range narrower than float's smallest normal: scale 1, zero point 0.
  p = compute_qparams(0.0f, 0.0f, {0, 255}, false);
  EXPECT_EQ(p.scale, 1.0f);
  EXPECT_EQ(p.zero_point, 0);
}

TEST(QuantParams, RoundsHalfToEvenAndSaturates) {
  const QParams p{1.0f, 0};
  EXPECT_EQ(quantize_value(2.5f, p, {-128, 127}), 2);
  EXPECT_EQ(quantize_value(3.5f, p, {-128, 127}), 4);
  EXPECT_EQ(quantize_value(-2.5f, p, {-128, 127}), -2);
  EXPECT_EQ(quantize_value(1000.0f, p, {-128, 127}), 127);
  EXPECT_EQ(quantize_value(-1000.0f, p, {-64, 64}), -64);
  EXPECT_EQ(quantize_value(NAN, QParams{1.0f, 7}, {0, 255}), 7);
}

TEST(QuantParams, PerChannelWeightsHaveAScaleEach) {
  // [2, 3] with rows of very different sizes: per row (axis 0) keeps the small row exact.
  Tensor w = Tensor::from_vector<float>(DType::kFloat, {2, 3}, {0.01f, -0.02f, 0.03f, 10, -20, 30});
  QuantizedWeight per_row = quantize_weight(w, DType::kInt8, 0, false, true);
  ASSERT_EQ(per_row.scale.numel(), 2);
  EXPECT_FLOAT_EQ(per_row.scale.data<float>()[0], 0.03f / 127);
  EXPECT_FLOAT_EQ(per_row.scale.data<float>()[1], 30.0f / 127);
  EXPECT_EQ(per_row.data.data<int8_t>()[2], 127);
  EXPECT_EQ(per_row.data.data<int8_t>()[5], 127);
  QuantizedWeight whole = quantize_weight(w, DType::kInt8, -1, false, true);
  EXPECT_EQ(whole.scale.rank(), 0u);
  EXPECT_EQ(whole.data.data<int8_t>()[0], 0);  // 0.01 / (30 / 127) rounds to 0
  // uint8 asymmetric per column (axis 1).
  QuantizedWeight per_column = quantize_weight(w, DType::kUInt8, 1, false, false);
  EXPECT_EQ(per_column.zero_point.dtype(), DType::kUInt8);
  ASSERT_EQ(per_column.zero_point.numel(), 3);
  EXPECT_EQ(per_column.data.data<uint8_t>()[4], 0);    // -20 is column 1's minimum
  EXPECT_EQ(per_column.data.data<uint8_t>()[5], 255);  // 30 is column 2's maximum
}

TEST(QuantParams, BiasScaleIsInputTimesWeightScale) {
  Tensor bias = Tensor::from_vector<float>(DType::kFloat, {2}, {1.0f, -2.0f});
  QuantizedBias b = quantize_bias(bias, 0.5f, {QParams{0.1f, 0}, QParams{0.2f, 0}});
  EXPECT_FLOAT_EQ(b.scale.data<float>()[0], 0.05f);
  EXPECT_FLOAT_EQ(b.scale.data<float>()[1], 0.1f);
  EXPECT_EQ(b.data.data<int32_t>()[0], 20);
  EXPECT_EQ(b.data.data<int32_t>()[1], -20);
}

// ---- calibration statistics ----

std::vector<float> ramp(float from, float to, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + (to - from) * float(i) / float(n - 1);
  return v;
}

TEST(Calibration, MinMaxStreamsOverRuns) {
  RangeCollector collector(CalibrationMethod::kMinMax, 0, 128, 99.999);
  EXPECT_FALSE(collector.seen());
  auto a = ramp(-1, 2, 100), b = ramp(-3, 0.5f, 100);
  collector.add(a.data(), a.size());
  collector.add(b.data(), b.size());
  EXPECT_TRUE(collector.seen());
  EXPECT_FLOAT_EQ(collector.range().rmin, -3);
  EXPECT_FLOAT_EQ(collector.range().rmax, 2);
}

TEST(Calibration, PercentileCutsTheTail) {
  // 10,000 values in [0, 1] and 10 outliers at 100: the 99.5th percentile of |x| ignores
  // them; the range never exceeds what was seen.
  RangeCollector collector(CalibrationMethod::kPercentile, 2048, 128, 99.5);
  auto values = ramp(0, 1, 10000);
  collector.add(values.data(), values.size());
  std::vector<float> outliers(10, 100.0f);
  collector.add(outliers.data(), outliers.size());  // widens the histogram by whole bins
  const TensorRange r = collector.range();
  EXPECT_NEAR(r.rmax, 0.995, 0.01);
  EXPECT_GE(r.rmin, 0.0f);  // clipped to the minimum seen
  EXPECT_GT(collector.histogram().counts.size(), 2048u);
  const auto total = std::accumulate(collector.histogram().counts.begin(),
                                     collector.histogram().counts.end(), int64_t{0});
  EXPECT_EQ(total, 10010);
}

TEST(Calibration, EntropyPicksAThresholdInsideTheRange) {
  // A narrow bulk plus rare far values: with more bins than quantized levels the KL search
  // has candidates, and the chosen threshold lies well inside the outliers.
  RangeCollector collector(CalibrationMethod::kEntropy, 1024, 128, 99.999);
  std::vector<float> values;
  for (int i = 0; i < 20000; ++i) values.push_back(std::sin(float(i)) * 0.5f);
  values.push_back(-8.0f);
  values.push_back(8.0f);
  collector.add(values.data(), values.size());
  const TensorRange r = collector.range();
  EXPECT_LT(r.rmax, 8.0f);
  EXPECT_GT(r.rmax, 0.4f);
  EXPECT_LT(r.rmin, -0.4f);
}

TEST(Calibration, ValueHistogramWidensSymmetrically) {
  RangeCollector collector(CalibrationMethod::kEntropy, 128, 128, 99.999);
  auto a = ramp(-1, 1, 1000), b = ramp(-4, 4, 1000);
  collector.add(a.data(), a.size());
  collector.add(b.data(), b.size());
  const Histogram& h = collector.histogram();
  EXPECT_GT(h.counts.size(), 128u);
  EXPECT_EQ(h.counts.size() % 2, 0u);
  EXPECT_NEAR(h.lo, -h.hi(), 1e-9);
  EXPECT_GE(h.hi(), 4.0);
  EXPECT_EQ(std::accumulate(h.counts.begin(), h.counts.end(), int64_t{0}), 2000);
}

// ---- dynamic mode ----

TEST(QuantizeDynamic, MatMulAndGemmBecomeMatMulInteger) {
  Mlp mlp;
  Model float_model = clone_model(mlp.builder.model());
  QuantizeOptions options;
  auto report = quantize(mlp.builder.model(), options);
  ASSERT_TRUE(report.ok()) << report.error();
  auto ops = op_counts(mlp.builder.model());
  EXPECT_EQ(ops["MatMulInteger"], 2u);
  EXPECT_EQ(ops["DynamicQuantizeLinear"], 2u);
  EXPECT_EQ(ops.count("MatMul"), 0u);
  EXPECT_EQ(ops.count("Gemm"), 0u);
  // simplify first: MatMul + Add became a Gemm.
  EXPECT_EQ(report.value().quantized, (std::map<std::string, size_t>{{"Gemm", 2}}));
  EXPECT_EQ(mlp.builder.model().graph().outputs().front()->name(),
            float_model.graph().outputs().front()->name());
  // Per channel by default: one zero point per column of each weight.
  for (const Node* node : mlp.builder.model().graph().nodes()) {
    if (node->op_type() == "MatMulInteger") EXPECT_EQ(node->input(3)->initializer().rank(), 1u);
  }
  const Tensor expected = run_one(std::move(float_model), mlp.builder.feeds());
  const Tensor actual = run_one(std::move(mlp.builder.model()), mlp.builder.feeds());
  EXPECT_GT(cosine(expected, actual), 0.999);
}

TEST(QuantizeDynamic, ConvOnlyWhenAskedAndExcludedNodesStayFloat) {
  Model model = load_test_model("convnet_bn_tiny");
  QuantizeOptions options;
  options.op_types = {"Conv", "Gemm"};
  // The simplified model's first Conv (names survive simplify's BN fusion).
  std::string first_conv;
  for (const Node* node : model.graph().nodes()) {
    if (node->op_type() == "Conv" && first_conv.empty()) first_conv = node->name();
  }
  options.nodes_to_exclude = {first_conv, "no_such_node"};
  Model float_model = clone_model(model);
  const NamedValues feeds = test_inputs(model, "convnet_bn_tiny");
  auto report = quantize(model, options);
  ASSERT_TRUE(report.ok()) << report.error();
  auto ops = op_counts(model);
  EXPECT_GE(ops["ConvInteger"], 1u);
  EXPECT_EQ(ops["Conv"], 1u);
  ASSERT_EQ(report.value().warnings.size(), 1u);
  EXPECT_NE(report.value().warnings[0].find("no_such_node"), std::string::npos);
  EXPECT_GT(cosine(run_one(std::move(float_model), feeds), run_one(std::move(model), feeds)),
            0.999);
}

// ids -> Gather(constant table) -> a; Gather(input data, [1]) -> b.
struct Embedding {
  GraphBuilder builder{13};
  Tensor table = random_floats({50, 8}, 11);
  Embedding() {
    Value* ids = builder.input(
        "ids", Tensor::from_vector(DType::kInt64, {2, 3}, std::vector<int64_t>{0, 7, 49, 3, 3, 12}),
        true);
    builder.output(builder.op("Gather", {builder.constant(table), ids}));
    Value* data = builder.input("data", random_floats({4, 8}, 12), true);
    builder.output(builder.op("Gather", {data, builder.ints({1})}));
  }
};

std::vector<Tensor> run_all(Model model, const NamedValues& feeds) {
  auto session = Session::create(std::move(model), SessionOptions::reference());
  EXPECT_TRUE(session.ok()) << session.error();
  auto outputs = session.value()->run(feeds);
  EXPECT_TRUE(outputs.ok()) << outputs.error();
  std::vector<Tensor> tensors;
  for (auto& [name, value] : outputs.value()) tensors.push_back(value.tensor());
  return tensors;
}

TEST(QuantizeDynamic, GatherOnAConstantTableBecomesUint8RowsAndDequantizeLinear) {
  Embedding embedding;
  Model model = clone_model(embedding.builder.model());
  auto report = quantize(model, QuantizeOptions{});
  ASSERT_TRUE(report.ok()) << report.error();
  auto ops = op_counts(model);
  EXPECT_EQ(ops["Gather"], 2u);
  EXPECT_EQ(ops["DequantizeLinear"], 1u);
  EXPECT_EQ(report.value().quantized, (std::map<std::string, size_t>{{"Gather", 1}}));
  // The Gather of graph input data stays float, saying why.
  size_t left_float = 0;
  for (const auto& node : report.value().nodes) {
    left_float += node.how.find("data is not a constant float table") != std::string::npos;
  }
  EXPECT_EQ(left_float, 1u);
  // ONNX Runtime's GatherQuant: a uint8 table, one scale and zero point, dequantized after.
  float scale = 0;
  for (const Node* node : model.graph().nodes()) {
    if (node->op_type() != "DequantizeLinear") continue;
    const Node* gather = node->input(0)->producer();
    ASSERT_TRUE(gather && gather->op_type() == "Gather");
    const Tensor& q = gather->input(0)->initializer();
    EXPECT_EQ(q.dtype(), DType::kUInt8);
    EXPECT_EQ(q.shape(), embedding.table.shape());
    EXPECT_EQ(node->input(1)->initializer().rank(), 0u);
    EXPECT_EQ(node->input(2)->initializer().dtype(), DType::kUInt8);
    scale = node->input(1)->initializer().data<float>()[0];
  }
  ASSERT_GT(scale, 0.0f);
  const auto expected = run_all(clone_model(embedding.builder.model()), embedding.builder.feeds());
  const auto actual = run_all(std::move(model), embedding.builder.feeds());
  ASSERT_EQ(actual.size(), 2u);
  for (int64_t i = 0; i < expected[0].numel(); ++i) {
    EXPECT_NEAR(actual[0].data<float>()[i], expected[0].data<float>()[i], scale * 0.5001f);
  }
  for (int64_t i = 0; i < expected[1].numel(); ++i) {
    EXPECT_EQ(actual[1].data<float>()[i], expected[1].data<float>()[i]);
  }
}

TEST(QuantizeDynamic, GatherIsLeftFloatWhenNotAskedFor) {
  Embedding embedding;
  QuantizeOptions options;
  options.op_types = {"MatMul"};
  auto report = quantize(embedding.builder.model(), options);
  ASSERT_TRUE(report.ok()) << report.error();
  auto ops = op_counts(embedding.builder.model());
  EXPECT_EQ(ops.count("DequantizeLinear"), 0u);
  EXPECT_EQ(ops["Gather"], 2u);
}

TEST(QuantizeDynamic, MatMulOnATransposedTiedTableIsQuantized) {
  // GPT-2: logits = h x Transpose(wte), wte also the token embedding (simplify leaves the
  // Transpose rather than hold the table twice).
  GraphBuilder builder{13};
  const Tensor table = random_floats({40, 8}, 31);
  Value* wte = builder.constant(table);
  Value* ids = builder.input(
      "ids", Tensor::from_vector(DType::kInt64, {1, 4}, std::vector<int64_t>{3, 0, 39, 7}), true);
  Value* h = builder.op("Gather", {wte, ids});
  Value* wt = builder.op("Transpose", {wte}, [](Node* n) { testing::set_ints(n, "perm", {1, 0}); });
  builder.output(builder.op("MatMul", {h, wt}));
  Model model = clone_model(builder.model());
  QuantizeOptions options;
  options.simplify_first = false;  // a table this small would be folded, Transpose and all
  auto report = quantize(model, options);
  ASSERT_TRUE(report.ok()) << report.error();
  auto ops = op_counts(model);
  EXPECT_EQ(ops["MatMulInteger"], 1u);
  EXPECT_EQ(ops.count("Transpose"), 0u);
  EXPECT_EQ(ops.count("MatMul"), 0u);
  // No float copy of the table is left.
  for (const Value* value : model.graph().initializers()) {
    EXPECT_NE(value->initializer().dtype() == DType::kFloat && value->initializer().numel() >= 320,
              true)
        << value->name();
  }
  const auto expected = run_all(clone_model(builder.model()), builder.feeds());
  const auto actual = run_all(std::move(model), builder.feeds());
  EXPECT_GT(cosine(expected[0], actual[0]), 0.99);
}

// ---- calibration memory ----

TEST(WeightFile, AnonymousWeightsBecomeViewsOfAMappedFile) {
  GraphBuilder builder{13};
  const Tensor big = random_floats({512, 600}, 21);  // 1.2 MB
  const Tensor small = random_floats({16}, 22);
  Value* a = builder.constant(big);
  Value* b = builder.constant(small);
  const MappedWeights moved = map_anonymous_weights(builder.graph(), 1 << 20);
  EXPECT_EQ(moved.tensors, 1u);
  EXPECT_EQ(moved.bytes, big.nbytes());
  ASSERT_NE(a->initializer().file_region(), nullptr);
  EXPECT_EQ(b->initializer().file_region(), nullptr);
  EXPECT_TRUE(a->initializer().same_contents(big));
  EXPECT_EQ(a->initializer().name(), big.name());
  // Its pages can leave the resident set: read back from the file they are the same.
  a->initializer().release_mapped_pages();
  EXPECT_TRUE(a->initializer().same_contents(big));
  // Already mapped: nothing moves twice.
  EXPECT_EQ(map_anonymous_weights(builder.graph(), 1 << 20).tensors, 0u);
}

// ---- static mode ----

TEST(QuantizeStatic, QdqAroundConvsWithCalibratedRanges) {
  Model model = load_test_model("convnet_bn_tiny");
  Model float_model = clone_model(model);
  const NamedValues feeds = test_inputs(model, "convnet_bn_tiny");
  QuantizeOptions options;
  options.mode = QuantizeMode::kStatic;
  options.per_channel = true;
  size_t calls = 0;
  options.calibration_source = [&](size_t index) -> std::optional<CalibrationSample> {
    EXPECT_EQ(index, calls++);  // one sample at a time, in order
    if (index >= 3) return std::nullopt;
    return CalibrationSample{feeds, "sample " + std::to_string(index)};
  };
  auto report = quantize(model, options);
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report.value().calibration_samples, 3u);
  EXPECT_GT(report.value().calibrated_tensors, 5u);
  auto ops = op_counts(model);
  EXPECT_GT(ops["QuantizeLinear"], 5u);
  EXPECT_GT(ops["DequantizeLinear"], ops["QuantizeLinear"]);  // weights and biases have DQ only
  // Every Conv reads dequantized data, weight and bias.
  for (const Node* node : model.graph().nodes()) {
    if (node->op_type() != "Conv") continue;
    for (const Value* input : node->inputs()) {
      ASSERT_NE(input->producer(), nullptr) << node->describe();
      EXPECT_EQ(input->producer()->op_type(), "DequantizeLinear") << node->describe();
    }
  }
  EXPECT_GT(cosine(run_one(std::move(float_model), feeds), run_one(std::move(model), feeds)),
            0.995);
}

// A transformer sublayer whose residual stream carries one outlier channel, as BERT's does:
// x -> MatMul(W) -> Add(b) -> Add(stream) -> Mul(gamma), the Mul standing for LayerNorm's
// learned scale, nearly 0 on the outlier channel.
struct ResidualWithOutlier {
  GraphBuilder builder{13};
  NamedValues samples[4];
  ResidualWithOutlier() {
    auto stream = [](uint64_t seed) {
      Tensor t = random_floats({8, 16}, seed);
      for (int64_t row = 0; row < 8; ++row) t.mutable_data<float>()[row * 16 + 3] += 300.0f;
      return t;
    };
    Tensor w = random_floats({16, 16}, 13);
    for (int64_t i = 0; i < w.numel(); ++i) w.mutable_data<float>()[i] *= 0.25f;
    Value* x = builder.input("x", random_floats({8, 16}, 11), true);
    Value* s = builder.input("stream", stream(12), true);
    Value* h = builder.op("MatMul", {x, builder.constant(std::move(w))});
    h = builder.op("Add", {h, builder.constant(random_floats({16}, 14))});
    Value* r = builder.op("Add", {s, h});
    Tensor gamma = Tensor::from_vector(DType::kFloat, {16}, std::vector<float>(16, 1.0f));
    gamma.mutable_data<float>()[3] = 1e-3f;
    builder.output(builder.op("Mul", {r, builder.constant(std::move(gamma))}));
    for (uint64_t i = 0; i < 4; ++i) {
      samples[i] = {{"x", random_floats({8, 16}, 20 + i)}, {"stream", stream(30 + i)}};
    }
  }
  QuantizeOptions options() const {
    QuantizeOptions o;
    o.mode = QuantizeMode::kStatic;
    o.calibration_source = [this](size_t index) -> std::optional<CalibrationSample> {
      if (index >= 3) return std::nullopt;
      return CalibrationSample{samples[index], "sample " + std::to_string(index)};
    };
    return o;
  }
};

TEST(QuantizeStatic, DefaultsKeepTheResidualStreamAndLayerNormFloat) {
  ResidualWithOutlier block;
  const NamedValues& held_out = block.samples[3];
  Model float_model = clone_model(block.builder.model());
  const Tensor expected = run_one(clone_model(float_model), held_out);

  // The default op types: the MatMul with its bias (a Gemm after simplify) is int8; the
  // residual Add (read by the float Mul) and the Mul (a graph output) are left float, with
  // why.
  Model model = clone_model(float_model);
  auto report = quantize(model, block.options());
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report.value().quantized.size(), 1u);
  EXPECT_EQ(report.value().quantized.count("Add") + report.value().quantized.count("Mul"), 0u);
  size_t left_float = 0;
  for (const QuantizedNode& node : report.value().nodes) {
    if (node.how.find("only between int8 ops") != std::string::npos) ++left_float;
  }
  EXPECT_EQ(left_float, 2u);  // the residual Add and the Mul
  const double cosine_default = cosine(expected, run_one(std::move(model), held_out));
  EXPECT_GT(cosine_default, 0.999);

  // Naming the op types quantizes what they name, as ONNX Runtime's tool does: the
  // residual stream's one per-tensor scale, set by the outlier channel, swamps the others.
  Model every_add = clone_model(float_model);
  QuantizeOptions options = block.options();
  options.op_types = {"MatMul", "Gemm", "Add", "Mul"};
  report = quantize(every_add, options);
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report.value().quantized["Add"], 1u);
  EXPECT_EQ(report.value().quantized["Mul"], 1u);
  EXPECT_LT(cosine(expected, run_one(std::move(every_add), held_out)), 0.99);
}

TEST(QuantizeStatic, QOperatorUsesQLinearConvAndMatMul) {
  for (const char* name : {"convnet_bn_tiny", "gpt2_tiny"}) {
    Model model = load_test_model(name);
    Model float_model = clone_model(model);
    const NamedValues feeds = test_inputs(model, name);
    QuantizeOptions options;
    options.mode = QuantizeMode::kStatic;
    options.format = QuantFormat::kQOperator;
    options.calibration_samples = 2;
    auto report = quantize(model, options);
    ASSERT_TRUE(report.ok()) << report.error();
    auto ops = op_counts(model);
    EXPECT_GT(ops["QLinearConv"] + ops["QLinearMatMul"], 0u) << name;
    EXPECT_EQ(ops.count("Conv"), 0u) << name;
    EXPECT_GT(cosine(run_one(std::move(float_model), feeds), run_one(std::move(model), feeds)),
              0.99)
        << name;
  }
}

// ---- bad input ----

TEST(QuantizeErrors, AlreadyQuantizedModelIsRefused) {
  Mlp mlp;
  ASSERT_TRUE(quantize(mlp.builder.model(), {}).ok());
  auto again = quantize(mlp.builder.model(), {});
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().find("already quantized"), std::string::npos) << again.error();
  EXPECT_NE(again.error().find("DynamicQuantizeLinear"), std::string::npos) << again.error();
}

TEST(QuantizeErrors, OpTypeThatCannotBeQuantizedIsNamed) {
  Mlp mlp;
  QuantizeOptions options;
  options.op_types = {"MatMul", "Softmax"};
  auto result = quantize(mlp.builder.model(), options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().find("'Softmax'"), std::string::npos) << result.error();
  EXPECT_EQ(op_counts(mlp.builder.model()).count("MatMulInteger"), 0u);  // nothing changed
  options.op_types = {"Add"};
  EXPECT_NE(quantize(mlp.builder.model(), options).error().find("dynamic"), std::string::npos);
}

TEST(QuantizeErrors, CalibrationDataMustMatchTheInputs) {
  auto attempt = [](CalibrationSample sample) {
    Mlp mlp;
    QuantizeOptions options;
    options.mode = QuantizeMode::kStatic;
    options.calibration_source = [sample](size_t i) -> std::optional<CalibrationSample> {
      if (i > 0) return std::nullopt;
      return sample;
    };
    auto result = quantize(mlp.builder.model(), options);
    EXPECT_FALSE(result.ok());
    return result.ok() ? std::string() : result.error();
  };
  std::string error = attempt({{{"y", Tensor(DType::kFloat, {4, 16})}}, "calib/0"});
  EXPECT_NE(error.find("calib/0"), std::string::npos) << error;
  EXPECT_NE(error.find("'y' is not an input"), std::string::npos) << error;
  error = attempt({{{"x", Tensor(DType::kInt64, {4, 16})}}, "calib/1"});
  EXPECT_NE(error.find("input 'x' is int64"), std::string::npos) << error;
  error = attempt({{{"x", Tensor(DType::kFloat, {4, 15})}}, "calib/2"});
  EXPECT_NE(error.find("input 'x' has shape [4,15]"), std::string::npos) << error;
  error = attempt({{}, "calib/3"});
  EXPECT_NE(error.find("input 'x' is missing"), std::string::npos) << error;
}

}  // namespace
}  // namespace onnxkit

// simplify's check: the sizes it gives dynamic input dims, its retries, its kernels, and
// models whose files list nodes out of order.
#include <gtest/gtest.h>

#include "../graph_test_util.h"
#include "core/half.h"
#include "onnxkit/simplify.h"
#include "simplify/check_inputs.h"

namespace onnxkit {
namespace {

using testing::Attr;
using testing::GraphBuilder;

Dim sym(const std::string& name) {
  return Dim::symbol(name);
}
Dim known(int64_t value) {
  return Dim::known(value);
}
Dim unnamed() {
  return Dim{};
}

Tensor random_weights(DType dtype, const Shape& shape, float scale = 0.1f) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = scale * static_cast<float>((i * 7919) % 17 - 8) / 8.0f;
    if (dtype == DType::kFloat16) {
      t.mutable_data<Float16>()[i] = Float16(v);
    } else {
      t.mutable_data<float>()[i] = v;
    }
  }
  return t;
}

const DynamicDim& find_dim(const CheckDims& dims, const std::string& symbol) {
  for (const DynamicDim& dim : dims.dims()) {
    if (dim.symbol == symbol) return dim;
  }
  throw Error("no dim " + symbol);
}

SimplifyReport simplify_ok(Model& model, const SimplifyOptions& options = {}) {
  auto report = simplify(model, options);
  if (!report) throw Error(report.error());
  EXPECT_TRUE(report.value().check_ok) << report.value().check_message;
  // kCheckAuto runs one check on these small models.
  EXPECT_EQ(report.value().checks_run,
            options.check_n == SimplifyOptions::kCheckAuto ? 1 : options.check_n);
  return std::move(report).value();
}

// The voice-activity detector's inputs: one `batch` across input, h and c.
Model state_model() {
  GraphBuilder b(13);
  Value* input = b.input("input", {sym("batch"), sym("sequence")}, DType::kFloat);
  Value* h = b.input("h", {known(2), sym("batch"), known(8)}, DType::kFloat);
  Value* c = b.input("c", {known(2), sym("batch"), known(8)}, DType::kFloat);
  Value* state = b.op("Add", {h, c});
  // [batch, sequence] -> [1, batch, sequence] + [2, batch, 1]: needs one batch everywhere.
  Value* x = b.op("Unsqueeze", {input, b.ints({0})});
  Value* s = b.op("ReduceMean", {state, b.ints({2})}, {Attr::Int("keepdims", 1)});
  b.output(b.op("Add", {x, s}));
  b.output(state);
  return std::move(b.model());
}

TEST(CheckDims, OneValuePerSymbolAcrossInputs) {
  Model model = state_model();
  CheckDims dims(model, {}, {}, {});
  ASSERT_EQ(dims.dims().size(), 2u);
  const DynamicDim& batch = find_dim(dims, "batch");
  EXPECT_EQ(batch.role, DimRole::kBatch);
  EXPECT_EQ(batch.places.size(), 3u);
  EXPECT_EQ(batch.candidates, std::vector<int64_t>{1});
  EXPECT_EQ(find_dim(dims, "sequence").role, DimRole::kSequence);
  EXPECT_EQ(dims.shape_of(*model.graph().inputs()[1], 0), (Shape{2, 1, 8}));
  EXPECT_EQ(dims.describe_try(0), "batch=1, sequence=16");

  SimplifyReport report = simplify_ok(model);
  EXPECT_EQ(report.check_dims, "batch=1, sequence=16");
}

TEST(CheckDims, AnUnnamedStateDimIsTheBatch) {
  // Silero VAD v5: input [?, ?], state [2, ?, 128], no dim names. The state's dim 1 is its
  // batch by the layout of RNN states, so it gets 1 as the input's first dim does; a sequence
  // size there would disagree with the data's batch on every try.
  GraphBuilder b(13);
  Value* input = b.input("input", {unnamed(), unnamed()}, DType::kFloat);
  Value* state = b.input("state", {known(2), unnamed(), known(8)}, DType::kFloat);
  Value* other = b.input("memory", {known(2), unnamed(), known(8)}, DType::kFloat);
  Value* s = b.op("ReduceMean", {b.op("Add", {state, other})},
                  {Attr::Ints("axes", {0, 2}), Attr::Int("keepdims", 0)});
  b.output(b.op("Add", {input, b.op("Unsqueeze", {s, b.ints({1})})}));
  CheckDims dims(b.model(), {}, {}, {});
  ASSERT_EQ(dims.dims().size(), 4u);
  EXPECT_EQ(dims.dims()[0].role, DimRole::kBatch);
  EXPECT_EQ(dims.dims()[2].role, DimRole::kBatch) << "state[1]";
  EXPECT_EQ(dims.dims()[3].role, DimRole::kOther) << "memory[1]: not named like a state";
  EXPECT_EQ(dims.shape_of(*b.graph().inputs()[1], 0), (Shape{2, 1, 8}));
}

TEST(CheckDims, DimsReachingConvSpatialAxesAreSpatial) {
  // NCHW with named dims, and NHWC through a Transpose with unnamed ones.
  GraphBuilder b(13);
  Value* x = b.input("x", {sym("N"), known(3), sym("H"), sym("W")}, DType::kFloat);
  Value* y = b.input("y", {unnamed(), unnamed(), unnamed(), known(3)}, DType::kFloat);
  Value* w = b.constant(random_weights(DType::kFloat, {4, 3, 3, 3}));
  Value* scaled = b.op("Mul", {x, b.scalar(0.5f)});
  b.output(b.op("Conv", {scaled, w}, {Attr::Ints("pads", {1, 1, 1, 1})}));
  Value* nchw = b.op("Transpose", {y}, {Attr::Ints("perm", {0, 3, 1, 2})});
  b.output(b.op("Conv", {nchw, w}));
  CheckDims dims(b.model(), {}, {}, {});
  ASSERT_EQ(dims.dims().size(), 6u);
  EXPECT_EQ(find_dim(dims, "N").role, DimRole::kBatch);
  EXPECT_EQ(find_dim(dims, "H").role, DimRole::kSpatial);
  EXPECT_EQ(find_dim(dims, "H").candidates.front(), 224);
  EXPECT_EQ(find_dim(dims, "W").role, DimRole::kSpatial);
  // y: dim 0 by position (a batch), dims 1 and 2 through the Transpose.
  EXPECT_EQ(dims.dims()[3].role, DimRole::kBatch);
  EXPECT_EQ(dims.dims()[4].role, DimRole::kSpatial);
  EXPECT_EQ(dims.dims()[5].role, DimRole::kSpatial);
  EXPECT_EQ(dims.shape_of(*b.graph().inputs()[1], 0), (Shape{1, 224, 224, 3}));
}

TEST(CheckDims, GivenSizesWinAndMustAgree) {
  Model model = state_model();
  CheckDims dims(model, {{"sequence", 40}}, {{"h", {2, 3, 8}}}, {});
  EXPECT_EQ(find_dim(dims, "batch").role, DimRole::kGiven);
  EXPECT_EQ(dims.describe_try(0), "batch=3, sequence=40");
  EXPECT_EQ(dims.tries(), 1u);
  try {
    CheckDims conflict(model, {{"batch", 1}}, {{"h", {2, 3, 8}}}, {});
    FAIL() << "expected a conflict";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--dim batch"), std::string::npos) << e.what();
  }
  EXPECT_THROW(CheckDims(model, {}, {{"h", {2, 3}}}, {}), Error);
  EXPECT_THROW(CheckDims(model, {}, {{"nope", {1}}}, {}), Error);
}

TEST(CheckInputs, SampleRateScalarsAndThePublicEntryPoint) {
  // Silero-style: an int64 scalar `sr` the graph compares with 16000 or 8000.
  GraphBuilder b(13);
  Value* audio = b.input("input", {sym("batch"), sym("sequence")}, DType::kFloat);
  Value* sr = b.input("sr", std::vector<Dim>{}, DType::kInt64);
  b.output(b.op("Identity", {audio}));
  b.output(b.op("Identity", {sr}));
  NamedValues inputs = make_check_inputs(b.model(), {{"sequence", 512}}, {}, 0);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].second.tensor().shape(), (Shape{1, 512}));
  EXPECT_EQ(*inputs[1].second.tensor().data<int64_t>(), 16000);
}

// x + upsample(pool(x)) by 64: the sizes only add up when H and W are multiples of 64, so
// 224 fails for a shape reason and 256 is tried next.
Model downsample_64x() {
  GraphBuilder b(13);
  Value* x = b.input("x", {sym("N"), known(2), sym("H"), sym("W")}, DType::kFloat);
  Value* pooled =
      b.op("MaxPool", {x}, {Attr::Ints("kernel_shape", {64, 64}), Attr::Ints("strides", {64, 64})});
  Tensor scales = Tensor::from_vector(DType::kFloat, {4}, std::vector<float>{1, 1, 64, 64});
  Value* up =
      b.op("Resize", {pooled, nullptr, b.constant(scales)}, {Attr::String("mode", "nearest")});
  b.output(b.op("Add", {x, up}));
  return std::move(b.model());
}

TEST(SimplifyCheck, TriesTheNextSizeAfterAShapeFailure) {
  Model model = downsample_64x();
  SimplifyReport report = simplify_ok(model);
  EXPECT_EQ(report.check_dims, "N=1, H=256, W=256");
  // The written model keeps its dims.
  EXPECT_EQ(value_type_to_string(model.graph().inputs()[0]->type()), "float[N,2,H,W]");
}

TEST(SimplifyCheck, TextLineHeightsAfterTheLargeSizes) {
  // A text-line recognizer (PP-OCRv4's rec net): its Reshape after the backbone holds the
  // trained height, here channels x H/2 = 96, so H must be 48; W is free.
  GraphBuilder b(13);
  Value* x = b.input("x", {sym("N"), known(3), sym("H"), sym("W")}, DType::kFloat);
  Value* w = b.constant(random_weights(DType::kFloat, {4, 3, 3, 3}));
  Value* conv =
      b.op("Conv", {x, w}, {Attr::Ints("pads", {1, 1, 1, 1}), Attr::Ints("strides", {2, 2})});
  Value* rows = b.op("ReduceMean", {conv}, {Attr::Ints("axes", {3}), Attr::Int("keepdims", 0)});
  Value* features = b.op("Reshape", {rows, b.ints({0, 96})});
  b.output(b.op("MatMul", {features, b.constant(random_weights(DType::kFloat, {96, 2}))}));
  SimplifyReport report = simplify_ok(b.model());
  EXPECT_EQ(report.check_dims, "N=1, H=48, W=48");
  EXPECT_EQ(value_type_to_string(b.graph().inputs()[0]->type()), "float[N,3,H,W]");
}

TEST(SimplifyCheck, AudioThroughUnsqueezeIntoConv1d) {
  // [batch, samples] -> [batch, 1, samples] -> a 400-sample window: 256 samples are too few.
  GraphBuilder b(13);
  Value* audio = b.input("audio", {sym("batch"), sym("samples")}, DType::kFloat);
  Value* frames = b.op("Unsqueeze", {audio, b.ints({1})});
  Value* w = b.constant(random_weights(DType::kFloat, {4, 1, 400}));
  b.output(b.op("Conv", {frames, w}, {Attr::Ints("strides", {160})}));
  CheckDims dims(b.model(), {}, {}, {});
  EXPECT_EQ(find_dim(dims, "samples").role, DimRole::kSpatial);
  EXPECT_EQ(find_dim(dims, "samples").spatial_rank, 1);
  SimplifyReport report = simplify_ok(b.model());
  EXPECT_EQ(report.check_dims, "batch=1, samples=512");
}

TEST(SimplifyCheck, SequenceLengthsGrowWhenTheEvidenceIsLost) {
  // Silero VAD's front end: [batch, sequence] reshaped to [batch, 1, sequence] with a shape
  // computed from its own Shape (which the evidence does not follow), then a 256-sample STFT
  // window: sequence 16 to 128 fail for a shape reason, 256 fits.
  GraphBuilder b(13);
  Value* audio = b.input("input", {sym("batch"), sym("sequence")}, DType::kFloat);
  Value* shape = b.op("Shape", {audio});
  Value* batch = b.op("Gather", {shape, b.ints({0})}, {Attr::Int("axis", 0)});
  Value* length = b.op("Gather", {shape, b.ints({1})}, {Attr::Int("axis", 0)});
  Value* target = b.op("Concat", {batch, b.ints({1}), length}, {Attr::Int("axis", 0)});
  Value* frames = b.op("Reshape", {audio, target});
  Value* w = b.constant(random_weights(DType::kFloat, {4, 1, 256}));
  b.output(b.op("Conv", {frames, w}, {Attr::Ints("strides", {128})}));
  CheckDims dims(b.model(), {}, {}, {});
  EXPECT_EQ(find_dim(dims, "sequence").role, DimRole::kSequence);
  SimplifyReport report = simplify_ok(b.model());
  EXPECT_EQ(report.check_dims, "batch=1, sequence=256");
  EXPECT_EQ(value_type_to_string(b.graph().inputs()[0]->type()), "float[batch,sequence]");
}

TEST(SimplifyCheck, WhenEverySizeFailsTheErrorListsTheDimsAndFlags) {
  GraphBuilder b(13);
  Value* x = b.input("x", {sym("N"), known(3), sym("H"), unnamed()}, DType::kFloat);
  Value* conv = b.op("Conv", {x, b.constant(random_weights(DType::kFloat, {4, 3, 1, 1}))});
  b.output(b.op("Add", {conv, b.constant(random_weights(DType::kFloat, {1, 4, 7, 5}))}));
  auto report = simplify(b.model(), SimplifyOptions());
  ASSERT_FALSE(report.ok());
  for (const char* expected :
       {"cannot be broadcast", "10 tries", "x[0]", "H (x[2])", "x[3]", "224, 256", "--dim NAME=V",
        "--test-input-shape NAME:D0,D1", "--overwrite-input-shape"}) {
    EXPECT_NE(report.error().find(expected), std::string::npos) << expected << "\n"
                                                                << report.error();
  }
}

// The check's generated inputs are held to max_tensor_bytes like the runs they feed: a
// declared [2^31 - 1] int64 input is refused, not allocated (fuzz:
// check_input_over_max_tensor_bytes).
TEST(SimplifyCheck, GeneratedInputsKeepTheTensorBound) {
  GraphBuilder b(13);
  Value* x = b.input("x", {known(int64_t{2147483647})}, DType::kInt64);
  b.output(b.op("Neg", {x}));
  SimplifyOptions options;
  options.max_tensor_bytes = size_t{1} << 20;
  options.check_n = 1;  // auto would skip a check this size
  auto report = simplify(b.model(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().find("check input 'x'"), std::string::npos) << report.error();
  EXPECT_NE(report.error().find("--max-tensor-bytes"), std::string::npos) << report.error();
}

TEST(SimplifyCheck, TestInputShapesSetTheCheckOnly) {
  Model model = downsample_64x();
  SimplifyOptions options;
  options.test_input_shapes["x"] = {2, 2, 128, 192};
  SimplifyReport report = simplify_ok(model, options);
  EXPECT_EQ(report.check_dims, "N=2, H=128, W=192");
  EXPECT_EQ(value_type_to_string(model.graph().inputs()[0]->type()), "float[N,2,H,W]");
}

TEST(SimplifyCheck, ReferenceKernelsOnRequest) {
  Model model = state_model();
  SimplifyOptions options;
  options.check_kernels = KernelTier::kReference;
  options.check_n = 2;
  simplify_ok(model, options);
}

// float16 converters (onnxconverter-common, keep_io_types) append the graph input's Cast
// after the nodes that read it: the check's copy of the model must still wire it up.
TEST(SimplifyCheck, Float16ModelWithTheInputCastListedLast) {
  GraphBuilder b(13);
  Value* x = b.input("x", {sym("N"), known(3), sym("H"), sym("W")}, DType::kFloat);
  Node* cast_in = b.node("Cast", {x}, {Attr::Int("to", static_cast<int64_t>(DType::kFloat16))});
  Value* w = b.constant(random_weights(DType::kFloat16, {4, 3, 3, 3}));
  Value* conv = b.op("Conv", {cast_in->output(0), w}, {Attr::Ints("pads", {1, 1, 1, 1})});
  Value* relu = b.op("Relu", {conv});
  Node* cast_out = b.node("Cast", {relu}, {Attr::Int("to", static_cast<int64_t>(DType::kFloat))});
  b.output(cast_out->output(0));
  b.graph().move_before(cast_in, nullptr);
  ASSERT_EQ(b.graph().nodes().back(), cast_in);

  SimplifyReport report = simplify_ok(b.model());
  EXPECT_EQ(report.check_dims, "N=1, H=224, W=224");
  // The model stays float16 inside.
  std::string ops;
  for (const Node* node : b.graph().nodes()) {
    ops += node->op_type() + " ";
    if (node->op_type() == "Conv") {
      EXPECT_EQ(node->input(1)->initializer().dtype(), DType::kFloat16);
    }
  }
  EXPECT_EQ(ops, "Cast Conv Relu Cast ");
}

// A float16 net whose Conv+BatchNormalization folding rounds the folded weights to float16:
// the simplified outputs move by about as much as 16-bit compute itself moves them, far
// beyond float32's tolerance. The check measures that floor (the input model in float32) and
// allows for it; the model stays float16 throughout.
TEST(SimplifyCheck, Float16OutputsAreCheckedAgainstTheirOwnPrecision) {
  GraphBuilder b(13);
  Value* x = b.input("x", {sym("N"), known(8), known(32), known(32)}, DType::kFloat16);
  for (int layer = 0; layer < 6; ++layer) {
    Value* w = b.constant(random_weights(DType::kFloat16, {8, 8, 3, 3}, 0.3f + 0.01f * layer));
    Value* conv = b.op("Conv", {x, w}, {Attr::Ints("pads", {1, 1, 1, 1})});
    Tensor scale = random_weights(DType::kFloat16, {8}, 0.5f);
    for (int64_t c = 0; c < 8; ++c) {
      scale.mutable_data<Float16>()[c] =
          Float16(1.1f + static_cast<float>(scale.mutable_data<Float16>()[c]));
    }
    Tensor variance = scale;
    Value* bn =
        b.op("BatchNormalization",
             {conv, b.constant(scale), b.constant(random_weights(DType::kFloat16, {8})),
              b.constant(random_weights(DType::kFloat16, {8}, 0.2f)), b.constant(variance)});
    x = b.op("Relu", {bn});
  }
  b.output(x);
  SimplifyReport report = simplify_ok(b.model());
  ASSERT_EQ(report.checks.size(), 1u);
  EXPECT_GT(report.checks[0].precision_floor, 0.0);
  EXPECT_GT(report.checks[0].max_abs_error, 1e-4) << "float32's tolerance would have failed";
  EXPECT_EQ(report.after.ops.count("BatchNormalization"), 0u);
  EXPECT_EQ(b.graph().outputs()[0]->type().elem_type, DType::kFloat16);
  for (const Value* weight : b.graph().initializers()) {
    EXPECT_EQ(weight->initializer().dtype(), DType::kFloat16) << weight->name();
  }
}

// A float32 model has no precision floor: the float32 tolerance alone applies.
TEST(SimplifyCheck, Float32OutputsHaveNoPrecisionFloor) {
  Model model = downsample_64x();
  SimplifyReport report = simplify_ok(model);
  ASSERT_EQ(report.checks.size(), 1u);
  EXPECT_EQ(report.checks[0].precision_floor, 0.0);
}

}  // namespace
}  // namespace onnxkit

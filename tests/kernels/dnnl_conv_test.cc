// The oneDNN Conv / FusedConv / ConvTranspose / pooling kernels against the reference
// kernels: each case runs one model on a reference session and on a session with the
// optimized kernels, over odd sizes, strides, pads, dilations, groups, 1-D to 3-D, batch 1
// and 3. FusedConv is compared with its unfused graph (Conv, Add, activation nodes) on the
// reference kernels.
#include "kernels/dnnl_conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../graph_test_util.h"
#include "kernels/dnnl_common.h"
#include "onnxkit/session.h"
#include "ops/blocked_ops.h"
#include "ops/fused_ops.h"
#include "ops/registry.h"
#include "registry/builtin_registry.h"
#include "runtime/compare.h"
#include "runtime/random_inputs.h"

namespace onnxkit {
namespace {

using testing::run_model;
using testing::set_float;
using testing::set_floats;
using testing::set_int;
using testing::set_ints;
using testing::set_string;

// ---- building models ----

// A case's attributes left empty are not set: the op's defaults apply.
void set_if_given(Node* node, const std::string& name, const std::vector<int64_t>& values) {
  if (!values.empty()) set_ints(node, name, values);
}
void set_if_given(Node* node, const std::string& name, const std::vector<float>& values) {
  if (!values.empty()) set_floats(node, name, values);
}
void set_if_given(Node* node, const std::string& name, const std::string& value) {
  if (!value.empty()) set_string(node, name, value);
}

// A model under construction with the feeds its graph inputs take.
struct Builder {
  Model model;
  NamedValues feeds;

  explicit Builder(int64_t opset = 17) {
    model.ir_version = 8;
    model.opset_imports = {{"", opset}, {std::string(kOnnxkitDomain), kOnnxkitDomainVersion}};
  }
  Graph& graph() { return model.graph(); }

  // A graph input fed with `tensor` (declared shape: symbolic dims unless `static_shape`),
  // or an initializer when `constant`.
  Value* operand(const std::string& name, const Tensor& tensor, bool constant,
                 bool static_shape = false) {
    if (constant) return graph().add_initializer(name, tensor);
    std::vector<Dim> dims;
    for (size_t d = 0; d < tensor.rank(); ++d) {
      dims.push_back(static_shape ? Dim::known(tensor.shape()[d])
                                  : Dim::symbol(name + "_" + std::to_string(d)));
    }
    Value* value = graph().add_input(name, ValueType::tensor(tensor.dtype(), dims));
    feeds.emplace_back(name, tensor);
    return value;
  }
  Value* scalar(const std::string& name, float value) {
    return graph().add_initializer(name,
                                   Tensor::from_vector(DType::kFloat, {}, std::vector{value}));
  }
  Value* op(const std::string& type, std::vector<Value*> inputs, const std::string& output,
            const std::function<void(Node*)>& attributes = {}) {
    Node* node = graph().add_node(type, std::move(inputs), {output}, "", output + "_node");
    if (attributes) attributes(node);
    return node->outputs()[0];
  }
};

constexpr Tolerance kTolerance{1e-4, 1e-5, true};

::testing::AssertionResult same_tensors(const RuntimeValue& actual, const RuntimeValue& expected) {
  Comparison c = compare_values(actual, expected, kTolerance);
  if (c.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << c.message;
}

Tensor random_values(DType dtype, const Shape& shape, std::mt19937_64& rng) {
  return random_tensor(dtype, shape, rng);
}

// ---- Conv / ConvTranspose cases ----

struct ConvCase {
  std::string op = "Conv";
  Shape x, w;  // W in ONNX's layout
  int64_t group = 1;
  std::vector<int64_t> strides, pads, dilations, output_padding, output_shape;
  std::string auto_pad;
  bool bias = true;
  bool constant_weights = true;
  bool static_shape = false;  // X's shape declared in the graph (the prepacked plan serves it)
  int64_t opset = 17;
  DType dtype = DType::kFloat;

  std::string describe() const {
    auto list = [](const std::vector<int64_t>& v) { return shape_to_string(v); };
    return op + " x" + list(x) + " w" + list(w) + " group " + std::to_string(group) + " strides " +
           list(strides) + " pads " + list(pads) + " dilations " + list(dilations) +
           " output_padding " + list(output_padding) + " output_shape " + list(output_shape) +
           " auto_pad '" + auto_pad + "' bias " + std::to_string(bias) + " constant " +
           std::to_string(constant_weights) + " opset " + std::to_string(opset) + " " +
           std::string(dtype_name(dtype));
  }
};

Builder conv_model(const ConvCase& c, std::mt19937_64& rng) {
  Builder b(c.opset);
  const int64_t maps = c.op == "Conv" ? c.w[0] : c.w[1] * c.group;
  std::vector<Value*> inputs{
      b.operand("X", random_values(c.dtype, c.x, rng), false, c.static_shape),
      b.operand("W", random_values(c.dtype, c.w, rng), c.constant_weights)};
  if (c.bias)
    inputs.push_back(b.operand("B", random_values(c.dtype, {maps}, rng), c.constant_weights));
  b.op(c.op, inputs, "Y", [&](Node* node) {
    set_int(node, "group", c.group);
    set_if_given(node, "strides", c.strides);
    set_if_given(node, "pads", c.pads);
    set_if_given(node, "dilations", c.dilations);
    set_if_given(node, "output_padding", c.output_padding);
    set_if_given(node, "output_shape", c.output_shape);
    set_if_given(node, "auto_pad", c.auto_pad);
  });
  b.graph().add_output(b.graph().nodes().back()->outputs()[0]);
  return b;
}

void check_conv(const ConvCase& c, const SessionOptions& options = testing::optimized()) {
  SCOPED_TRACE(c.describe());
  std::mt19937_64 rng(7);
  Builder reference = conv_model(c, rng);
  rng.seed(7);
  Builder optimized = conv_model(c, rng);
  const NamedValues expected =
      run_model(std::move(reference.model), reference.feeds, SessionOptions::reference());
  const NamedValues actual = run_model(std::move(optimized.model), optimized.feeds, options);
  ASSERT_EQ(actual.size(), 1u);
  EXPECT_TRUE(same_tensors(actual[0].second, expected[0].second));
}

// reused_memory hands back the object of an (owner, role) while the data pointer stays,
// a new one over the new pointer when it moves, and keeps owners and roles apart.
TEST(DnnlCommonTest, ReusedMemoryFollowsTheDataPointer) {
  const dnnl::memory::desc desc = dnnl_util::plain_f32_desc({2, 3});
  std::vector<float> a(6), b(6);
  const uint64_t owner = dnnl_util::new_memory_owner();
  const dnnl::memory first = dnnl_util::reused_memory(owner, 0, desc, a.data());
  EXPECT_EQ(first.get_data_handle(), a.data());
  EXPECT_EQ(dnnl_util::reused_memory(owner, 0, desc, a.data()).get(), first.get());
  const dnnl::memory moved = dnnl_util::reused_memory(owner, 0, desc, b.data());
  EXPECT_EQ(moved.get_data_handle(), b.data());
  EXPECT_EQ(first.get_data_handle(), a.data()) << "a caller's object is never repointed";
  EXPECT_NE(dnnl_util::reused_memory(owner, 1, desc, b.data()).get(), moved.get());
  const uint64_t other = dnnl_util::new_memory_owner();
  EXPECT_NE(other, owner);
  EXPECT_NE(dnnl_util::reused_memory(other, 0, desc, b.data()).get(), moved.get());
  const dnnl::memory::desc wider = dnnl_util::plain_f32_desc({4, 3});
  EXPECT_EQ(dnnl_util::reused_memory(other + 1, 0, wider, b.data()).get_desc(), wider);
}

// rebound_memory keeps one object per (owner, role) and thread, pointed at each call's data.
TEST(DnnlCommonTest, ReboundMemoryRepointsOneObject) {
  const dnnl::memory::desc desc = dnnl_util::plain_f32_desc({2, 3});
  std::vector<float> a(6), b(6);
  const uint64_t owner = dnnl_util::new_memory_owner();
  const dnnl::memory first = dnnl_util::rebound_memory(owner, 0, desc, a.data());
  EXPECT_EQ(first.get_data_handle(), a.data());
  const dnnl::memory moved = dnnl_util::rebound_memory(owner, 0, desc, b.data());
  EXPECT_EQ(moved.get(), first.get());
  EXPECT_EQ(moved.get_data_handle(), b.data());
  EXPECT_EQ(dnnl_util::rebound_memory(owner, 0, desc, a.data()).get_data_handle(), a.data());
  EXPECT_NE(dnnl_util::rebound_memory(owner, 1, desc, a.data()).get(), first.get());
  EXPECT_NE(dnnl_util::rebound_memory(dnnl_util::new_memory_owner(), 0, desc, a.data()).get(),
            first.get());
  // Another thread has its own object.
  dnnl_memory_t elsewhere = nullptr;
  std::thread([&] {
    elsewhere = dnnl_util::rebound_memory(owner, 0, desc, b.data()).get();
  }).join();
  EXPECT_NE(elsewhere, first.get());
  EXPECT_EQ(first.get_data_handle(), a.data());
}

TEST(DnnlConvTest, RegisteredForEveryConvOpset) {
  const OpRegistry& registry = builtin_registry();
  for (int64_t opset : {1, 6, 11, 13, 17, 21}) {
    EXPECT_NE(registry.find_optimized("", "Conv", opset), nullptr) << opset;
    EXPECT_NE(registry.find_optimized("", "ConvTranspose", opset), nullptr) << opset;
    EXPECT_NE(registry.find_optimized("", "MaxPool", opset), nullptr) << opset;
    EXPECT_NE(registry.find_optimized("", "AveragePool", opset), nullptr) << opset;
    EXPECT_NE(registry.find_optimized("", "GlobalAveragePool", opset), nullptr) << opset;
  }
  EXPECT_NE(registry.find_optimized(kOnnxkitDomain, "FusedConv", 1), nullptr);
}

TEST(DnnlConvTest, Conv2dShapes) {
  struct Kernel {
    int64_t size, stride, pad, dilation;
  };
  const std::vector<Kernel> kernels{{1, 1, 0, 1}, {1, 2, 0, 1}, {3, 1, 1, 1},
                                    {3, 2, 1, 1}, {3, 1, 0, 2}, {5, 1, 2, 1},
                                    {5, 2, 1, 1}, {7, 2, 3, 1}, {3, 2, 2, 3}};
  for (const Kernel& k : kernels) {
    for (int64_t batch : {1, 3}) {
      ConvCase c;
      c.x = {batch, 5, 13, 11};
      c.w = {7, 5, k.size, k.size};
      c.strides = {k.stride, k.stride};
      c.pads = {k.pad, k.pad, k.pad, k.pad};
      c.dilations = {k.dilation, k.dilation};
      c.bias = batch == 1;
      check_conv(c);
    }
  }
}

TEST(DnnlConvTest, Conv2dChannelsAndAsymmetricPads) {
  for (int64_t channels : {1, 3, 16, 17, 64}) {
    ConvCase c;
    c.x = {1, channels, 9, 10};
    c.w = {32, channels, 3, 3};
    c.pads = {0, 1, 2, 1};
    c.strides = {1, 2};
    check_conv(c);
  }
  ConvCase rect;  // rectangular kernel, different strides and dilations per axis
  rect.x = {2, 6, 15, 12};
  rect.w = {10, 6, 3, 5};
  rect.strides = {2, 1};
  rect.dilations = {1, 2};
  rect.pads = {1, 0, 2, 3};
  check_conv(rect);
}

// 3x3 stride 1 with channel counts oneDNN's Winograd convolution takes; pointwise convs
// (run as a GEMM over NCHW); both with odd spatial sizes.
TEST(DnnlConvTest, WinogradAndPointwiseShapes) {
  for (const Shape& x : std::vector<Shape>{{1, 64, 14, 14}, {3, 32, 9, 11}, {1, 128, 7, 7}}) {
    ConvCase c;
    c.x = x;
    c.w = {x[1] == 32 ? 48 : x[1], x[1], 3, 3};
    c.pads = {1, 1, 1, 1};
    check_conv(c);
    c.w = {80, x[1], 1, 1};
    c.pads = {};
    check_conv(c);
  }
}

// A one-shot session (simplify's check, `onnxkit run`) runs the same shapes on the
// direct convolutions: no Winograd, no GEMM over NCHW.
TEST(DnnlConvTest, OneShotSessions) {
  SessionOptions one_shot = testing::optimized();
  one_shot.one_shot = true;
  for (const Shape& x : std::vector<Shape>{{1, 64, 14, 14}, {3, 32, 9, 11}, {1, 24, 20, 20}}) {
    ConvCase c;
    c.x = x;
    c.w = {x[1] == 32 ? 48 : x[1], x[1], 3, 3};
    c.pads = {1, 1, 1, 1};
    check_conv(c, one_shot);
    c.static_shape = true;  // the plan made at creation
    check_conv(c, one_shot);
    c.w = {80, x[1], 1, 1};
    c.pads = {};
    check_conv(c, one_shot);
    c.static_shape = false;
    check_conv(c, one_shot);
  }
}

// Windows that tile X (kernel == stride, no padding: ViT's patch embedding, ConvNeXt's
// stem) run as one GEMM over the patches; also where the last rows and columns of X are left
// over, with rectangular patches, batches, constant and graph-input weights, no bias.
TEST(DnnlConvTest, PatchConvolutions) {
  struct Patch {
    Shape x;
    int64_t maps, kh, kw;
  };
  const std::vector<Patch> patches{{{1, 3, 32, 32}, 24, 16, 16}, {{2, 3, 35, 33}, 19, 16, 16},
                                   {{1, 8, 13, 11}, 16, 4, 4},   {{3, 5, 10, 9}, 7, 2, 3},
                                   {{1, 32, 14, 14}, 64, 2, 2},  {{1, 1, 6, 8}, 3, 2, 1}};
  for (const Patch& p : patches) {
    for (bool constant : {true, false}) {
      ConvCase c;
      c.x = p.x;
      c.w = {p.maps, p.x[1], p.kh, p.kw};
      c.strides = {p.kh, p.kw};
      c.constant_weights = constant;
      c.bias = constant || p.x[0] > 1;
      c.static_shape = constant;
      check_conv(c);
    }
  }
}

TEST(DnnlConvTest, GroupedAndDepthwise) {
  for (int64_t group : {2, 3, 12}) {
    for (int64_t stride : {1, 2}) {
      ConvCase c;
      c.x = {3, 12, 11, 9};
      c.w = {24, 12 / group, 3, 3};
      c.group = group;
      c.strides = {stride, stride};
      c.pads = {1, 1, 1, 1};
      check_conv(c);
    }
  }
  for (int64_t size : {3, 5, 7}) {  // depthwise, as MobileNet / EfficientNet / ConvNeXt use it
    ConvCase c;
    c.x = {1, 32, 17, 17};
    c.w = {32, 1, size, size};
    c.group = 32;
    c.pads = std::vector<int64_t>(4, size / 2);
    check_conv(c);
  }
  ConvCase multiplier;  // depthwise with 2 maps per channel
  multiplier.x = {1, 8, 10, 10};
  multiplier.w = {16, 1, 3, 3};
  multiplier.group = 8;
  check_conv(multiplier);
}

TEST(DnnlConvTest, AutoPad) {
  for (const std::string pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    for (int64_t stride : {1, 2}) {
      for (int64_t size : {2, 3, 4}) {
        ConvCase c;
        c.x = {1, 4, 10, 9};
        c.w = {6, 4, size, size};
        c.strides = {stride, stride};
        c.auto_pad = pad;
        check_conv(c);
      }
    }
  }
}

TEST(DnnlConvTest, OneAndThreeDimensional) {
  ConvCase c1;
  c1.x = {3, 4, 23};
  c1.w = {5, 4, 3};
  c1.strides = {2};
  c1.pads = {1, 2};
  check_conv(c1);
  c1.dilations = {2};
  c1.group = 2;
  c1.w = {6, 2, 5};
  check_conv(c1);
  ConvCase c3;
  c3.x = {1, 3, 7, 8, 9};
  c3.w = {4, 3, 3, 3, 3};
  c3.pads = {1, 1, 1, 1, 1, 1};
  check_conv(c3);
  c3.strides = {2, 1, 2};
  c3.dilations = {1, 2, 1};
  c3.x = {2, 4, 9, 8, 7};
  c3.w = {4, 2, 3, 3, 1};
  c3.group = 2;
  check_conv(c3);
}

// 1-D depthwise convs run channels-last on oneDNN's jit depthwise kernel (Silero VAD's).
TEST(DnnlConvTest, OneDimensionalDepthwise) {
  ConvCase c;
  c.x = {1, 40, 9};
  c.w = {40, 1, 5};
  c.group = 40;
  c.pads = {2, 2};
  check_conv(c);
  c.x = {2, 24, 13};
  c.w = {24, 1, 3};
  c.group = 24;
  c.strides = {2};
  c.pads = {1, 0};
  c.static_shape = true;
  check_conv(c);
  c.constant_weights = false;
  c.bias = false;
  check_conv(c);
}

TEST(DnnlConvTest, WeightsAtRunTimeAndDeclaredShapes) {
  ConvCase c;
  c.x = {1, 8, 12, 12};
  c.w = {16, 8, 3, 3};
  c.pads = {1, 1, 1, 1};
  c.constant_weights = false;
  check_conv(c);
  c.group = 4;
  c.w = {16, 2, 3, 3};
  check_conv(c);
  c.constant_weights = true;
  c.static_shape = true;
  check_conv(c);
  c.opset = 9;  // Conv-1 semantics
  check_conv(c);
}

TEST(DnnlConvTest, OtherTypesRunOnTheReferenceKernel) {
  ConvCase c;
  c.x = {1, 3, 7, 7};
  c.w = {4, 3, 3, 3};
  c.dtype = DType::kDouble;
  check_conv(c);
  c.x = {0, 3, 7, 7};  // an empty batch
  c.dtype = DType::kFloat;
  check_conv(c);
}

TEST(DnnlConvTest, ConvTranspose) {
  ConvCase base;
  base.op = "ConvTranspose";
  base.x = {1, 6, 7, 5};
  base.w = {6, 4, 3, 3};
  check_conv(base);
  for (int64_t stride : {1, 2, 3}) {
    ConvCase c = base;
    c.x = {3, 6, 7, 5};
    c.strides = {stride, stride};
    c.pads = {1, 0, 1, 2};
    check_conv(c);
    if (stride > 1) {
      c.output_padding = {1, stride - 1};
      check_conv(c);
    }
  }
  ConvCase grouped = base;
  grouped.group = 3;
  grouped.w = {6, 2, 4, 4};
  grouped.strides = {2, 2};
  grouped.dilations = {2, 1};
  check_conv(grouped);
  ConvCase depthwise = base;
  depthwise.group = 6;
  depthwise.w = {6, 1, 3, 3};
  depthwise.strides = {2, 2};
  depthwise.pads = {1, 1, 1, 1};
  check_conv(depthwise);
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{15, 11}, {1, 4, 16, 12}, {14, 10}}) {
    for (int64_t opset : {9, 17}) {
      ConvCase c = base;
      c.strides = {2, 2};
      c.output_shape = shape;
      c.opset = opset;
      check_conv(c);
    }
  }
  for (const std::string pad : {"SAME_UPPER", "SAME_LOWER"}) {
    ConvCase c = base;
    c.strides = {2, 2};
    c.auto_pad = pad;
    check_conv(c);
  }
  ConvCase one = base;
  one.x = {2, 3, 9};
  one.w = {3, 5, 4};
  one.strides = {2};
  one.pads = {1, 0};
  check_conv(one);
  ConvCase three = base;
  three.x = {1, 2, 4, 5, 3};
  three.w = {2, 3, 3, 2, 3};
  three.strides = {2, 1, 2};
  check_conv(three);
  ConvCase runtime = base;
  runtime.constant_weights = false;
  runtime.group = 2;
  runtime.w = {6, 3, 3, 3};
  check_conv(runtime);
}

// ---- FusedConv against Conv + Add + activation on the reference kernels ----

struct FusedCase {
  std::string activation;
  std::vector<float> params;
  bool bias = true;
  bool residual = false;
  Shape x{2, 6, 9, 8};
  Shape w{8, 6, 3, 3};
  int64_t group = 1;
  std::vector<int64_t> strides{1, 1}, pads{1, 1, 1, 1};
};

// Appends the activation `name` as standard ONNX nodes after `x`.
Value* unfused_activation(Builder& b, const FusedCase& c, Value* x) {
  const std::string& a = c.activation;
  auto param = [&](size_t i, float fallback) {
    return i < c.params.size() ? c.params[i] : fallback;
  };
  if (a.empty()) return x;
  if (a == "Relu" || a == "Sigmoid" || a == "Tanh" || a == "HardSwish") return b.op(a, {x}, "act");
  if (a == "LeakyRelu") {
    return b.op(a, {x}, "act", [&](Node* n) { set_float(n, "alpha", param(0, 0.01f)); });
  }
  if (a == "HardSigmoid") {
    return b.op(a, {x}, "act", [&](Node* n) {
      set_float(n, "alpha", param(0, 0.2f));
      set_float(n, "beta", param(1, 0.5f));
    });
  }
  if (a == "Clip") {
    return b.op("Clip",
                {x, b.scalar("lo", param(0, -INFINITY)), b.scalar("hi", param(1, INFINITY))},
                "act");
  }
  if (a == "Silu") return b.op("Mul", {x, b.op("Sigmoid", {x}, "sig")}, "act");
  Value* half_x = b.op("Mul", {x, b.scalar("half", 0.5f)}, "half_x");
  Value* inner;
  if (a == "Gelu") {
    inner = b.op("Erf", {b.op("Mul", {x, b.scalar("rsqrt2", 0.70710678f)}, "scaled")}, "erf");
  } else {  // GeluTanh
    Value* cube = b.op("Mul", {b.op("Mul", {x, x}, "sq"), x}, "cube");
    Value* sum = b.op("Add", {x, b.op("Mul", {cube, b.scalar("k", 0.044715f)}, "kc")}, "sum");
    inner = b.op("Tanh", {b.op("Mul", {sum, b.scalar("c", 0.7978845608f)}, "arg")}, "tanh");
  }
  return b.op("Mul", {half_x, b.op("Add", {inner, b.scalar("one", 1.0f)}, "onep")}, "act");
}

void check_fused(const FusedCase& c) {
  SCOPED_TRACE("FusedConv activation '" + c.activation + "' bias " + std::to_string(c.bias) +
               " residual " + std::to_string(c.residual) + " x " + shape_to_string(c.x) +
               " group " + std::to_string(c.group));
  auto operands = [&](Builder& b) {
    std::mt19937_64 rng(11);
    std::vector<Value*> inputs{b.operand("X", random_values(DType::kFloat, c.x, rng), false),
                               b.operand("W", random_values(DType::kFloat, c.w, rng), true)};
    inputs.push_back(c.bias ? b.operand("B", random_values(DType::kFloat, {c.w[0]}, rng), true)
                            : nullptr);
    if (c.residual) {
      Shape y{c.x[0], c.w[0]};
      for (size_t d = 2; d < c.x.size(); ++d) {
        y.push_back((c.x[d] + c.pads[d - 2] + c.pads[d] - c.w[d]) / c.strides[d - 2] + 1);
      }
      inputs.push_back(b.operand("Z", random_values(DType::kFloat, y, rng), false));
    }
    return inputs;
  };
  auto conv_attributes = [&](Node* n) {
    set_int(n, "group", c.group);
    set_if_given(n, "strides", c.strides);
    set_if_given(n, "pads", c.pads);
  };

  Builder fused;
  std::vector<Value*> inputs = operands(fused);
  if (!c.residual && !c.bias) inputs.pop_back();
  Node* node =
      fused.graph().add_node("FusedConv", inputs, {"Y"}, std::string(kOnnxkitDomain), "fused");
  conv_attributes(node);
  set_if_given(node, "activation", c.activation);
  set_if_given(node, "activation_params", c.params);
  fused.graph().add_output(node->outputs()[0]);

  Builder unfused;
  std::vector<Value*> parts = operands(unfused);
  std::vector<Value*> conv_inputs{parts[0], parts[1]};
  if (c.bias) conv_inputs.push_back(parts[2]);
  Value* y = unfused.op("Conv", conv_inputs, "conv", conv_attributes);
  if (c.residual) y = unfused.op("Add", {y, parts[3]}, "add");
  unfused.graph().add_output(unfused_activation(unfused, c, y));

  const NamedValues expected =
      run_model(std::move(unfused.model), unfused.feeds, SessionOptions::reference());
  const NamedValues actual = run_model(std::move(fused.model), fused.feeds, testing::optimized());
  EXPECT_TRUE(same_tensors(actual[0].second, expected[0].second));
}

TEST(DnnlConvTest, FusedConvEveryActivation) {
  const std::vector<std::pair<std::string, std::vector<float>>> activations{
      {"", {}},
      {"Relu", {}},
      {"LeakyRelu", {0.2f}},
      {"LeakyRelu", {}},
      {"Clip", {-0.5f, 1.5f}},
      {"Clip", {0.0f, 6.0f}},
      {"Sigmoid", {}},
      {"Tanh", {}},
      {"HardSigmoid", {0.3f, 0.4f}},
      {"HardSigmoid", {}},
      {"HardSwish", {}},
      {"Silu", {}},
      {"Gelu", {}},
      {"GeluTanh", {}}};
  for (const auto& [activation, params] : activations) {
    for (bool residual : {false, true}) {
      for (bool bias : {false, true}) {
        FusedCase c;
        c.activation = activation;
        c.params = params;
        c.residual = residual;
        c.bias = bias;
        check_fused(c);
      }
    }
  }
}

// A 1-D conv written as 2-D over a one-column image ([k, 1] kernels, W = 1, as jax2tf
// writes magika's) runs as oneDNN's 1-D conv over the same bytes; Y keeps its 4-D shape.
TEST(DnnlConvTest, OneColumnImagesRunAsOneDimensional) {
  ConvCase c;
  c.x = {2, 8, 20, 1};
  c.w = {6, 8, 5, 1};
  check_conv(c);
  c.pads = {2, 0, 1, 0};
  c.strides = {2, 3};
  c.static_shape = true;
  check_conv(c);
  c.group = 2;
  c.w = {6, 4, 3, 1};
  c.dilations = {2, 1};
  c.constant_weights = false;
  check_conv(c);
  // Padded along W: the window leaves the column, so the conv stays 2-D.
  c.pads = {1, 1, 1, 1};
  check_conv(c);
  FusedCase fused;
  fused.x = {1, 16, 12, 1};
  fused.w = {16, 16, 3, 1};
  fused.pads = {1, 0, 1, 0};
  fused.activation = "Relu";
  fused.residual = true;
  check_fused(fused);
}

TEST(DnnlConvTest, FusedConvShapes) {
  FusedCase strided;  // stride 2, batch 3, a 1x1 projection with residual
  strided.x = {3, 16, 14, 14};
  strided.w = {32, 16, 1, 1};
  strided.strides = {2, 2};
  strided.pads = {0, 0, 0, 0};
  strided.activation = "Relu";
  strided.residual = true;
  check_fused(strided);
  FusedCase winograd;  // 3x3 stride 1, 32 channels
  winograd.x = {2, 32, 10, 9};
  winograd.w = {32, 32, 3, 3};
  winograd.activation = "Relu";
  winograd.residual = true;
  check_fused(winograd);
  winograd.activation = "HardSigmoid";
  check_fused(winograd);
  FusedCase pointwise;
  pointwise.x = {1, 32, 10, 9};
  pointwise.w = {64, 32, 1, 1};
  pointwise.pads = {0, 0, 0, 0};
  pointwise.activation = "Clip";
  pointwise.params = {0.0f, 6.0f};
  pointwise.residual = true;
  check_fused(pointwise);
  FusedCase depthwise;
  depthwise.x = {1, 24, 15, 15};
  depthwise.w = {24, 1, 5, 5};
  depthwise.group = 24;
  depthwise.pads = {2, 2, 2, 2};
  depthwise.activation = "Silu";
  depthwise.residual = true;
  check_fused(depthwise);
  FusedCase one;  // 1-D
  one.x = {2, 5, 19};
  one.w = {7, 5, 3};
  one.strides = {1};
  one.pads = {1, 1};
  one.activation = "Gelu";
  one.residual = true;
  check_fused(one);
  FusedCase patches;  // kernel == stride: the GEMM over patches with the post-op activation
  patches.x = {2, 3, 34, 33};
  patches.w = {20, 3, 8, 8};
  patches.strides = {8, 8};
  patches.pads = {0, 0, 0, 0};
  patches.activation = "Gelu";
  check_fused(patches);
  patches.activation = "Relu";
  patches.residual = true;  // not a patch GEMM: the residual needs the convolution
  check_fused(patches);
}

TEST(DnnlConvTest, FusedConvRejectsUnknownActivation) {
  Builder b;
  std::mt19937_64 rng(1);
  Value* x = b.operand("X", random_values(DType::kFloat, {1, 2, 4, 4}, rng), false);
  Value* w = b.operand("W", random_values(DType::kFloat, {2, 2, 1, 1}, rng), true);
  Node* node = b.graph().add_node("FusedConv", {x, w}, {"Y"}, std::string(kOnnxkitDomain), "bad");
  set_if_given(node, "activation", "Softplus");
  b.graph().add_output(node->outputs()[0]);
  auto session = Session::create(std::move(b.model), testing::optimized());
  ASSERT_FALSE(session);
  EXPECT_NE(session.error().find("bad"), std::string::npos) << session.error();
  EXPECT_NE(session.error().find("Softplus"), std::string::npos) << session.error();
}

// ---- sessions: shapes changing between runs, concurrent runs, overridden weights ----

TEST(DnnlConvTest, ShapesChangeBetweenRunsAndRunsAreConcurrent) {
  std::mt19937_64 rng(3);
  auto build = [&] {
    std::mt19937_64 weights_rng(5);
    Builder b;
    Value* x = b.graph().add_input(
        "X",
        ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("n"), Dim::known(8),
                                                          Dim::symbol("h"), Dim::symbol("w")}));
    Value* w = b.operand("W", random_values(DType::kFloat, {12, 8, 3, 3}, weights_rng), true);
    Value* bias = b.operand("B", random_values(DType::kFloat, {12}, weights_rng), true);
    b.graph().add_output(b.op("Conv", {x, w, bias}, "Y", [](Node* n) {
      set_ints(n, "pads", {1, 1, 1, 1});
    }));
    return std::move(b.model);
  };
  auto reference = Session::create(build(), SessionOptions::reference());
  auto optimized = Session::create(build(), testing::optimized());
  ASSERT_TRUE(reference && optimized);
  const std::vector<Shape> shapes{{1, 8, 5, 5}, {3, 8, 13, 7}, {1, 8, 32, 32}, {2, 8, 1, 1}};
  std::vector<NamedValues> feeds, expected;
  for (const Shape& shape : shapes) {
    feeds.push_back({{"X", random_values(DType::kFloat, shape, rng)}});
    expected.push_back(reference.value()->run(feeds.back()).value());
  }
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      auto actual = optimized.value()->run(feeds[i]);
      ASSERT_TRUE(actual) << actual.error();
      EXPECT_TRUE(same_tensors(actual.value()[0].second, expected[i][0].second)) << i;
    }
  }
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (size_t t = 0; t < failures.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int repeat = 0; repeat < 5; ++repeat) {
        const size_t i = (t + static_cast<size_t>(repeat)) % shapes.size();
        auto actual = optimized.value()->run(feeds[i]);
        if (!actual ||
            !compare_values(actual.value()[0].second, expected[i][0].second, kTolerance).ok) {
          ++failures[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t t = 0; t < failures.size(); ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(DnnlConvTest, FedWeightsOverrideTheirInitializer) {
  auto build = [] {
    std::mt19937_64 rng(9);
    Builder b;
    Value* x = b.operand("X", random_values(DType::kFloat, {1, 4, 6, 6}, rng), false);
    // W is a graph input with an initializer (a default the caller may override).
    Value* w = b.graph().add_initializer("W", random_values(DType::kFloat, {4, 4, 3, 3}, rng));
    b.graph().add_input(w);
    b.graph().add_output(b.op("Conv", {x, w}, "Y"));
    return b;
  };
  std::mt19937_64 rng(10);
  Builder reference = build(), optimized = build();
  NamedValues feeds = reference.feeds;
  feeds.emplace_back("W", random_values(DType::kFloat, {4, 4, 3, 3}, rng));
  const NamedValues expected =
      run_model(std::move(reference.model), feeds, SessionOptions::reference());
  const NamedValues actual = run_model(std::move(optimized.model), feeds, testing::optimized());
  EXPECT_TRUE(same_tensors(actual[0].second, expected[0].second));
}

TEST(DnnlConvTest, BadShapesFailNamingTheNode) {
  Builder b;
  std::mt19937_64 rng(1);
  Value* x = b.operand("X", random_values(DType::kFloat, {1, 3, 8, 8}, rng), false);
  Value* w = b.operand("W", random_values(DType::kFloat, {4, 5, 3, 3}, rng), true);
  b.graph().add_output(b.op("Conv", {x, w}, "mismatch"));
  auto session = Session::create(std::move(b.model), testing::optimized());
  ASSERT_TRUE(session) << session.error();
  auto result = session.value()->run(b.feeds);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().find("mismatch_node"), std::string::npos) << result.error();
  EXPECT_NE(result.error().find("channels"), std::string::npos) << result.error();
}

// ---- pooling ----

struct PoolCase {
  PoolCase(std::string op, Shape x, std::vector<int64_t> kernel = {},
           std::vector<int64_t> strides = {}, std::vector<int64_t> pads = {},
           std::vector<int64_t> dilations = {})
      : op(std::move(op)),
        x(std::move(x)),
        kernel(std::move(kernel)),
        strides(std::move(strides)),
        pads(std::move(pads)),
        dilations(std::move(dilations)) {}

  std::string op;
  Shape x;
  std::vector<int64_t> kernel, strides, pads, dilations;
  std::string auto_pad;
  int64_t ceil_mode = 0;
  int64_t count_include_pad = 0;
  bool indices = false;
  int64_t opset = 17;
};

void check_pool(const PoolCase& c) {
  SCOPED_TRACE(c.op + " x" + shape_to_string(c.x) + " kernel " + shape_to_string(c.kernel) +
               " strides " + shape_to_string(c.strides) + " pads " + shape_to_string(c.pads) +
               " dilations " + shape_to_string(c.dilations) + " auto_pad '" + c.auto_pad +
               "' ceil " + std::to_string(c.ceil_mode) + " include_pad " +
               std::to_string(c.count_include_pad));
  auto build = [&] {
    std::mt19937_64 rng(13);
    Builder b(c.opset);
    Value* x = b.operand("X", random_values(DType::kFloat, c.x, rng), false);
    std::vector<std::string> outputs{"Y"};
    if (c.indices) outputs.push_back("I");
    Node* node = b.graph().add_node(c.op, {x}, outputs, "", "pool");
    set_if_given(node, "kernel_shape", c.kernel);
    set_if_given(node, "strides", c.strides);
    set_if_given(node, "pads", c.pads);
    set_if_given(node, "dilations", c.dilations);
    set_if_given(node, "auto_pad", c.auto_pad);
    if (c.ceil_mode) set_int(node, "ceil_mode", c.ceil_mode);
    if (c.count_include_pad) set_int(node, "count_include_pad", c.count_include_pad);
    for (Value* output : node->outputs()) b.graph().add_output(output);
    return b;
  };
  Builder reference = build(), optimized = build();
  const NamedValues expected =
      run_model(std::move(reference.model), reference.feeds, SessionOptions::reference());
  const NamedValues actual =
      run_model(std::move(optimized.model), optimized.feeds, testing::optimized());
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_TRUE(same_tensors(actual[i].second, expected[i].second)) << actual[i].first;
  }
}

TEST(DnnlPoolTest, MaxAndAveragePool2d) {
  struct Window {
    int64_t kernel, stride, pad;
  };
  for (const Window& w :
       std::vector<Window>{{2, 2, 0}, {3, 2, 1}, {3, 1, 1}, {5, 3, 2}, {7, 1, 0}}) {
    for (int64_t ceil : {0, 1}) {
      for (const std::string op : {"MaxPool", "AveragePool"}) {
        for (int64_t include_pad : {0, 1}) {
          if (op == "MaxPool" && include_pad) continue;
          PoolCase c{op,
                     {3, 5, 13, 12},
                     {w.kernel, w.kernel},
                     {w.stride, w.stride},
                     {w.pad, w.pad, w.pad, w.pad}};
          c.ceil_mode = ceil;
          c.count_include_pad = include_pad;
          check_pool(c);
        }
      }
    }
  }
  PoolCase asymmetric{"AveragePool", {1, 4, 10, 9}, {3, 2}, {2, 1}, {1, 0, 0, 1}};
  asymmetric.count_include_pad = 1;
  check_pool(asymmetric);
  PoolCase dilated{"MaxPool", {2, 3, 15, 14}, {3, 3}, {1, 2}, {2, 2, 2, 2}, {2, 3}};
  check_pool(dilated);
  dilated.ceil_mode = 1;
  check_pool(dilated);
}

TEST(DnnlPoolTest, AutoPadOneAndThreeDimensionalOldOpsets) {
  for (const std::string pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    for (const std::string op : {"MaxPool", "AveragePool"}) {
      PoolCase c{op, {1, 3, 11, 10}, {3, 3}, {2, 2}};
      c.auto_pad = pad;
      c.count_include_pad = op == "AveragePool";
      check_pool(c);
    }
  }
  check_pool({"MaxPool", {2, 3, 17}, {3}, {2}, {1, 1}});
  check_pool({"AveragePool", {2, 3, 17}, {4}, {3}, {0, 2}});
  check_pool({"MaxPool", {1, 2, 7, 6, 5}, {2, 2, 2}, {2, 2, 2}});
  check_pool({"AveragePool", {1, 2, 7, 6, 5}, {3, 3, 3}, {1, 2, 1}, {1, 1, 1, 1, 1, 1}});
  for (int64_t opset : {1, 7, 8, 10, 11, 12}) {
    PoolCase c{"MaxPool", {1, 4, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}};
    c.opset = opset;
    check_pool(c);
    c.op = "AveragePool";
    check_pool(c);
  }
}

TEST(DnnlPoolTest, MaxPoolWithIndicesUsesTheReference) {
  PoolCase c{"MaxPool", {1, 3, 8, 8}, {2, 2}, {2, 2}};
  c.indices = true;
  check_pool(c);
}

TEST(DnnlPoolTest, GlobalPools) {
  for (const Shape& shape : std::vector<Shape>{
           {1, 64, 7, 7}, {3, 5, 13, 11}, {2, 3, 1, 1}, {2, 4, 33}, {1, 2, 3, 4, 5}}) {
    for (const std::string op : {"GlobalAveragePool", "GlobalMaxPool"}) {
      PoolCase c{op, shape};
      check_pool(c);
    }
  }
}

// ---- blocked-layout ops (ops/blocked_ops.h) between reorders, against the standard ops ----

// X -> ReorderToBlocked -> `op` (blocked inputs 0 and, for BlockedConv, Z) ->
// ReorderFromBlocked, on the optimized kernels; `standard` builds the plain graph run on the
// reference kernels. X is blocked when its channels fill whole blocks or `block_padded_x`
// (else BlockedConv reads it plain); Y's and Z's channel counts need not fill blocks.
void check_blocked(const std::function<Value*(Builder&, Value* x, Value* z, bool blocked)>& build,
                   const Shape& x_shape, const Shape& z_shape = {}, bool block_padded_x = false) {
  int64_t y_channels = -1;
  auto make = [&](bool blocked) {
    std::mt19937_64 rng(21);
    Builder b;
    Value* x = b.operand("X", random_values(DType::kFloat, x_shape, rng), false);
    Value* z = z_shape.empty() ? nullptr
                               : b.operand("Z", random_values(DType::kFloat, z_shape, rng), false);
    auto to_blocked = [&](Value* v) {
      Node* n = b.graph().add_node(std::string(kReorderToBlocked), {v}, {v->name() + "_blocked"},
                                   std::string(kOnnxkitDomain));
      return n->outputs()[0];
    };
    if (blocked) {
      if (x_shape[1] % kChannelBlock == 0 || block_padded_x) x = to_blocked(x);
      if (z) z = to_blocked(z);
    }
    Value* y = build(b, x, z, blocked);
    if (blocked) {
      Node* back = b.graph().add_node(std::string(kReorderFromBlocked), {y}, {"Y_plain"},
                                      std::string(kOnnxkitDomain));
      set_int(back, std::string(kChannelsAttribute), y_channels);
      y = back->outputs()[0];
    }
    b.graph().add_output(y);
    return b;
  };
  Builder standard = make(false);
  const NamedValues expected =
      run_model(std::move(standard.model), standard.feeds, SessionOptions::reference());
  ASSERT_EQ(expected[0].second.tensor().rank(), 4u);
  y_channels = expected[0].second.tensor().shape()[1];
  Builder blocked = make(true);
  const NamedValues actual =
      run_model(std::move(blocked.model), blocked.feeds, testing::optimized());
  EXPECT_TRUE(same_tensors(actual[0].second, expected[0].second));
}

struct BlockedConvGeometry {
  Shape x, w;
  int64_t group, stride;
};

// BlockedConv with an activation and a residual Z against Conv, Add and the unfused
// activation. With `every_lane`, X is blocked even when padded and Y comes back with all
// its lanes, against the standard Y padded with zero channels.
void check_blocked_conv(const std::string& activation, const std::vector<float>& params,
                        const BlockedConvGeometry& g, bool every_lane) {
  SCOPED_TRACE(activation + " x" + shape_to_string(g.x) + " w" + shape_to_string(g.w));
  const int64_t pad = g.w[2] / 2;
  const int64_t out_h = (g.x[2] + 2 * pad - g.w[2]) / g.stride + 1;
  const int64_t out_w = (g.x[3] + 2 * pad - g.w[3]) / g.stride + 1;
  FusedCase c;
  c.activation = activation;
  c.params = params;
  check_blocked(
      [&](Builder& b, Value* x, Value* z, bool blocked) {
        std::mt19937_64 rng(5);
        Value* w = b.operand("W", random_values(DType::kFloat, g.w, rng), true);
        Value* bias = b.operand("B", random_values(DType::kFloat, {g.w[0]}, rng), true);
        auto attributes = [&](Node* n) {
          set_int(n, "group", g.group);
          set_ints(n, "strides", {g.stride, g.stride});
          set_ints(n, "pads", std::vector<int64_t>(4, pad));
        };
        if (blocked) {
          Node* n = b.graph().add_node(std::string(kBlockedConv), {x, w, bias, z}, {"Yb"},
                                       std::string(kOnnxkitDomain), "blocked_conv");
          attributes(n);
          set_if_given(n, "activation", activation);
          set_if_given(n, "activation_params", params);
          return n->outputs()[0];
        }
        Value* y = unfused_activation(
            b, c, b.op("Add", {b.op("Conv", {x, w, bias}, "conv", attributes), z}, "sum"));
        if (!every_lane) return y;
        const int64_t padding = channel_blocks(g.w[0]) * kChannelBlock - g.w[0];
        Value* pads =
            b.operand("pads",
                      Tensor::from_vector(DType::kInt64, {8},
                                          std::vector<int64_t>{0, 0, 0, 0, 0, padding, 0, 0}),
                      true);
        return b.op("Pad", {y, pads}, "pad");
      },
      g.x, {g.x[0], g.w[0], out_h, out_w}, every_lane);
}

TEST(DnnlBlockedTest, BlockedConvWithResidualAndActivation) {
  for (const auto& [activation, params] : std::vector<std::pair<std::string, std::vector<float>>>{
           {"Relu", {}}, {"Clip", {0.0f, 6.0f}}, {"Silu", {}}, {"HardSigmoid", {}}, {"Tanh", {}}}) {
    for (const BlockedConvGeometry& g :
         std::vector<BlockedConvGeometry>{{{2, 32, 10, 9}, {32, 32, 3, 3}, 1, 1},
                                          {{1, 16, 11, 11}, {48, 16, 1, 1}, 1, 1},
                                          {{1, 32, 12, 12}, {32, 1, 3, 3}, 32, 2},
                                          {{1, 3, 13, 13}, {16, 3, 3, 3}, 1, 2},
                                          // plain X whose channels fill no block
                                          {{1, 24, 9, 9}, {32, 24, 1, 1}, 1, 1},
                                          {{2, 40, 7, 6}, {48, 40, 3, 3}, 1, 1},
                                          {{1, 32, 8, 8}, {16, 32, 3, 3}, 1, 2},
                                          // Y (and Z) padded to a whole block
                                          {{1, 32, 9, 9}, {24, 32, 1, 1}, 1, 1},
                                          {{1, 3, 11, 11}, {40, 3, 3, 3}, 1, 2}}) {
      check_blocked_conv(activation, params, g, false);
    }
  }
}

TEST(DnnlBlockedTest, BlockedPools) {
  struct PoolSpec {
    std::string op;
    std::vector<int64_t> kernel, strides, pads;
    int64_t ceil = 0, include_pad = 0;
  };
  for (const PoolSpec& p :
       std::vector<PoolSpec>{{"MaxPool", {3, 3}, {2, 2}, {1, 1, 1, 1}},
                             {"MaxPool", {2, 2}, {2, 2}, {0, 0, 0, 0}, 1},
                             {"AveragePool", {3, 3}, {1, 1}, {1, 1, 1, 1}},
                             {"AveragePool", {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 1},
                             {"GlobalAveragePool", {}, {}, {}},
                             {"GlobalMaxPool", {}, {}, {}}}) {
    SCOPED_TRACE(p.op);
    for (const Shape& x : std::vector<Shape>{{2, 32, 11, 10}, {2, 24, 11, 10}, {1, 40, 7, 7}}) {
      check_blocked(
          [&](Builder& b, Value* x, Value*, bool blocked) {
            Node* n = b.graph().add_node(blocked ? "Blocked" + p.op : p.op, {x}, {"pooled"},
                                         blocked ? std::string(kOnnxkitDomain) : "", "pool");
            set_if_given(n, "kernel_shape", p.kernel);
            set_if_given(n, "strides", p.strides);
            set_if_given(n, "pads", p.pads);
            if (p.ceil) set_int(n, "ceil_mode", 1);
            if (p.include_pad) set_int(n, "count_include_pad", 1);
            return n->outputs()[0];
          },
          x, {}, true);
    }
  }
}

// Padded X too (MobileNet's 24 and EfficientNet's 40 channels between convs): the
// depthwise, pointwise, 3x3 and grouped kernels read the padding lanes as zeros, and write
// zeros there whatever the activation (Sigmoid's 0.5 is zeroed again): Y comes back with
// every lane, against the standard graph's Y padded with zero channels.
TEST(DnnlBlockedTest, BlockedConvOnPaddedChannels) {
  for (const std::string activation : {"Clip", "Sigmoid", "Silu"}) {
    const std::vector<float> params =
        activation == "Clip" ? std::vector<float>{0.0f, 6.0f} : std::vector<float>{};
    for (const BlockedConvGeometry& g :
         std::vector<BlockedConvGeometry>{{{1, 24, 10, 10}, {24, 1, 3, 3}, 24, 1},
                                          {{2, 40, 9, 9}, {40, 1, 5, 5}, 40, 2},
                                          {{1, 24, 8, 8}, {144, 24, 1, 1}, 1, 1},
                                          {{1, 144, 8, 8}, {24, 144, 1, 1}, 1, 1},
                                          {{1, 24, 9, 9}, {40, 24, 3, 3}, 1, 2},
                                          {{1, 24, 6, 6}, {24, 12, 3, 3}, 2, 1}}) {
      check_blocked_conv(activation, params, g, true);
    }
  }
}

// A server batching at every size up to its max batch asks the kernels for one plan per
// size; past the cache's bound only the least recently used plan is dropped, so the sizes in
// use are never rebuilt.
TEST(DnnlPlanCacheTest, KeepsTheShapesInUseWhenFull) {
  dnnl_util::PlanCache<int64_t> cache;
  constexpr int64_t kMax = static_cast<int64_t>(dnnl_util::PlanCache<int64_t>::kMaxPlans);
  auto get = [&](int64_t batch) {
    return *cache.get({batch, 3, 224, 224}, [&] { return batch * 10; });
  };
  for (int64_t batch = 1; batch <= kMax; ++batch) EXPECT_EQ(get(batch), batch * 10);
  EXPECT_EQ(cache.built(), static_cast<size_t>(kMax));
  for (int64_t batch = 2; batch <= kMax; ++batch) get(batch);  // all but batch 1 used again
  EXPECT_EQ(cache.built(), static_cast<size_t>(kMax)) << "a cached shape was rebuilt";
  EXPECT_EQ(get(kMax + 1), (kMax + 1) * 10);  // full: evicts batch 1 only
  EXPECT_EQ(cache.size(), static_cast<size_t>(kMax));
  for (int64_t batch = 2; batch <= kMax + 1; ++batch) get(batch);
  EXPECT_EQ(cache.built(), static_cast<size_t>(kMax) + 1) << "a plan in use was evicted";
  EXPECT_EQ(get(1), 10);  // the evicted one is built again
  EXPECT_EQ(cache.built(), static_cast<size_t>(kMax) + 2);
}

}  // namespace
}  // namespace onnxkit

#include <cmath>

#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

enum class HalfAt { kEnd, kOnSum, kOnX, kDivByTwoAtEnd };
enum class Cube { kPow, kMulInner, kMulOuter };

// x -> Relu -> GELU(...) -> Tanh (the Relu and Tanh keep the GELU inside the graph).
struct GeluGraph {
  bool tanh = false;
  HalfAt half = HalfAt::kEnd;
  bool erf_by_mul = false;  // x * 0.70710678 instead of x / 1.41421356
  Cube cube = Cube::kPow;
  float sqrt2 = 1.4142135381698608f;
  float inv_sqrt2 = 0.70710678f;
  float sqrt_2_over_pi = 0.7978845834732056f;
  float cube_coefficient = 0.044714998453855515f;
};

Model gelu_model(const GeluGraph& spec) {
  Model model = empty_model(13);
  GraphBuilder b(model);
  Value* x = b.op("Relu", {b.input("x", {3, -1, 7})});
  Value* f = nullptr;
  if (spec.tanh) {
    Value* cube = nullptr;
    switch (spec.cube) {
      case Cube::kPow:
        cube = b.op("Pow", {x, b.scalar(3)});
        break;
      case Cube::kMulInner:
        cube = b.op("Mul", {x, b.op("Mul", {x, x})});
        break;
      case Cube::kMulOuter:
        cube = b.op("Mul", {b.op("Mul", {x, x}), x});
        break;
    }
    Value* inner = b.op("Add", {x, b.op("Mul", {cube, b.scalar(spec.cube_coefficient)})});
    f = b.op("Tanh", {b.op("Mul", {inner, b.scalar(spec.sqrt_2_over_pi)})});
  } else {
    Value* u = spec.erf_by_mul ? b.op("Mul", {x, b.scalar(spec.inv_sqrt2)})
                               : b.op("Div", {x, b.scalar(spec.sqrt2)});
    f = b.op("Erf", {u});
  }
  Value* a = b.op("Add", {f, b.scalar(1)});
  Value* y = nullptr;
  switch (spec.half) {
    case HalfAt::kEnd:
      y = b.op("Mul", {b.op("Mul", {x, a}), b.scalar(0.5f)});
      break;
    case HalfAt::kDivByTwoAtEnd:
      y = b.op("Div", {b.op("Mul", {a, x}), b.scalar(2)});
      break;
    case HalfAt::kOnSum:
      y = b.op("Mul", {x, b.op("Mul", {a, b.scalar(0.5f)})});
      break;
    case HalfAt::kOnX:
      y = b.op("Mul", {b.op("Mul", {x, b.scalar(0.5f)}), a});
      break;
  }
  b.output(b.op("Tanh", {y}));
  infer(model);
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_fuse_gelu_pass(), model);
}

// `rtol`: how far the fused Gelu may be from the graph (whose constants may be rounded).
void expect_fused(const GeluGraph& spec, double rtol = 1e-4) {
  Model model = gelu_model(spec);
  Model before = copy_model(model);
  ASSERT_EQ(run_pass(model), 1u);
  ASSERT_EQ(model.graph().node_count(), 3u) << "Relu, Gelu, Tanh";
  const Node* gelu = find_op(model, "Gelu");
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->domain(), kOnnxkitDomain);
  EXPECT_EQ(model.opset_version(kOnnxkitDomain), 1);
  EXPECT_EQ(gelu->input(0)->producer()->op_type(), "Relu");
  const Attribute* approximate = gelu->find_attribute("approximate");
  if (spec.tanh) {
    ASSERT_NE(approximate, nullptr);
    EXPECT_EQ(approximate->s, "tanh");
  } else {
    EXPECT_TRUE(!approximate || approximate->s == "none");
  }
  EXPECT_TRUE(same_outputs(before, model, rtol, 1e-5 + rtol));
}

TEST(FuseGelu, ErfFormInEveryOrder) {
  for (HalfAt half : {HalfAt::kEnd, HalfAt::kOnSum, HalfAt::kOnX, HalfAt::kDivByTwoAtEnd}) {
    for (bool by_mul : {false, true}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(half)) + (by_mul ? " mul" : " div"));
      GeluGraph spec;
      spec.half = half;
      spec.erf_by_mul = by_mul;
      expect_fused(spec);
    }
  }
}

TEST(FuseGelu, TanhFormWithEachCube) {
  for (Cube cube : {Cube::kPow, Cube::kMulInner, Cube::kMulOuter}) {
    for (HalfAt half : {HalfAt::kOnX, HalfAt::kEnd}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(cube)) + " " +
                   std::to_string(static_cast<int>(half)));
      GeluGraph spec;
      spec.tanh = true;
      spec.cube = cube;
      spec.half = half;
      expect_fused(spec);
    }
  }
}

TEST(FuseGelu, ConstantsWithinToleranceOnly) {
  GeluGraph spec;
  spec.sqrt2 = 1.41421f;  // rounded by an exporter: still sqrt(2)
  expect_fused(spec);
  spec.sqrt2 = 1.5f;
  Model model = gelu_model(spec);
  EXPECT_EQ(run_pass(model), 0u);
}

// A float16 model's constants, rounded to float16 and widened again (compute_fp16_in_fp32).
TEST(FuseGelu, Float16RoundedConstantsFuse) {
  auto rounded = [](float value) { return static_cast<float>(Float16(value)); };
  GeluGraph spec;
  spec.sqrt2 = rounded(spec.sqrt2);
  expect_fused(spec, 1e-3);
  spec.erf_by_mul = true;
  spec.inv_sqrt2 = rounded(spec.inv_sqrt2);
  expect_fused(spec, 1e-3);
  spec.tanh = true;
  spec.sqrt_2_over_pi = rounded(spec.sqrt_2_over_pi);
  spec.cube_coefficient = rounded(spec.cube_coefficient);
  expect_fused(spec, 1e-3);
  spec.cube_coefficient = 0.0455f;  // 1.8% off: another function
  Model model = gelu_model(spec);
  EXPECT_EQ(run_pass(model), 0u);
}

TEST(FuseGelu, IntermediateReadElsewhereIsLeftAlone) {
  Model model = gelu_model({});
  model.graph().add_output(model.graph().find_value("Erf_3_out0"));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "Erf"), 1u);
}

TEST(FuseGelu, TwoGelusInOneGraph) {
  Model model = empty_model(13);
  GraphBuilder b(model);
  Value* x = b.input("x", {4, 5});
  for (int i = 0; i < 2; ++i) {
    Value* erf = b.op("Erf", {b.op("Div", {x, b.scalar(1.4142135f)})});
    x = b.op("Mul", {b.op("Mul", {x, b.op("Add", {erf, b.scalar(1)})}), b.scalar(0.5f)});
  }
  b.output(x);
  infer(model);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 2u);
  EXPECT_EQ(count_domain_ops(model, "Gelu"), 2u);
  EXPECT_EQ(model.graph().node_count(), 2u);
  EXPECT_EQ(model.graph().outputs()[0]->producer()->op_type(), "Gelu");
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit

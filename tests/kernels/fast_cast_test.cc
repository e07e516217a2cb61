// The fast Cast between float32 and float16 / bfloat16 (src/kernels/fast_cast.cc) against the
// reference Cast, at every SIMD level: bit for bit (NaNs as NaNs when widening).
#include <gtest/gtest.h>

#include "core/half.h"
#include "fast_kernel_test_util.h"

namespace onnxkit::testing {
namespace {

NodeCase cast_case(Tensor x, DType to, int64_t opset = 13) {
  return NodeCase("Cast", {std::move(x)}, opset,
                  [to](Node* n) { set_int(n, "to", static_cast<int64_t>(to)); });
}

// Every 16-bit pattern of `dtype`, as a tensor of that dtype.
Tensor every_pattern(DType dtype) {
  Tensor t(dtype, {65536});
  auto* bits = static_cast<uint16_t*>(t.mutable_raw_data());
  for (uint32_t i = 0; i < 65536; ++i) bits[i] = static_cast<uint16_t>(i);
  return t;
}

TEST(FastCast, NarrowsFloat32BitForBit) {
  for (DType to : {DType::kFloat16, DType::kBFloat16}) {
    for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 100003}) {
      for (float scale : {1.0f, 7e4f, 3e-6f}) {  // normal, overflowing, subnormal in float16
        expect_fast_matches_reference(
            cast_case(random_floats({n}, static_cast<uint32_t>(n), scale, true), to), 0, 0,
            fmt::format("float -> {} n {} scale {}", dtype_name(to), n, scale));
      }
    }
  }
}

TEST(FastCast, WidensEvery16BitPattern) {
  for (DType from : {DType::kFloat16, DType::kBFloat16}) {
    expect_fast_matches_reference(cast_case(every_pattern(from), DType::kFloat), 0, 0,
                                  fmt::format("{} -> float", dtype_name(from)));
  }
}

TEST(FastCast, ServesNewerOpsets) {
  for (int64_t opset : {19, 21, 23, 25}) {
    expect_fast_matches_reference(
        cast_case(random_floats({40}, 3, 1, true), DType::kFloat16, opset), 0, 0,
        fmt::format("opset {}", opset));
  }
}

TEST(FastCast, OtherCastsStayOnTheReferenceKernel) {
  EXPECT_FALSE(has_fast_kernel(cast_case(random_floats({4}, 1), DType::kInt32)));
  // float64 -> float16: the fast kernel takes the node and hands the run to the reference.
  Tensor doubles(DType::kDouble, {3});
  for (int i = 0; i < 3; ++i) doubles.mutable_data<double>()[i] = 0.1 * i;
  const NodeCase c = cast_case(doubles, DType::kFloat16);
  EXPECT_TRUE(
      run_node(c, fast_options())[0].same_contents(run_node(c, SessionOptions::reference())[0]));
}

}  // namespace
}  // namespace onnxkit::testing

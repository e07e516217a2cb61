// Unit tests of the signal op family: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow,
// MelWeightMatrix. Transforms are checked against a direct O(n^2) DFT written here; window
// values are worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "op_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;
using Complex = std::complex<double>;

Tensor run1(const std::string& op, std::vector<Tensor> inputs, const SetAttributes& attrs = {}) {
  return run_op(op, std::move(inputs), 17, attrs)[0];
}

Tensor int64_scalar(int64_t value) {
  return Tensor::from_vector<int64_t>(DType::kInt64, {}, {value});
}

// Deterministic, irregular test signal.
std::vector<Complex> test_signal(int64_t n, bool complex_values) {
  std::vector<Complex> x(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    x[k] = {std::sin(0.7 * k + 0.3) + 0.01 * k, complex_values ? std::cos(1.3 * k * k) : 0.0};
  }
  return x;
}

// The textbook DFT: X[j] = sum_k x[k] exp(-+2*pi*i*j*k/n), scaled by 1/n when inverse.
std::vector<Complex> direct_dft(const std::vector<Complex>& x, bool inverse) {
  const auto n = static_cast<int64_t>(x.size());
  const double sign = inverse ? 1.0 : -1.0;
  std::vector<Complex> out(x.size());
  for (int64_t j = 0; j < n; ++j) {
    Complex sum{};
    for (int64_t k = 0; k < n; ++k) {
      const double angle = sign * 2.0 * std::numbers::pi * static_cast<double>((j * k) % n) / n;
      sum += x[k] * Complex(std::cos(angle), std::sin(angle));
    }
    out[j] = inverse ? sum / static_cast<double>(n) : sum;
  }
  return out;
}

// [1, n, 2] (or [1, n, 1] when real) double tensor of a signal.
Tensor signal_tensor(const std::vector<Complex>& x, bool complex_layout) {
  std::vector<double> values;
  for (const Complex& v : x) {
    values.push_back(v.real());
    if (complex_layout) values.push_back(v.imag());
  }
  return Tensor::from_vector<double>(
      DType::kDouble, {1, static_cast<int64_t>(x.size()), complex_layout ? 2 : 1}, values);
}

std::vector<Complex> complex_values(const Tensor& t) {
  std::vector<Complex> out;
  const double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel() / 2; ++i) out.emplace_back(p[2 * i], p[2 * i + 1]);
  return out;
}

void expect_close(const std::vector<Complex>& actual, const std::vector<Complex>& expected,
                  double tolerance, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i].real(), expected[i].real(), tolerance) << what << " bin " << i;
    EXPECT_NEAR(actual[i].imag(), expected[i].imag(), tolerance) << what << " bin " << i;
  }
}

TEST(Dft, MatchesDirectDftForManyLengths) {
  // Direct (<= 16), radix-2 (powers of two) and Bluestein (other lengths > 16), forward and
  // inverse, real and complex input.
  for (int64_t n : {1, 2, 3, 5, 7, 8, 12, 16, 17, 30, 64, 97, 100, 243, 1000, 1024}) {
    for (bool complex_input : {false, true}) {
      for (int64_t inverse : {0, 1}) {
        const auto x = test_signal(n, complex_input);
        Tensor out = run1("DFT", {signal_tensor(x, complex_input)},
                          [&](Node* node) { set_int(node, "inverse", inverse); });
        ASSERT_EQ(out.shape(), (Shape{1, n, 2}));
        const double tolerance = 1e-9 * static_cast<double>(n);
        expect_close(complex_values(out), direct_dft(x, inverse != 0), tolerance,
                     "n=" + std::to_string(n) + " inverse=" + std::to_string(inverse));
      }
    }
  }
}

TEST(Dft, InverseOfForwardIsIdentity) {
  for (int64_t n : {6, 16, 19, 45, 128, 360}) {
    const auto x = test_signal(n, true);
    std::vector<float> values;
    for (const Complex& v : x) {
      values.push_back(static_cast<float>(v.real()));
      values.push_back(static_cast<float>(v.imag()));
    }
    Tensor input = Tensor::from_vector<float>(DType::kFloat, {1, n, 2}, values);
    Tensor spectrum = run1("DFT", {input});
    Tensor back = run1("DFT", {spectrum}, [](Node* node) { set_int(node, "inverse", 1); });
    ASSERT_EQ(back.shape(), input.shape());
    for (int64_t i = 0; i < input.numel(); ++i)
      EXPECT_NEAR(back.data<float>()[i], values[i], 1e-5) << "n=" << n << " element " << i;
  }
}

TEST(Dft, OnesidedKeepsTheFirstHalf) {
  for (int64_t n : {7, 10, 16, 21}) {
    const auto x = test_signal(n, false);
    Tensor out =
        run1("DFT", {signal_tensor(x, false)}, [](Node* node) { set_int(node, "onesided", 1); });
    ASSERT_EQ(out.shape(), (Shape{1, n / 2 + 1, 2}));
    auto full = direct_dft(x, false);
    full.resize(static_cast<size_t>(n / 2 + 1));
    expect_close(complex_values(out), full, 1e-9, "onesided n=" + std::to_string(n));
  }
}

TEST(Dft, OnesidedInverseIsTheRealInverse) {
  // A real signal's one-sided spectrum goes back to the signal, at its even and odd lengths.
  for (int64_t n : {8, 9}) {
    std::vector<Complex> x = test_signal(n, false);
    auto full = direct_dft(x, false);
    std::vector<Complex> half(full.begin(), full.begin() + n / 2 + 1);
    for (int64_t opset : {17, 20}) {
      std::vector<Tensor> inputs{signal_tensor(half, true)};
      // Without dft_length the length is 2 * (bins - 1): n for even n only.
      if (n % 2 == 1) inputs.push_back(int64_scalar(n));
      Tensor out = run_op("DFT", inputs, opset, [](Node* node) {
        set_int(node, "onesided", 1);
        set_int(node, "inverse", 1);
      })[0];
      ASSERT_EQ(out.shape(), (Shape{1, n, 1}));
      for (int64_t k = 0; k < n; ++k)
        EXPECT_NEAR(out.data<double>()[k], x[k].real(), 1e-9) << "n=" << n << " k=" << k;
    }
  }
}

TEST(Dft, Opset20TakesTheAxisAsAnInput) {
  // [2, 3, 1]: a transform along axis 0 (given as input 2) of three length-2 signals.
  Tensor input = Tensor::from_vector<double>(DType::kDouble, {2, 3, 1}, {1, 2, 3, 10, 20, 30});
  Tensor out = run_op("DFT", {input, Tensor(), int64_scalar(0)}, 20)[0];
  ASSERT_EQ(out.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values_of<double>(out),
            (std::vector<double>{11, 0, 22, 0, 33, 0, -9, 0, -18, 0, -27, 0}));
  // The default axis is -2, the last signal axis.
  Tensor last = run_op("DFT", {input}, 20)[0];
  EXPECT_EQ(last.shape(), (Shape{2, 3, 2}));
  EXPECT_NEAR(last.data<double>()[0], 6.0, 1e-12);
}

TEST(Dft, AxisAndInnerDims) {
  // [2, 3, 5, 1]: transform along axis 2 (length 5) and along axis -3 (= 1, length 3).
  std::vector<double> values(30);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::cos(0.37 * i * i) + 0.1 * i;
  Tensor input = Tensor::from_vector<double>(DType::kDouble, {2, 3, 5, 1}, values);
  auto element = [&](int64_t a, int64_t b, int64_t c) { return values[(a * 3 + b) * 5 + c]; };

  Tensor out2 = run1("DFT", {input}, [](Node* node) { set_int(node, "axis", 2); });
  ASSERT_EQ(out2.shape(), (Shape{2, 3, 5, 2}));
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t b = 0; b < 3; ++b) {
      std::vector<Complex> x;
      for (int64_t c = 0; c < 5; ++c) x.emplace_back(element(a, b, c), 0.0);
      const auto expected = direct_dft(x, false);
      for (int64_t j = 0; j < 5; ++j) {
        const double* got = out2.data<double>() + ((a * 3 + b) * 5 + j) * 2;
        EXPECT_NEAR(got[0], expected[j].real(), 1e-12);
        EXPECT_NEAR(got[1], expected[j].imag(), 1e-12);
      }
    }
  }

  Tensor out1 = run1("DFT", {input}, [](Node* node) { set_int(node, "axis", -3); });
  ASSERT_EQ(out1.shape(), (Shape{2, 3, 5, 2}));
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t c = 0; c < 5; ++c) {
      std::vector<Complex> x;
      for (int64_t b = 0; b < 3; ++b) x.emplace_back(element(a, b, c), 0.0);
      const auto expected = direct_dft(x, false);
      for (int64_t j = 0; j < 3; ++j) {
        const double* got = out1.data<double>() + ((a * 3 + j) * 5 + c) * 2;
        EXPECT_NEAR(got[0], expected[j].real(), 1e-12);
        EXPECT_NEAR(got[1], expected[j].imag(), 1e-12);
      }
    }
  }
}

TEST(Dft, DftLengthPadsAndTruncates) {
  const auto x = test_signal(6, true);
  for (int64_t length : {4, 6, 11}) {
    std::vector<Complex> expected_input = x;
    expected_input.resize(static_cast<size_t>(length));  // truncates or zero-pads
    Tensor out = run1("DFT", {signal_tensor(x, true), int64_scalar(length)});
    ASSERT_EQ(out.shape(), (Shape{1, length, 2}));
    expect_close(complex_values(out), direct_dft(expected_input, false), 1e-12,
                 "dft_length=" + std::to_string(length));
  }
  // dft_length with onesided: [1, 11/2 + 1, 2].
  Tensor out = run1("DFT", {signal_tensor(x, false), int64_scalar(11)},
                    [](Node* node) { set_int(node, "onesided", 1); });
  EXPECT_EQ(out.shape(), (Shape{1, 6, 2}));
}

TEST(Dft, HandValues) {
  // DFT of [1, 2, 3, 4] = [10, -2+2i, -2, -2-2i].
  Tensor input = Tensor::from_vector<float>(DType::kFloat, {1, 4, 1}, {1, 2, 3, 4});
  Tensor out = run1("DFT", {input});
  const std::vector<float> expected{10, 0, -2, 2, -2, 0, -2, -2};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(out.data<float>()[i], expected[i], 1e-6);
}

TEST(Dft, EmptyBatchAndErrors) {
  Tensor empty = Tensor::from_vector<float>(DType::kFloat, {0, 8, 2}, {});
  EXPECT_EQ(run1("DFT", {empty}).shape(), (Shape{0, 8, 2}));

  Tensor x = Tensor::from_vector<float>(DType::kFloat, {1, 4, 3}, std::vector<float>(12, 1.0f));
  try {
    run1("DFT", {x});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be 1 (real) or 2 (complex), got 3"),
              std::string::npos)
        << e.what();
  }
  Tensor y = Tensor::from_vector<float>(DType::kFloat, {1, 4, 1}, {1, 2, 3, 4});
  try {
    run1("DFT", {y}, [](Node* node) { set_int(node, "axis", 2); });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("axis 2 is out of range"), std::string::npos) << e.what();
  }
}

TEST(Stft, FramesMatchDirectDft) {
  // Signal of 20 samples, frame 6, step 4: 1 + (20 - 6) / 4 = 4 frames.
  const auto x = test_signal(20, false);
  std::vector<double> window{0.1, 0.5, 0.9, 1.0, 0.7, 0.2};
  Tensor window_tensor = Tensor::from_vector<double>(DType::kDouble, {6}, window);
  for (int64_t onesided : {0, 1}) {
    Tensor out = run1("STFT", {signal_tensor(x, false), int64_scalar(4), window_tensor},
                      [&](Node* node) { set_int(node, "onesided", onesided); });
    const int64_t bins = onesided ? 4 : 6;
    ASSERT_EQ(out.shape(), (Shape{1, 4, bins, 2}));
    const auto got = complex_values(out);
    for (int64_t f = 0; f < 4; ++f) {
      std::vector<Complex> frame;
      for (int64_t k = 0; k < 6; ++k) frame.push_back(x[f * 4 + k] * window[k]);
      auto expected = direct_dft(frame, false);
      expected.resize(static_cast<size_t>(bins));
      expect_close(std::vector<Complex>(got.begin() + f * bins, got.begin() + (f + 1) * bins),
                   expected, 1e-12, "frame " + std::to_string(f));
    }
  }
}

TEST(Stft, ComplexSignalAndFrameLength) {
  // Complex [2, 9, 2] signal, frame_length 5 without window, step 2: 3 frames per batch.
  std::vector<Complex> x0 = test_signal(9, true), x1 = test_signal(18, true);
  x1.erase(x1.begin(), x1.begin() + 9);
  std::vector<double> values;
  for (const auto* x : {&x0, &x1}) {
    for (const Complex& v : *x) {
      values.push_back(v.real());
      values.push_back(v.imag());
    }
  }
  Tensor signal = Tensor::from_vector<double>(DType::kDouble, {2, 9, 2}, values);
  Tensor out = run_op("STFT", {signal, int64_scalar(2), Tensor(), int64_scalar(5)}, 17,
                      [](Node* node) { set_int(node, "onesided", 0); })[0];
  ASSERT_EQ(out.shape(), (Shape{2, 3, 5, 2}));
  const auto got = complex_values(out);
  for (int64_t b = 0; b < 2; ++b) {
    const auto& x = b == 0 ? x0 : x1;
    for (int64_t f = 0; f < 3; ++f) {
      const auto expected =
          direct_dft(std::vector<Complex>(x.begin() + 2 * f, x.begin() + 2 * f + 5), false);
      const auto offset = (b * 3 + f) * 5;
      expect_close(std::vector<Complex>(got.begin() + offset, got.begin() + offset + 5), expected,
                   1e-12, "batch " + std::to_string(b) + " frame " + std::to_string(f));
    }
  }
}

TEST(Stft, ShortSignalFails) {
  Tensor signal = Tensor::from_vector<float>(DType::kFloat, {1, 4, 1}, {1, 2, 3, 4});
  try {
    run_op("STFT", {signal, int64_scalar(1), Tensor(), int64_scalar(8)}, 17);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("signal length 4 is shorter than the frame length 8"),
              std::string::npos)
        << e.what();
  }
}

std::vector<double> window_values(const std::string& op, int64_t size, int64_t periodic,
                                  DType dtype = DType::kDouble) {
  Tensor out =
      run1(op, {Tensor::from_vector<int32_t>(DType::kInt32, {}, {static_cast<int32_t>(size)})},
           [&](Node* node) {
             set_int(node, "periodic", periodic);
             set_int(node, "output_datatype", static_cast<int64_t>(dtype));
           });
  EXPECT_EQ(out.shape(), (Shape{size}));
  EXPECT_EQ(out.dtype(), dtype);
  std::vector<double> values;
  for (int64_t i = 0; i < out.numel(); ++i) {
    values.push_back(dtype == DType::kDouble  ? out.data<double>()[i]
                     : dtype == DType::kFloat ? out.data<float>()[i]
                                              : static_cast<double>(out.data<int64_t>()[i]));
  }
  return values;
}

void expect_values(const std::vector<double>& actual, const std::vector<double>& expected,
                   double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
}

TEST(Windows, HannHandValues) {
  expect_values(window_values("HannWindow", 4, 1), {0.0, 0.5, 1.0, 0.5}, 1e-15);
  expect_values(window_values("HannWindow", 5, 0), {0.0, 0.5, 1.0, 0.5, 0.0}, 1e-15);
  // Periodic 3: 0.5 - 0.5 cos(2 pi n / 3) = [0, 0.75, 0.75].
  expect_values(window_values("HannWindow", 3, 1, DType::kFloat), {0.0, 0.75, 0.75}, 1e-7);
}

TEST(Windows, HammingHandValues) {
  // a0 = 25/46, a1 = 21/46: n=0 -> 4/46, quarter period -> 25/46, half period -> 1.
  expect_values(window_values("HammingWindow", 4, 1), {4.0 / 46, 25.0 / 46, 1.0, 25.0 / 46}, 1e-15);
  expect_values(window_values("HammingWindow", 3, 0), {4.0 / 46, 1.0, 4.0 / 46}, 1e-15);
}

TEST(Windows, BlackmanHandValues) {
  // 0.42 - 0.5 cos(t) + 0.08 cos(2t) at t = 0, pi/2, pi, 3pi/2.
  expect_values(window_values("BlackmanWindow", 4, 1), {0.0, 0.34, 1.0, 0.34}, 1e-15);
  expect_values(window_values("BlackmanWindow", 5, 0), {0.0, 0.34, 1.0, 0.34, 0.0}, 1e-15);
}

TEST(Windows, EdgeSizesAndIntegerOutput) {
  EXPECT_TRUE(window_values("HannWindow", 0, 1).empty());
  expect_values(window_values("HannWindow", 1, 0), {1.0}, 0.0);
  // int64 output truncates: Hann periodic 4 -> [0, 0, 1, 0].
  expect_values(window_values("HannWindow", 4, 1, DType::kInt64), {0, 0, 1, 0}, 0.0);
}

TEST(MelWeightMatrix, ReferenceCase) {
  // ONNX's test case: 8 mel bins, dft_length 16, 8192 Hz, [0, 4096] Hz; rows are the 9
  // spectrogram bins.
  Tensor out = run1("MelWeightMatrix",
                    {Tensor::from_vector<int32_t>(DType::kInt32, {}, {8}),
                     Tensor::from_vector<int32_t>(DType::kInt32, {}, {16}),
                     Tensor::from_vector<int32_t>(DType::kInt32, {}, {8192}),
                     Tensor::from_vector<float>(DType::kFloat, {}, {0.0f}),
                     Tensor::from_vector<float>(DType::kFloat, {}, {4096.0f})},
                    [](Node* node) { set_int(node, "output_datatype", 11); });
  ASSERT_EQ(out.shape(), (Shape{9, 8}));
  ASSERT_EQ(out.dtype(), DType::kDouble);
  std::vector<double> expected(72, 0.0);
  for (auto [row, col] : std::vector<std::pair<int, int>>{
           {0, 0}, {0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6}, {5, 7}}) {
    expected[row * 8 + col] = 1.0;
  }
  expect_values(std::vector<double>(out.data<double>(), out.data<double>() + 72), expected, 0.0);
}

TEST(MelWeightMatrix, TriangleSlopes) {
  // 2 mel bins over [0, 8000] Hz, dft_length 64, 16000 Hz: mel step = mel(8000) / 4 = 710.0;
  // band edges in Hz 0, 614.3, 1767.8, 3933.6 -> bins floor(65 * f / 16000) = 0, 2, 7, 15.
  // Band 0 rises 0, 0.5, 1 over bins 0..2 then falls 4/5 .. 1/5 over bins 3..6; band 1 rises
  // 0, 1/5 .. 1 over bins 2..7 then falls 7/8 .. 1/8 over bins 8..14.
  Tensor out = run1("MelWeightMatrix", {int64_scalar(2), int64_scalar(64), int64_scalar(16000),
                                        Tensor::from_vector<double>(DType::kDouble, {}, {0.0}),
                                        Tensor::from_vector<double>(DType::kDouble, {}, {8000.0})});
  ASSERT_EQ(out.shape(), (Shape{33, 2}));
  std::vector<double> expected(66, 0.0);
  const std::vector<double> band0{0, 0.5, 1, 0.8, 0.6, 0.4, 0.2};
  const std::vector<double> band1{0,       0.2,     0.4,     0.6,     0.8,     1,      7.0 / 8,
                                  6.0 / 8, 5.0 / 8, 4.0 / 8, 3.0 / 8, 2.0 / 8, 1.0 / 8};
  for (size_t i = 0; i < band0.size(); ++i) expected[i * 2] = band0[i];
  for (size_t i = 0; i < band1.size(); ++i) expected[(i + 2) * 2 + 1] = band1[i];
  std::vector<double> actual(out.data<float>(), out.data<float>() + 66);
  expect_values(actual, expected, 1e-7);
}

}  // namespace
}  // namespace onnxkit

// Op family: signal processing (DFT, STFT, HannWindow, HammingWindow, BlackmanWindow,
// MelWeightMatrix), opset 17.
//
// Transforms run in complex<double> whatever the element type. A transform length n uses
// an iterative radix-2 FFT when n is a power of two, a direct DFT when n <= 16, and
// Bluestein's chirp-z algorithm (a convolution done with power-of-two FFTs) otherwise, so
// every length costs O(n log n).
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <tuple>
#include <utility>
#include <vector>

#include "core/resource_limits.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

using Complex = std::complex<double>;

bool is_power_of_two(int64_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// exp(sign * 2*pi*i * k / n), with k reduced modulo n so the angle stays accurate.
Complex unit_root(int64_t k, int64_t n, double sign) {
  const double angle =
      sign * 2.0 * std::numbers::pi * static_cast<double>(k % n) / static_cast<double>(n);
  return {std::cos(angle), std::sin(angle)};
}

// In-place radix-2 FFT of a power-of-two length; `twiddles` holds exp(-2*pi*i*k/n) for
// k < n/2. The inverse direction conjugates them (no scaling).
void radix2_fft(std::vector<Complex>& data, const std::vector<Complex>& twiddles, bool inverse) {
  const size_t n = data.size();
  if (n <= 1) return;
  for (size_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(data[i], data[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const size_t half = len / 2;
    const size_t step = n / len;
    for (size_t start = 0; start < n; start += len) {
      for (size_t k = 0; k < half; ++k) {
        const Complex w = inverse ? std::conj(twiddles[k * step]) : twiddles[k * step];
        const Complex odd = data[start + k + half] * w;
        data[start + k + half] = data[start + k] - odd;
        data[start + k] += odd;
      }
    }
  }
}

std::vector<Complex> radix2_twiddles(int64_t n) {
  std::vector<Complex> twiddles(static_cast<size_t>(n / 2));
  for (int64_t k = 0; k < n / 2; ++k) twiddles[k] = unit_root(k, n, -1.0);
  return twiddles;
}

// An unnormalized DFT of one length and direction, prepared once per kernel run.
// X[j] = sum_k x[k] * exp(-+2*pi*i*j*k/n) (minus forward, plus inverse).
class FftPlan {
 public:
  FftPlan(int64_t n, bool inverse) : n_(n), inverse_(inverse) {
    const double sign = inverse ? 1.0 : -1.0;
    // Twiddles, chirp and Bluestein's padded buffers: up to about 8 complex values per
    // point, held to the run's bounds before they are built.
    check_allocation(static_cast<size_t>(
        checked_mul(n, static_cast<int64_t>(8 * sizeof(Complex)), "the DFT's length")));
    if (is_power_of_two(n)) {
      twiddles_ = radix2_twiddles(n);
    } else if (n <= 16) {
      roots_.resize(static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) roots_[k] = unit_root(k, n, sign);
    } else {
      // Bluestein: j*k = (j^2 + k^2 - (j-k)^2) / 2 turns the DFT into chirp[j] times the
      // convolution of x*chirp with conj(chirp), done as a power-of-two cyclic convolution.
      m_ = 1;
      while (m_ < 2 * n - 1) m_ <<= 1;
      twiddles_ = radix2_twiddles(m_);
      chirp_.resize(static_cast<size_t>(n));
      const uint64_t two_n = 2 * static_cast<uint64_t>(n);
      for (int64_t k = 0; k < n; ++k) {
        // k^2 mod 2n keeps the angle small (k < 2^31 since the tensor fits in memory).
        const uint64_t k2 = (static_cast<uint64_t>(k) * static_cast<uint64_t>(k)) % two_n;
        const double angle =
            sign * std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n);
        chirp_[k] = {std::cos(angle), std::sin(angle)};  // exp(sign*pi*i*k^2/n)
      }
      kernel_fft_.assign(static_cast<size_t>(m_), Complex{});
      kernel_fft_[0] = std::conj(chirp_[0]);
      for (int64_t k = 1; k < n; ++k) {
        kernel_fft_[k] = std::conj(chirp_[k]);
        kernel_fft_[m_ - k] = std::conj(chirp_[k]);
      }
      radix2_fft(kernel_fft_, twiddles_, false);
    }
  }

  // Transforms `data` (length n) in place; `scratch` is reused between calls.
  void run(std::vector<Complex>& data, std::vector<Complex>& scratch) const {
    if (is_power_of_two(n_)) {
      radix2_fft(data, twiddles_, inverse_);
    } else if (!roots_.empty()) {
      scratch.assign(data.begin(), data.end());
      for (int64_t j = 0; j < n_; ++j) {
        Complex sum{};
        for (int64_t k = 0, jk = 0; k < n_; ++k, jk = (jk + j) % n_) sum += scratch[k] * roots_[jk];
        data[j] = sum;
      }
    } else {
      scratch.assign(static_cast<size_t>(m_), Complex{});
      for (int64_t k = 0; k < n_; ++k) scratch[k] = data[k] * chirp_[k];
      radix2_fft(scratch, twiddles_, false);
      for (int64_t k = 0; k < m_; ++k) scratch[k] *= kernel_fft_[k];
      radix2_fft(scratch, twiddles_, true);
      const double scale = 1.0 / static_cast<double>(m_);
      for (int64_t j = 0; j < n_; ++j) data[j] = scratch[j] * chirp_[j] * scale;
    }
  }

 private:
  int64_t n_;
  bool inverse_;
  std::vector<Complex> twiddles_;    // radix-2 twiddles (length n, or m for Bluestein)
  std::vector<Complex> roots_;       // direct DFT: exp(sign*2*pi*i*k/n)
  int64_t m_ = 0;                    // Bluestein convolution length
  std::vector<Complex> chirp_;       // exp(sign*pi*i*k^2/n)
  std::vector<Complex> kernel_fft_;  // FFT of the conjugate chirp, wrapped to length m
};

// A scalar integer input (int32/int64, one element).
int64_t read_int_scalar(const KernelContext& context, size_t index, std::string_view name) {
  const Tensor& tensor = context.input(index);
  if (tensor.numel() != 1) {
    context.fail("input '{}' must hold one value, got shape {}", name,
                 shape_to_string(tensor.shape()));
  }
  return read_int64s(tensor, name)[0];
}

// Element `index` of a real ([..., 1]) or complex ([..., 2]) tensor, as complex<double>.
template <typename T>
Complex load_complex(const T* data, int64_t index, int64_t components) {
  const double re = convert_element<double>(data[index * components]);
  const double im = components == 2 ? convert_element<double>(data[index * components + 1]) : 0.0;
  return {re, im};
}

// The output_datatype attribute of the generator ops: a numeric, non-complex type.
DType read_output_datatype(const KernelCreateContext& context) {
  const int64_t code = context.attr_int("output_datatype", 1);
  const auto dtype = static_cast<DType>(code);
  if (code < 0 || code > 16 || !dtype_is_known(static_cast<int32_t>(code)) ||
      !(dtype_is_float(dtype) || dtype_is_integer(dtype))) {
    context.fail("output_datatype {} is not a float or integer data type", code);
  }
  return dtype;
}

// Writes doubles into `output` of any numeric dtype.
void store_doubles(const std::vector<double>& values, Tensor& output) {
  dispatch_numeric(output.dtype(), "output", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = output.mutable_data<T>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = convert_element<T>(values[i]);
  });
}

// ---- DFT ----

class DftKernel : public OpKernel {
 public:
  // Opset 17 takes the axis as an attribute (default 1), 20 as input 2 (default -2).
  explicit DftKernel(const KernelCreateContext& context)
      : axis_from_input_(context.opset() >= 20),
        axis_(axis_from_input_ ? -2 : context.attr_int("axis", 1)),
        inverse_(context.attr_int("inverse", 0) != 0),
        onesided_(context.attr_int("onesided", 0) != 0) {}

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const Shape& shape = input.shape();
    const auto rank = static_cast<int64_t>(shape.size());
    if (rank < 2)
      context.fail("input must have rank >= 2 ([batch, ..., 1 or 2]), got rank {}", rank);
    const int64_t components = shape.back();
    if (components != 1 && components != 2) {
      context.fail("the last dim of the input must be 1 (real) or 2 (complex), got {}", components);
    }
    // onesided with inverse is the inverse real transform: a one-sided spectrum in, the
    // real signal out (numpy's irfft).
    const bool real_output = inverse_ && onesided_;
    int64_t axis_value = axis_;
    if (axis_from_input_ && context.has_input(2)) axis_value = read_int_scalar(context, 2, "axis");
    // The last dim holds the components, so the signal axes are [0, rank - 2].
    const int64_t axis = axis_value < 0 ? axis_value + rank : axis_value;
    if (axis < 0 || axis > rank - 2) {
      context.fail("axis {} is out of range for an input of rank {} (valid: [{}, {}] or [0, {}])",
                   axis_value, rank, -rank, -2, rank - 2);
    }
    const int64_t input_length = shape[axis];
    int64_t length = real_output ? 2 * (input_length - 1) : input_length;
    if (context.has_input(1)) {
      length = read_int_scalar(context, 1, "dft_length");
      if (length < 1) context.fail("dft_length must be >= 1, got {}", length);
    }
    const int64_t out_length = onesided_ && !inverse_ ? length / 2 + 1 : length;
    Shape out_shape = shape;
    out_shape[axis] = out_length;
    out_shape.back() = real_output ? 1 : 2;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= shape[d];
    Tensor& output = context.allocate_output(0, input.dtype(), out_shape);
    if (outer * inner == 0) return;
    if (length < 1) context.fail("the transform length is 0 (axis {} has size 0)", axis);

    const FftPlan plan(length, inverse_);
    const double scale = inverse_ ? 1.0 / static_cast<double>(length) : 1.0;
    // The inverse real transform reads bins 0..length/2 and mirrors them (conjugated).
    const int64_t read = real_output ? length / 2 + 1 : length;
    const int64_t used = std::min(read, input_length);
    const int64_t out_components = out_shape.back();
    dispatch_float(input.dtype(), "DFT input", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = input.data<T>();
      T* out = output.mutable_data<T>();
      std::vector<Complex> buffer(static_cast<size_t>(length)), scratch;
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t in_base = o * input_length * inner + i;
          for (int64_t k = 0; k < used; ++k)
            buffer[k] = load_complex(in, in_base + k * inner, components);
          std::fill(buffer.begin() + used, buffer.end(), Complex{});
          if (real_output) {
            for (int64_t k = read; k < length; ++k) buffer[k] = std::conj(buffer[length - k]);
          }
          plan.run(buffer, scratch);
          const int64_t out_base = o * out_length * inner + i;
          for (int64_t j = 0; j < out_length; ++j) {
            T* dst = out + (out_base + j * inner) * out_components;
            dst[0] = convert_element<T>(buffer[j].real() * scale);
            if (out_components == 2) dst[1] = convert_element<T>(buffer[j].imag() * scale);
          }
        }
      }
    });
  }

 private:
  bool axis_from_input_;
  int64_t axis_;
  bool inverse_;
  bool onesided_;
};

// ---- STFT ----

// As ONNX's reference: frames of frame_length samples start every frame_step samples
// (1 + (signal_length - frame_length) / frame_step of them); each frame takes window-length
// samples times the window, zero-padded or truncated to frame_length, and is transformed.
class StftKernel : public OpKernel {
 public:
  explicit StftKernel(const KernelCreateContext& context)
      : onesided_(context.attr_int("onesided", 1) != 0) {}

  void compute(KernelContext& context) const override {
    const Tensor& signal = context.input(0);
    const Shape& shape = signal.shape();
    const auto rank = static_cast<int64_t>(shape.size());
    if (rank < 2) {
      context.fail("signal must have rank >= 2 ([batch, length, 1 or 2]), got rank {}", rank);
    }
    const int64_t components = shape.back();
    if (components != 1 && components != 2) {
      context.fail("the last dim of the signal must be 1 (real) or 2 (complex), got {}",
                   components);
    }
    const int64_t signal_length = shape[rank - 2];
    int64_t batch = 1;
    for (int64_t d = 0; d < rank - 2; ++d) batch *= shape[d];

    const int64_t step = read_int_scalar(context, 1, "frame_step");
    if (step < 1) context.fail("frame_step must be >= 1, got {}", step);
    const Tensor* window = context.has_input(2) ? &context.input(2) : nullptr;
    if (window) {
      if (window->rank() != 1) {
        context.fail("window must have rank 1, got shape {}", shape_to_string(window->shape()));
      }
      if (window->dtype() != signal.dtype()) {
        context.fail("window type {} differs from the signal type {}", dtype_name(window->dtype()),
                     dtype_name(signal.dtype()));
      }
    }
    int64_t frame_length = window ? window->shape()[0] : signal_length;
    if (context.has_input(3)) frame_length = read_int_scalar(context, 3, "frame_length");
    if (frame_length < 1) context.fail("frame_length must be >= 1, got {}", frame_length);
    if (signal_length < frame_length) {
      context.fail("the signal length {} is shorter than the frame length {}", signal_length,
                   frame_length);
    }
    const int64_t window_length = window ? window->shape()[0] : frame_length;
    const int64_t taken = std::min(window_length, frame_length);
    const int64_t frames = 1 + (signal_length - frame_length) / step;
    const int64_t bins = onesided_ ? frame_length / 2 + 1 : frame_length;
    Shape out_shape(shape.begin(), shape.end() - 2);
    out_shape.insert(out_shape.end(), {frames, bins, 2});
    Tensor& output = context.allocate_output(0, signal.dtype(), out_shape);
    if (batch == 0) return;

    const FftPlan plan(frame_length, false);
    dispatch_float(signal.dtype(), "STFT signal", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = signal.data<T>();
      std::vector<double> weights(static_cast<size_t>(taken), 1.0);
      if (window) {
        const T* w = window->data<T>();
        for (int64_t k = 0; k < taken; ++k) weights[k] = convert_element<double>(w[k]);
      }
      T* out = output.mutable_data<T>();
      std::vector<Complex> buffer(static_cast<size_t>(frame_length)), scratch;
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t f = 0; f < frames; ++f) {
          const int64_t begin = f * step;
          // Samples past the signal's end count as zeros (reference pads the last frames).
          const int64_t count = std::min(taken, signal_length - begin);
          for (int64_t k = 0; k < count; ++k) {
            buffer[k] = load_complex(in, b * signal_length + begin + k, components) * weights[k];
          }
          std::fill(buffer.begin() + count, buffer.end(), Complex{});
          plan.run(buffer, scratch);
          T* dst = out + (b * frames + f) * bins * 2;
          for (int64_t j = 0; j < bins; ++j) {
            dst[2 * j] = convert_element<T>(buffer[j].real());
            dst[2 * j + 1] = convert_element<T>(buffer[j].imag());
          }
        }
      }
    });
  }

 private:
  bool onesided_;
};

// ---- window generators ----

// Generalized cosine window: w[n] = a0 - a1*cos(2*pi*n/N) + a2*cos(4*pi*n/N), with N = size
// (periodic) or size - 1 (symmetric).
struct CosineCoefficients {
  double a0, a1, a2;
};
constexpr CosineCoefficients kHann{0.5, 0.5, 0.0};
constexpr CosineCoefficients kHamming{25.0 / 46.0, 21.0 / 46.0, 0.0};
constexpr CosineCoefficients kBlackman{0.42, 0.5, 0.08};

template <const CosineCoefficients& kCoefficients>
class WindowKernel : public OpKernel {
 public:
  explicit WindowKernel(const KernelCreateContext& context)
      : periodic_(context.attr_int("periodic", 1) != 0),
        output_dtype_(read_output_datatype(context)) {}

  void compute(KernelContext& context) const override {
    const int64_t size = read_int_scalar(context, 0, "size");
    if (size < 0) context.fail("size must be >= 0, got {}", size);
    // The window is computed in doubles before it is stored: the scratch is held to the
    // run's bounds like the output it becomes.
    check_allocation(static_cast<size_t>(
        checked_mul(size, static_cast<int64_t>(sizeof(double)), "the window's size")));
    std::vector<double> values(static_cast<size_t>(size));
    const int64_t period = periodic_ ? size : size - 1;
    for (int64_t n = 0; n < size; ++n) {
      if (period == 0) {  // symmetric window of one point: 1 (the formula divides by 0)
        values[n] = 1.0;
        continue;
      }
      const double angle =
          2.0 * std::numbers::pi * static_cast<double>(n) / static_cast<double>(period);
      values[n] = kCoefficients.a0 - kCoefficients.a1 * std::cos(angle) +
                  kCoefficients.a2 * std::cos(2.0 * angle);
    }
    store_doubles(values, context.allocate_output(0, output_dtype_, {size}));
  }

 private:
  bool periodic_;
  DType output_dtype_;
};

// ---- MelWeightMatrix ----

// numpy's floor_divide for doubles (fmod-based, so boundary cases round as numpy does).
double numpy_floor_divide(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, a / b);
  double floor_div = std::floor(div);
  if (div - floor_div > 0.5) floor_div += 1.0;
  return floor_div;
}

// hertz -> mel in the precision of the edge inputs (float32 math for float inputs, as the
// reference's numpy does), widened to double.
template <typename F>
std::pair<double, double> mel_edges(double lower_hertz, double upper_hertz) {
  auto mel = [](F hertz) -> F {
    return static_cast<F>(2595) * std::log10(static_cast<F>(1) + hertz / static_cast<F>(700));
  };
  const F low = mel(static_cast<F>(lower_hertz));
  const F high = mel(static_cast<F>(upper_hertz));
  return {static_cast<double>(low), static_cast<double>(high)};
}

// Follows ONNX's reference (onnx/backend/test/case/node/melweightmatrix.py) step by step,
// including its mel step of (high - low) / (num_mel_bins + 2).
class MelWeightMatrixKernel : public OpKernel {
 public:
  explicit MelWeightMatrixKernel(const KernelCreateContext& context)
      : output_dtype_(read_output_datatype(context)) {}

  void compute(KernelContext& context) const override {
    const int64_t num_mel_bins = read_int_scalar(context, 0, "num_mel_bins");
    const int64_t dft_length = read_int_scalar(context, 1, "dft_length");
    const int64_t sample_rate = read_int_scalar(context, 2, "sample_rate");
    if (num_mel_bins < 0) context.fail("num_mel_bins must be >= 0, got {}", num_mel_bins);
    if (dft_length < 1) context.fail("dft_length must be >= 1, got {}", dft_length);
    if (sample_rate < 1) context.fail("sample_rate must be >= 1, got {}", sample_rate);
    const Tensor& lower = context.input(3);
    const Tensor& upper = context.input(4);
    if (!dtype_is_float(lower.dtype()) || !dtype_is_float(upper.dtype())) {
      context.fail("lower_edge_hertz and upper_edge_hertz must be floating point, got {} and {}",
                   dtype_name(lower.dtype()), dtype_name(upper.dtype()));
    }
    const double lower_hertz = read_scalar(lower, "lower_edge_hertz");
    const double upper_hertz = read_scalar(upper, "upper_edge_hertz");

    double low_mel, high_mel, mel_step;
    const int64_t points = checked_add(num_mel_bins, 2, "num_mel_bins");
    if (lower.dtype() == DType::kDouble) {
      std::tie(low_mel, high_mel) = mel_edges<double>(lower_hertz, upper_hertz);
      mel_step = (high_mel - low_mel) / static_cast<double>(points);
    } else {
      std::tie(low_mel, high_mel) = mel_edges<float>(lower_hertz, upper_hertz);
      mel_step =
          static_cast<double>(static_cast<float>(high_mel - low_mel) / static_cast<float>(points));
    }
    const int64_t spectrogram_bins = dft_length / 2 + 1;
    // The matrix is computed in doubles (and its band edges in int64) before it is stored:
    // the scratch is held to the run's bounds like the output it becomes.
    const int64_t cells = checked_mul(spectrogram_bins, num_mel_bins, "the matrix's size");
    check_allocation(static_cast<size_t>(
        checked_mul(checked_add(cells, points, "the matrix's size"),
                    static_cast<int64_t>(sizeof(double)), "the matrix's size")));
    std::vector<int64_t> bins(static_cast<size_t>(points));
    for (int64_t i = 0; i < points; ++i) {
      const double mel = static_cast<double>(i) * mel_step + low_mel;
      const double hertz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
      bins[i] = checked_int64(numpy_floor_divide(static_cast<double>(dft_length + 1) * hertz,
                                                 static_cast<double>(sample_rate)),
                              "a mel band's edge bin");
    }

    std::vector<double> values(static_cast<size_t>(cells), 0.0);
    auto at = [&](int64_t row, int64_t mel_bin) -> double& {
      if (row < 0 || row >= spectrogram_bins) {
        context.fail(
            "mel band {} reaches spectrogram bin {}, outside [0, {}] (lower_edge_hertz {}, "
            "upper_edge_hertz {}, sample_rate {}, dft_length {})",
            mel_bin, row, spectrogram_bins - 1, lower_hertz, upper_hertz, sample_rate, dft_length);
      }
      return values[row * num_mel_bins + mel_bin];
    };
    for (int64_t i = 0; i < num_mel_bins; ++i) {
      const int64_t left = bins[i], center = bins[i + 1], right = bins[i + 2];
      const int64_t low_to_center = center - left;
      if (low_to_center == 0) {
        at(center, i) = 1.0;
      } else {
        for (int64_t j = left; j <= center; ++j)
          at(j, i) = static_cast<double>(j - left) / static_cast<double>(low_to_center);
      }
      const int64_t center_to_high = right - center;
      if (center_to_high > 0) {
        for (int64_t j = center; j < right; ++j)
          at(j, i) = static_cast<double>(right - j) / static_cast<double>(center_to_high);
      }
    }
    store_doubles(values,
                  context.allocate_output(0, output_dtype_, {spectrogram_bins, num_mel_bins}));
  }

 private:
  DType output_dtype_;
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// DFT: X's dims with the last 2 (complex) and the transformed axis dft_length long (input
// 1), floor(n / 2) + 1 for a forward onesided transform; an inverse onesided one (IRFFT, opset
// 20) is real (last dim 1) of dft_length, by default 2 * (n - 1). The axis: an attribute
// (default 1) in opset 17, input 2 (default -2) from 20.
void infer_dft(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  const std::vector<Dim>* dims = ranked_input_dims(context, 0);
  if (!dims) return;
  if (dims->size() < 2) fail("input must have rank >= 2, got {}", dims->size());
  const KernelCreateContext attributes = attribute_reader(context);
  const bool onesided = attributes.attr_int("onesided", 0) != 0;
  const bool inverse = attributes.attr_int("inverse", 0) != 0;
  std::vector<Dim> out = *dims;
  out.back() = Dim::known(onesided && inverse ? 1 : 2);
  std::optional<int64_t> axis_value;
  if (context.opset() < 20) {
    axis_value = attributes.attr_int("axis", 1);
  } else if (!context.has_input(2)) {
    axis_value = -2;
  } else if (const std::optional<double> given = input_scalar(context, 2)) {
    axis_value = checked_int64(*given, "axis");
  }
  if (!axis_value) {
    for (size_t d = 1; d + 1 < out.size(); ++d) out[d] = Dim{};
    context.set_output(0, tensor_type(dtype, std::move(out)));
    return;
  }
  const size_t axis = rule_axis(*axis_value, dims->size());
  Dim length = (*dims)[axis];
  if (context.has_input(1)) {
    const std::optional<double> given = input_scalar(context, 1);
    length = given ? Dim::known(checked_int64(*given, "dft_length")) : Dim{};
  } else if (onesided && inverse) {
    length = map_dim(length, [](int64_t n) { return checked_mul(2, n - 1, "dft_length"); });
  }
  if (onesided && !inverse) length = map_dim(length, [](int64_t n) { return n / 2 + 1; });
  out[axis] = length;
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// STFT: [batch, frames, bins, 2]; frames (length - frame_length) / frame_step + 1, bins
// frame_length (/ 2 + 1 when onesided), frame_length from input 3 or the window's length.
void infer_stft(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* signal = input_dims(context, 0);
  if (signal && signal->size() < 2) {
    fail("signal must have rank >= 2 ([batch, length, 1 or 2]), got rank {}", signal->size());
  }
  std::optional<int64_t> frame_length;
  if (const std::optional<double> given = input_scalar(context, 3)) {
    frame_length = checked_int64(*given, "frame_length");
  } else if (const std::vector<Dim>* window = input_dims(context, 2);
             window && window->size() == 1 && (*window)[0].is_known()) {
    frame_length = (*window)[0].value;
  }
  const std::optional<double> step = input_scalar(context, 1);
  std::vector<Dim> out{signal && !signal->empty() ? (*signal)[0] : Dim{}, Dim{}, Dim{},
                       Dim::known(2)};
  // A frame_step of 0.5 truncates to 0 (the kernel refuses it); a negative frame_length has
  // no frames to count.
  const int64_t hop = step ? checked_int64(*step, "frame_step") : 0;
  if (signal && signal->size() >= 2 && (*signal)[1].is_known() && frame_length &&
      *frame_length >= 0 && hop > 0) {
    out[1] = Dim::known(checked_add((*signal)[1].value, -*frame_length, "frames") / hop + 1);
  }
  if (frame_length) {
    const bool onesided = attribute_reader(context).attr_int("onesided", 1) != 0;
    out[2] = Dim::known(onesided ? *frame_length / 2 + 1 : *frame_length);
  }
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

DType output_datatype(const TypeInferenceContext& context) {
  return static_cast<DType>(attribute_reader(context).attr_int("output_datatype", 1));
}

// HannWindow, HammingWindow, BlackmanWindow: [size] of output_datatype.
void infer_window(TypeInferenceContext& context) {
  const std::optional<double> size = input_scalar(context, 0);
  context.set_output(
      0, tensor_type(output_datatype(context),
                     std::vector<Dim>{size ? Dim::known(checked_int64(*size, "size")) : Dim{}}));
}

// MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] of output_datatype.
void infer_mel_weight_matrix(TypeInferenceContext& context) {
  const std::optional<double> bins = input_scalar(context, 0);
  const std::optional<double> dft_length = input_scalar(context, 1);
  context.set_output(
      0, tensor_type(
             output_datatype(context),
             std::vector<Dim>{
                 dft_length ? Dim::known(checked_int64(*dft_length, "dft_length") / 2 + 1) : Dim{},
                 bins ? Dim::known(checked_int64(*bins, "num_mel_bins")) : Dim{}}));
}

}  // namespace

void register_signal_ops(OpRegistry& registry) {
  registry.add("DFT", {17, 20}, kernel_factory<DftKernel>());
  registry.add("STFT", {17}, kernel_factory<StftKernel>());
  registry.add("HannWindow", {17}, kernel_factory<WindowKernel<kHann>>());
  registry.add("HammingWindow", {17}, kernel_factory<WindowKernel<kHamming>>());
  registry.add("BlackmanWindow", {17}, kernel_factory<WindowKernel<kBlackman>>());
  registry.add("MelWeightMatrix", {17}, kernel_factory<MelWeightMatrixKernel>());

  // Type inference, every version.
  registry.set_type_rule("", "DFT", infer_dft);
  registry.set_type_rule("", "STFT", infer_stft);
  registry.set_type_rule("", "HannWindow", infer_window);
  registry.set_type_rule("", "HammingWindow", infer_window);
  registry.set_type_rule("", "BlackmanWindow", infer_window);
  registry.set_type_rule("", "MelWeightMatrix", infer_mel_weight_matrix);
}

}  // namespace onnxkit

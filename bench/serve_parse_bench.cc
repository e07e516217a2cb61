// How long the server takes to parse an infer request body into tensors: ResNet-50's input
// (1x3x224x224 FP32, 150,528 numbers) as JSON (flat and nested, numbers printed as Python's
// json module prints float32 values) and in the binary extension. Prints the median of
// ROUNDS parses of each, and the fastest (the machine may be shared). Not built by default:
// `ninja -C build serve_parse_bench`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "serve/inference_protocol.h"

using namespace onnxkit;
using namespace onnxkit::serve;

namespace {

struct Times {
  double median;
  double best;
};

Times parse_ms(const std::string& body, std::optional<size_t> header_length,
               const std::vector<ValueInfo>& inputs, int rounds) {
  std::vector<double> times;
  for (int i = 0; i < rounds; ++i) {
    const auto start = std::chrono::steady_clock::now();
    InferRequest request = parse_infer_request(body, header_length, inputs, inputs);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    if (request.inputs.size() != 1) std::abort();
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front()};
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 21;
  ValueInfo info;
  info.name = "data";
  info.is_tensor = true;
  info.dtype = DType::kFloat;
  info.shape = std::vector<Dim>{Dim::known(1), Dim::known(3), Dim::known(224), Dim::known(224)};
  const std::vector<ValueInfo> inputs{info};

  std::mt19937 random(7);
  std::normal_distribution<float> normal;
  std::vector<float> values(3 * 224 * 224);
  for (float& value : values) value = normal(random);

  const std::string head = R"({"inputs":[{"name":"data","shape":[1,3,224,224],"datatype":"FP32",)";
  std::string flat = head + R"("data":[)";
  std::string nested = head + R"("data":[[)";  // [1][3][224][224]
  char number[32];
  for (size_t i = 0; i < values.size(); ++i) {
    // float32 widened to double, as numpy's tolist() hands it to json.dumps.
    std::snprintf(number, sizeof number, "%.17g", static_cast<double>(values[i]));
    flat += (i ? "," : "");
    flat += number;
    if (i % (224 * 224) == 0) {
      nested += i ? "]],[[" : "[[";
    } else if (i % 224 == 0) {
      nested += "],[";
    } else {
      nested += ",";
    }
    nested += number;
  }
  flat += "]}]}";
  nested += "]]]]}]}";
  const std::string header =
      head + R"("parameters":{"binary_data_size":)" + std::to_string(values.size() * 4) + "}}]}";
  std::string binary = header;
  binary.append(reinterpret_cast<const char*>(values.data()), values.size() * 4);

  auto report = [&](const char* what, const std::string& body, std::optional<size_t> length) {
    const Times times = parse_ms(body, length, inputs, rounds);
    std::printf("%-12s (%.1f MB): median %.2f ms, best %.2f ms\n", what, body.size() / 1e6,
                times.median, times.best);
  };
  report("JSON flat", flat, std::nullopt);
  report("JSON nested", nested, std::nullopt);
  report("binary", binary, header.size());
  return 0;
}

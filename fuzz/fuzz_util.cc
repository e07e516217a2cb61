#include "fuzz_util.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "ir/graph.h"
#include "runtime/random_inputs.h"

namespace onnxkit::fuzz {

namespace fs = std::filesystem;

namespace {

const fs::path& scratch_folder() {
  static const fs::path folder = [] {
    std::string pattern = (fs::temp_directory_path() / "onnxkit-fuzz-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) std::abort();
    static const std::string made = pattern;
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(made, ignored);
    });
    return fs::path(pattern);
  }();
  return folder;
}

}  // namespace

fs::path write_scratch_file(const std::string& name, const uint8_t* data, size_t size) {
  fs::path path = scratch_folder() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

SessionOptions bounded_session_options(OptimizationLevel level) {
  SessionOptions options;
  options.level = level;
  options.intra_op_threads = 1;
  options.max_tensor_bytes = size_t{64} << 20;
  options.max_run_bytes = size_t{256} << 20;
  options.max_loop_iterations = 256;
  return options;
}

void seed_random_ops(Model& model) {
  static const std::set<std::string, std::less<>> kFloatSeed = {
      "RandomUniform",    "RandomNormal", "RandomUniformLike",
      "RandomNormalLike", "Bernoulli",    "Multinomial"};
  const bool dropout_has_seed = model.opset_version("") >= 12;
  for_each_node_recursive(model.graph(), [&](Node* node) {
    if (!node->domain().empty() || node->find_attribute("seed")) return;
    Attribute seed;
    seed.name = "seed";
    if (kFloatSeed.count(node->op_type())) {
      seed.type = AttrType::kFloat;
      seed.f = 1.0f;
    } else if (node->op_type() == "Dropout" && dropout_has_seed) {
      seed.type = AttrType::kInt;
      seed.i = 1;
    } else {
      return;
    }
    node->set_attribute(std::move(seed));
  });
}

bool make_fuzz_inputs(const Session& session, NamedValues& inputs) {
  std::mt19937_64 rng(7);
  for (const Value* input : session.required_inputs()) {
    const ValueType& type = input->type();
    if (!type.is_tensor() || !type.shape) return false;
    Shape shape;
    int64_t elements = 1;
    for (const Dim& dim : *type.shape) {
      const int64_t size = dim.is_known() ? dim.value : 2;
      if (size < 0 || size > (int64_t{1} << 16)) return false;
      elements *= std::max<int64_t>(size, 1);
      if (elements > (int64_t{1} << 16)) return false;
      shape.push_back(size);
    }
    try {
      inputs.emplace_back(input->name(), RuntimeValue(random_tensor(type.elem_type, shape, rng)));
    } catch (const Error&) {
      return false;  // a dtype random inputs do not cover
    }
  }
  return true;
}

}  // namespace onnxkit::fuzz

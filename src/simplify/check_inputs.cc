#include "simplify/check_inputs.h"

#include <algorithm>
#include <cctype>
#include <random>
#include <set>
#include <unordered_set>

#include "core/status.h"
#include "ir/graph.h"
#include "ops/op_utils.h"
#include "runtime/random_inputs.h"

namespace onnxkit {
namespace {

std::string lowercase(const std::string& text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

// Sizes to try. Spatial ones are multiples of 32 (and of 64 from 256) so that a net that
// downsamples 32x and upsamples back adds up, then the heights of text-line recognizers, whose
// Reshape after the backbone fixes the height it was trained on (PaddleOCR's 48, CRNN's 32); 1-D
// ones are long enough for audio front ends whose first window spans hundreds of samples.
// Sequence-like dims start moderate; the longer ones are tried only after a shape failure, for
// lengths that reach a window through ops the evidence cannot follow (Silero VAD's audio goes
// through a Reshape to a shape computed from its own Shape, inside an If, before its STFT
// convolution).
const std::vector<int64_t> kSpatial2d = {224, 256, 320, 384, 512, 640, 1024, 48, 32, 64};
const std::vector<int64_t> kSpatial1d = {256, 512, 1024, 4096, 16000};
const std::vector<int64_t> kSequence = {16, 32, 64, 128, 256, 512, 1024};

bool named_like_batch(const std::string& symbol) {
  static const std::set<std::string> names = {"n",         "b",          "bs",          "batch",
                                              "batches",   "batch_size", "batchsize",   "nbatch",
                                              "num_batch", "batch_dim",  "batch_count", "bsz"};
  const std::string lower = lowercase(symbol);
  return names.count(lower) > 0 || lower.rfind("batch", 0) == 0 ||
         lower.find("_batch") != std::string::npos;
}

bool named_like_sequence(const std::string& symbol) {
  static const std::set<std::string> exact = {"t", "l", "s", "seq", "len", "steps", "time"};
  const std::string lower = lowercase(symbol);
  if (exact.count(lower)) return true;
  for (const char* part : {"seq", "length", "len", "time", "frame", "token", "step", "word", "sent",
                           "sample", "char", "past", "total"}) {
    if (lower.find(part) != std::string::npos) return true;
  }
  return false;
}

bool named_like_spatial(const std::string& symbol) {
  static const std::set<std::string> exact = {"h", "w", "d", "height", "width", "depth"};
  const std::string lower = lowercase(symbol);
  return exact.count(lower) > 0 || lower.find("height") != std::string::npos ||
         lower.find("width") != std::string::npos;
}

// A recurrent net's carried state, laid out as ONNX's RNN/GRU/LSTM initial_h/initial_c are:
// [layers x directions, batch, hidden] (Silero VAD's `state`, `h`, `c`).
bool named_like_recurrent_state(const std::string& input) {
  static const std::set<std::string> exact = {"h",  "c",  "h0",     "c0",        "hx",       "cx",
                                              "hn", "cn", "hidden", "initial_h", "initial_c"};
  const std::string lower = lowercase(input);
  return exact.count(lower) > 0 || lower.find("state") != std::string::npos ||
         lower.find("hidden") != std::string::npos;
}

// The integers a constant input holds (an initializer or a Constant node's value).
std::optional<std::vector<int64_t>> constant_ints(const Value* value) {
  if (!value) return std::nullopt;
  const Tensor* tensor = nullptr;
  if (value->has_initializer() && !value->graph()->is_input(value)) {
    tensor = &value->initializer();
  } else if (const Node* producer = value->producer();
             producer && producer->op_type() == "Constant") {
    if (const Attribute* a = producer->find_attribute("value")) tensor = &a->t;
  }
  if (!tensor || !dtype_is_integer(tensor->dtype())) return std::nullopt;
  return read_int64s(*tensor, "axes");
}

std::optional<std::vector<int64_t>> axes_of(const Node* node) {
  if (const Attribute* a = node->find_attribute("axes")) return a->ints;
  if (node->inputs().size() > 1) return constant_ints(node->input(1));
  return std::nullopt;
}

int64_t rank_of(const Value* value) {
  if (!value) return -1;
  if (value->type().shape) return static_cast<int64_t>(value->type().shape->size());
  if (value->has_initializer()) return static_cast<int64_t>(value->initializer().rank());
  return -1;
}

// Ops whose output keeps every axis of their first input where it was (elementwise,
// normalizations, padding, slicing, concatenation along any axis); n-ary ones broadcast.
bool keeps_axes(const std::string& op) {
  static const std::unordered_set<std::string> ops = {"Abs",
                                                      "Neg",
                                                      "Relu",
                                                      "LeakyRelu",
                                                      "PRelu",
                                                      "Elu",
                                                      "Selu",
                                                      "Celu",
                                                      "Gelu",
                                                      "Sigmoid",
                                                      "HardSigmoid",
                                                      "HardSwish",
                                                      "Tanh",
                                                      "Exp",
                                                      "Log",
                                                      "Sqrt",
                                                      "Reciprocal",
                                                      "Softplus",
                                                      "Softsign",
                                                      "Erf",
                                                      "Sin",
                                                      "Cos",
                                                      "Floor",
                                                      "Ceil",
                                                      "Round",
                                                      "Sign",
                                                      "Clip",
                                                      "Cast",
                                                      "CastLike",
                                                      "Identity",
                                                      "Dropout",
                                                      "Mish",
                                                      "ThresholdedRelu",
                                                      "Shrink",
                                                      "Not",
                                                      "QuantizeLinear",
                                                      "DequantizeLinear",
                                                      "BatchNormalization",
                                                      "InstanceNormalization",
                                                      "LayerNormalization",
                                                      "LpNormalization",
                                                      "Softmax",
                                                      "LogSoftmax",
                                                      "Pad",
                                                      "Slice",
                                                      "Split",
                                                      "Concat",
                                                      "Add",
                                                      "Sub",
                                                      "Mul",
                                                      "Div",
                                                      "Pow",
                                                      "Mod",
                                                      "Max",
                                                      "Min",
                                                      "Sum",
                                                      "Mean",
                                                      "Where",
                                                      "Equal",
                                                      "Less",
                                                      "LessOrEqual",
                                                      "Greater",
                                                      "GreaterOrEqual",
                                                      "And",
                                                      "Or",
                                                      "Xor"};
  return ops.count(op) > 0;
}

// Ops that read the spatial axes (2 and up) of their first input.
bool reads_spatial_axes(const std::string& op) {
  static const std::unordered_set<std::string> ops = {
      "Conv",   "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool",   "AveragePool", "LpPool",
      "Resize", "Upsample",      "DeformConv",  "Col2Im",      "MaxUnpool", "RoiAlign"};
  return ops.count(op) > 0;
}

// Follows axis `axis` of `value` (rank `rank`, -1 unknown) forward to the first op that reads
// it as a spatial axis; returns that op's number of spatial axes, 0 when no path gets there.
// `budget` bounds the nodes visited, so a large graph costs little.
int spatial_rank(const Value* value, int64_t axis, int64_t rank,
                 std::set<std::pair<const Value*, int64_t>>& seen, int& budget) {
  if (!seen.insert({value, axis}).second) return 0;
  for (const Use& use : value->uses()) {
    const Node* node = use.node;
    if (node->is_return() || --budget < 0) continue;
    const std::string& op = node->op_type();
    if (!node->domain().empty() && node->domain() != "ai.onnx") continue;
    if (reads_spatial_axes(op)) {
      if (use.input != 0 || axis < 2) continue;
      return rank > 2 ? static_cast<int>(rank - 2) : 2;
    }
    int64_t out_axis = axis, out_rank = rank;
    if (keeps_axes(op)) {
      // Broadcasting against a higher-rank input shifts our axes right.
      for (const Value* other : node->inputs()) {
        const int64_t r = rank_of(other);
        if (rank >= 0 && r > out_rank) out_rank = r;
      }
      out_axis = axis + (out_rank - rank);
    } else if (op == "Transpose") {
      std::vector<int64_t> perm;
      if (const Attribute* a = node->find_attribute("perm")) perm = a->ints;
      if (perm.empty() && rank > 0) {
        for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
      }
      auto it = std::find(perm.begin(), perm.end(), axis);
      if (it == perm.end()) continue;
      out_axis = it - perm.begin();
    } else if (op == "Unsqueeze" && use.input == 0) {
      auto axes = axes_of(node);
      if (!axes || rank < 0) continue;
      out_rank = rank + static_cast<int64_t>(axes->size());
      std::set<int64_t> inserted;
      for (int64_t a : *axes) inserted.insert(a < 0 ? a + out_rank : a);
      int64_t source = 0;
      for (int64_t p = 0; p < out_rank; ++p) {
        if (inserted.count(p)) continue;
        if (source++ == axis) out_axis = p;
      }
    } else if (op == "Squeeze" && use.input == 0) {
      auto axes = axes_of(node);
      if (!axes || rank < 0) continue;
      int64_t removed_before = 0;
      bool removed = false;
      for (int64_t a : *axes) {
        a = a < 0 ? a + rank : a;
        removed |= a == axis;
        removed_before += a < axis;
      }
      if (removed) continue;
      out_rank = rank - static_cast<int64_t>(axes->size());
      out_axis = axis - removed_before;
    } else {
      continue;  // Reshape, Flatten, MatMul, ...: the axis is lost or mixed with others
    }
    for (const Value* output : node->outputs()) {
      if (!output) continue;
      if (int found = spatial_rank(output, out_axis, out_rank, seen, budget)) return found;
      if (op != "Split") break;  // only Split's outputs all carry the axis
    }
  }
  return 0;
}

std::vector<int64_t> candidates_for(DimRole role, int spatial) {
  switch (role) {
    case DimRole::kBatch:
      return {1};
    case DimRole::kSpatial:
      return spatial == 1 ? kSpatial1d : kSpatial2d;
    default:
      return kSequence;
  }
}

const char* role_name(DimRole role) {
  switch (role) {
    case DimRole::kGiven:
      return "given";
    case DimRole::kBatch:
      return "batch";
    case DimRole::kSpatial:
      return "spatial";
    case DimRole::kSequence:
      return "sequence";
    default:
      return "other";
  }
}

// The largest index an integer input may hold when it (through shape-preserving ops) is
// used as the indices of a Gather-like op over a table whose size is known; -1 when none.
int64_t index_bound(const Value* value, int depth = 0) {
  if (depth > 4) return -1;
  int64_t bound = -1;
  for (const Use& use : value->uses()) {
    const Node* node = use.node;
    const std::string& op = node->op_type();
    if ((op == "Gather" || op == "GatherElements") && use.input == 1) {
      const Value* data = node->input(0);
      if (!data) continue;  // an omitted data input: the node is the check run's to refuse
      int64_t axis = 0;
      if (const Attribute* a = node->find_attribute("axis")) axis = a->i;
      const auto& shape = data->type().shape;
      if (shape && !shape->empty()) {
        axis = axis < 0 ? axis + static_cast<int64_t>(shape->size()) : axis;
        if (axis >= 0 && axis < static_cast<int64_t>(shape->size()) && (*shape)[axis].is_known()) {
          int64_t size = (*shape)[static_cast<size_t>(axis)].value;
          bound = bound < 0 ? size : std::min(bound, size);
        }
      }
      if (data->has_initializer() && data->initializer().rank() > 0) {
        int64_t rank = static_cast<int64_t>(data->initializer().rank());
        int64_t size =
            data->initializer().shape()[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
        bound = bound < 0 ? size : std::min(bound, size);
      }
    } else if (op == "Cast" || op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" ||
               op == "Flatten" || op == "Identity" || op == "Expand") {
      if (use.input == 0 && node->output(0)) {
        int64_t inner = index_bound(node->output(0), depth + 1);
        if (inner >= 0) bound = bound < 0 ? inner : std::min(bound, inner);
      }
    }
  }
  return bound;
}

bool looks_like_mask(const std::string& name) {
  return lowercase(name).find("mask") != std::string::npos;
}

bool looks_like_sample_rate(const std::string& name) {
  const std::string lower = lowercase(name);
  return lower == "sr" || lower.find("sample_rate") != std::string::npos ||
         lower.find("sampling_rate") != std::string::npos;
}

}  // namespace

std::string DynamicDim::describe() const {
  std::string text;
  for (const auto& [input, axis] : places) {
    text += fmt::format("{}{}[{}]", text.empty() ? "" : ", ", input, axis);
  }
  return symbol.empty() ? text : fmt::format("{} ({})", symbol, text);
}

CheckDims::CheckDims(const Model& model, const std::map<std::string, int64_t>& dims,
                     const std::map<std::string, std::vector<int64_t>>& shapes,
                     const std::map<std::string, Tensor>& given) {
  std::map<std::string, size_t> by_symbol;
  // A dim fixed twice must agree; `source` says who fixed it.
  auto fix = [&](size_t index, int64_t size, const std::string& source) {
    DynamicDim& dim = dims_[index];
    if (dim.role == DimRole::kGiven && dim.candidates[0] != size) {
      fail("{} sets {} = {}, but {} set it to {}", source, dim.describe(), size, dim.given_by,
           dim.candidates[0]);
    }
    dim.role = DimRole::kGiven;
    dim.candidates = {size};
    dim.given_by = source;
  };
  for (const auto& [name, shape] : shapes) {
    bool found = false;
    for (const Value* input : model.graph().inputs()) found |= input->name() == name;
    if (!found) fail("--test-input-shape names '{}', which is not an input", name);
  }
  for (const Value* input : model.graph().inputs()) {
    if (input->has_initializer()) continue;
    const ValueType& type = input->type();
    if (type.kind != ValueType::Kind::kTensor || !type.shape) continue;
    const std::vector<Dim>& declared = *type.shape;
    for (size_t axis = 0; axis < declared.size(); ++axis) {
      const Dim& dim = declared[axis];
      if (dim.is_known()) continue;
      size_t index;
      auto it = dim.is_symbolic() ? by_symbol.find(dim.param) : by_symbol.end();
      if (it != by_symbol.end()) {
        index = it->second;
      } else {
        index = dims_.size();
        dims_.emplace_back();
        if (dim.is_symbolic()) dims_.back().symbol = dim.param;
        if (dim.is_symbolic()) by_symbol[dim.param] = index;
      }
      dims_[index].places.emplace_back(input->name(), axis);
      index_[{input->name(), axis}] = index;
    }
  }
  // What the user fixed: --input data, --test-input-shape, --dim.
  for (const Value* input : model.graph().inputs()) {
    if (input->has_initializer() || !input->type().shape) continue;
    const size_t rank = input->type().shape->size();
    const std::vector<int64_t>* sizes = nullptr;
    std::string source;
    std::vector<int64_t> data_shape;
    if (auto file = given.find(input->name()); file != given.end()) {
      data_shape = file->second.shape();
      sizes = &data_shape;
      source = fmt::format("the data given for '{}'", input->name());
    } else if (auto shape = shapes.find(input->name()); shape != shapes.end()) {
      sizes = &shape->second;
      source = fmt::format("--test-input-shape {}", input->name());
    }
    if (!sizes) continue;
    if (sizes->size() != rank) {
      fail("{} has rank {}, input '{}' has rank {} ({})", source, sizes->size(), input->name(),
           rank, symbolic_shape_to_string(input->type().shape));
    }
    for (size_t axis = 0; axis < rank; ++axis) {
      const Dim& dim = (*input->type().shape)[axis];
      if (dim.is_known() && dim.value != (*sizes)[axis]) {
        fail("{} gives dim {} = {}, but input '{}' has {} there", source, axis, (*sizes)[axis],
             input->name(), dim.value);
      }
      if (!dim.is_known()) fix(index_.at({input->name(), axis}), (*sizes)[axis], source);
    }
  }
  for (const auto& [symbol, size] : dims) {
    auto it = by_symbol.find(symbol);
    if (it != by_symbol.end()) fix(it->second, size, "--dim " + symbol);
  }
  // The rest from evidence: where the dim flows, then its name, then its position.
  for (DynamicDim& dim : dims_) {
    if (dim.role == DimRole::kGiven) continue;
    int spatial = 0;
    for (const auto& [name, axis] : dim.places) {
      for (const Value* input : model.graph().inputs()) {
        if (input->name() != name || spatial) continue;
        std::set<std::pair<const Value*, int64_t>> seen;
        int budget = 2000;
        spatial = spatial_rank(input, static_cast<int64_t>(axis), rank_of(input), seen, budget);
      }
    }
    const bool first_axis = dim.places.front().second == 0;
    // An unnamed dim links nothing across inputs, so the batch axis of a state input is known
    // only by its layout; given any other size it would disagree with the data's batch.
    const bool state_batch = std::any_of(dim.places.begin(), dim.places.end(), [&](const auto& p) {
      const Value* input = model.graph().find_value(p.first);
      return p.second == 1 && input && rank_of(input) == 3 && named_like_recurrent_state(p.first);
    });
    if (spatial) {
      dim.role = DimRole::kSpatial;
    } else if (!dim.symbol.empty() && named_like_batch(dim.symbol)) {
      dim.role = DimRole::kBatch;
    } else if (!dim.symbol.empty() && named_like_sequence(dim.symbol)) {
      dim.role = DimRole::kSequence;
    } else if (!dim.symbol.empty() && named_like_spatial(dim.symbol)) {
      dim.role = DimRole::kSpatial;
      spatial = 2;
    } else if (first_axis || state_batch) {
      dim.role = DimRole::kBatch;
    } else {
      dim.role = DimRole::kOther;
    }
    dim.spatial_rank = spatial;
    dim.candidates = candidates_for(dim.role, spatial);
  }
}

size_t CheckDims::tries() const {
  size_t n = 1;
  for (const DynamicDim& dim : dims_) n = std::max(n, dim.candidates.size());
  return n;
}

int64_t CheckDims::value(size_t dim, size_t attempt) const {
  const auto& candidates = dims_[dim].candidates;
  return candidates[std::min(attempt, candidates.size() - 1)];
}

Shape CheckDims::shape_of(const Value& input, size_t attempt) const {
  Shape shape;
  const ValueType& type = input.type();
  if (!type.shape) return shape;
  for (size_t axis = 0; axis < type.shape->size(); ++axis) {
    const Dim& dim = (*type.shape)[axis];
    shape.push_back(dim.is_known() ? dim.value : value(index_.at({input.name(), axis}), attempt));
  }
  return shape;
}

std::string CheckDims::describe_try(size_t attempt) const {
  std::string text;
  for (size_t i = 0; i < dims_.size(); ++i) {
    const DynamicDim& dim = dims_[i];
    std::string name = dim.symbol.empty()
                           ? fmt::format("{}[{}]", dim.places[0].first, dim.places[0].second)
                           : dim.symbol;
    text += fmt::format("{}{}={}", text.empty() ? "" : ", ", name, value(i, attempt));
  }
  return text;
}

std::string CheckDims::explain() const {
  std::string text;
  for (const DynamicDim& dim : dims_) {
    std::string sizes;
    for (int64_t c : dim.candidates) sizes += (sizes.empty() ? "" : ", ") + std::to_string(c);
    text += fmt::format("\n  {}: {} {}", dim.describe(), role_name(dim.role), sizes);
    if (dim.role == DimRole::kGiven) text += " (from " + dim.given_by + ")";
  }
  return text;
}

NamedValues make_check_inputs(const Model& model, const CheckDims& dims,
                              const std::map<std::string, Tensor>& given, uint64_t seed,
                              size_t attempt) {
  std::mt19937_64 rng(seed);
  NamedValues inputs;
  for (const Value* input : model.graph().inputs()) {
    if (input->has_initializer()) continue;
    auto file = given.find(input->name());
    if (file != given.end()) {
      inputs.emplace_back(input->name(), file->second);
      continue;
    }
    const ValueType& type = input->type();
    if (type.kind != ValueType::Kind::kTensor) {
      fail("input '{}' is a {}: give check data with --input", input->name(),
           value_type_to_string(type));
    }
    const Shape shape = dims.shape_of(*input, attempt);
    Tensor tensor;
    try {
      tensor = random_tensor(type.elem_type, shape, rng);
    } catch (const Error& e) {
      throw Error(fmt::format("check input '{}': {}", input->name(), e.what()), e.kind());
    }
    if (dtype_is_integer(type.elem_type)) {
      const int64_t bound = index_bound(input);
      const bool mask = looks_like_mask(input->name());
      const bool sample_rate = shape.empty() && looks_like_sample_rate(input->name());
      dispatch_integer(type.elem_type, "check input", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* data = tensor.mutable_data<T>();
        const int64_t n = tensor.numel();
        const int64_t last = shape.empty() ? 1 : shape.back();
        for (int64_t i = 0; i < n; ++i) {
          if (sample_rate && sizeof(T) >= 2) {
            data[i] = static_cast<T>(16000);
          } else if (mask) {
            // Mostly ones, with the tail of every other row masked out, like padding.
            int64_t row = last ? i / last : 0, column = last ? i % last : 0;
            data[i] = static_cast<T>(!(row % 2 == 1 && column >= last - last / 4));
          } else if (bound > 0) {
            data[i] = static_cast<T>(rng() % static_cast<uint64_t>(bound));
          }
        }
      });
    }
    inputs.emplace_back(input->name(), std::move(tensor));
  }
  return inputs;
}

}  // namespace onnxkit

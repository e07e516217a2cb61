// What a model declares about a value: symbolic dims, and the description of a graph input
// or output that Session::inputs() / outputs() give.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "onnxkit/dtype.h"

namespace onnxkit {

// One declared dimension: a number, a named symbol ("batch"), or unknown.
struct Dim {
  int64_t value = -1;      // >= 0 when known
  std::string param;       // symbolic name when not known
  std::string denotation;  // ONNX dimension denotation, kept for round trips

  static Dim known(int64_t v) { return Dim{v, {}, {}}; }
  static Dim symbol(std::string name) { return Dim{-1, std::move(name), {}}; }
  bool is_known() const { return value >= 0; }
  bool is_symbolic() const { return value < 0 && !param.empty(); }
  bool operator==(const Dim&) const = default;
};

// A declared shape whose rank may itself be unknown (nullopt).
using SymbolicShape = std::optional<std::vector<Dim>>;

// A graph input or output as a caller of a Session sees it.
struct ValueInfo {
  std::string name;
  // False for a sequence, optional, map or sparse tensor (`type` says which).
  bool is_tensor = false;
  // A tensor's element type; kUndefined when the model does not declare it.
  DType dtype = DType::kUndefined;
  // A tensor's dims as declared; nullopt when even the rank is unknown.
  SymbolicShape shape;
  // The whole type as text, e.g. "float[batch,3,32,32]".
  std::string type;
};

}  // namespace onnxkit

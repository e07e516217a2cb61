// Sizes for the dynamic dims of a model's inputs in simplify's check (and `bench`): one value
// per symbol across all inputs, chosen from evidence in the graph, with fallbacks to try when
// a size does not fit the model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/model.h"
#include "onnxkit/session.h"
#include "onnxkit/tensor.h"

namespace onnxkit {

// What a dynamic dim is, and so which sizes the check gives it.
enum class DimRole {
  kGiven,     // --dim, --test-input-shape or an --input file fixes it
  kBatch,     // named like a batch (batch, N, batch_size, ...), or first and nothing else: 1
  kSpatial,   // reaches a Conv / pool / Resize spatial axis: sizes that survive downsampling
  kSequence,  // named like a length (seq, sequence, time, frames, ...): moderate lengths
  kOther,     // anything else: as a sequence
};

// One dynamic dim: a symbol (one value wherever it appears) or an unnamed dim of one input.
struct DynamicDim {
  std::string symbol;  // empty for an unnamed dim
  // Where it appears: (input name, axis).
  std::vector<std::pair<std::string, size_t>> places;
  DimRole role = DimRole::kOther;
  int spatial_rank = 0;             // for kSpatial: 1 (Conv1d), 2, 3
  std::vector<int64_t> candidates;  // tried in order; a given dim has one
  std::string given_by;             // for kGiven: which option or file

  // "x[2] (H)" or "x[2]" for an unnamed dim; every place for a shared symbol.
  std::string describe() const;
};

// The dynamic dims of a model's inputs, and the shapes of each try.
class CheckDims {
 public:
  // `dims`: values for symbols (--dim); `shapes`: whole input shapes (--test-input-shape);
  // `given`: input data (--input) whose shapes bind their dims. Fails when these disagree.
  CheckDims(const Model& model, const std::map<std::string, int64_t>& dims,
            const std::map<std::string, std::vector<int64_t>>& shapes,
            const std::map<std::string, Tensor>& given);

  const std::vector<DynamicDim>& dims() const { return dims_; }
  // How many tries there are: every dim with more than one candidate moves to its next one
  // together (a dim whose candidates run out keeps its last).
  size_t tries() const;
  // The shape of `input` in try `attempt` (its declared rank; no shape: a scalar).
  Shape shape_of(const Value& input, size_t attempt) const;
  // The values of try `attempt`: "N=1, H=224, W=224, x[1]=16".
  std::string describe_try(size_t attempt) const;
  // Every dynamic dim, its role and its candidates, one per line, with the options that
  // set them: for an error after every try failed.
  std::string explain() const;

 private:
  int64_t value(size_t dim, size_t attempt) const;
  std::vector<DynamicDim> dims_;
  // (input, axis) -> index into dims_.
  std::map<std::pair<std::string, size_t>, size_t> index_;
};

// Check data for the model's inputs with the shapes of try `attempt`: floats normal(0,1);
// integers that feed Gather-like indices get ids in range of the table; masks get 0/1; an
// integer scalar named like a sample rate 16000; other integers [0, 10). `given` inputs are
// used as they are.
NamedValues make_check_inputs(const Model& model, const CheckDims& dims,
                              const std::map<std::string, Tensor>& given, uint64_t seed,
                              size_t attempt);

}  // namespace onnxkit

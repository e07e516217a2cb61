// Weights a pass made (simplify's folds: BERT's Linear weights transposed) live in anonymous
// memory, unlike the model file's, which are views of its mapping. Moved into an unlinked
// temporary file and mapped back, they behave like the model file's: a kernel that packed
// one drops its pages (Tensor::release_mapped_pages) and the quantizer reads it back from the
// page cache, so calibration does not hold each weight twice (plain and packed).
#pragma once

#include <cstddef>
#include <string>

#include "ir/graph.h"

namespace onnxkit::quant {

struct MappedWeights {
  size_t tensors = 0;
  size_t bytes = 0;
};

// Moves every initializer of `graph` of at least `min_bytes` that is not already a view of a
// file into one temporary file (in std::filesystem::temp_directory_path(), removed at once;
// the mapping keeps it until the last view dies) and replaces it by a view of it. Throws
// Error naming the file when it cannot be written (a full disk): the graph is unchanged.
MappedWeights map_anonymous_weights(Graph& graph, size_t min_bytes);

}  // namespace onnxkit::quant

// What one run of a graph costs, estimated from its static shapes: what `--check-n auto`
// weighs before running simplify's check (two runs: the input model and the result).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"
#include "ir/model.h"
#include "ops/registry.h"

namespace onnxkit {

struct RunCostEstimate {
  // Multiply-adds of the contractions (Conv, ConvTranspose, MatMul, Gemm, Einsum-free RNNs).
  uint64_t multiply_adds = 0;
  // Elements every node writes: the memory traffic of everything else.
  uint64_t elements = 0;
  // Nodes with an output whose shape is not fully known (their unknown dims count as 1).
  size_t unsized_nodes = 0;

  // One figure to compare with a budget: a multiply-add and an element written cost about
  // the same on the optimized kernels (both are a few cycles per vector lane).
  uint64_t units() const { return multiply_adds + elements; }
};

// Estimates one run of `graph` from the shapes its values have (subgraph bodies counted
// once). `symbols` gives sizes to symbolic dims.
RunCostEstimate estimate_run_cost(const Graph& graph,
                                  const std::map<std::string, int64_t>& symbols);

// Estimates one run of `model` with its graph inputs of `input_shapes` (the check's sizes):
// the shapes of every value are inferred again at those sizes, on a copy, since dims a
// dynamic input's size decides (a convolution's output size) stay unknown in `model`.
RunCostEstimate estimate_run_cost(const Model& model,
                                  const std::map<std::string, Shape>& input_shapes,
                                  const OpRegistry& registry);

}  // namespace onnxkit

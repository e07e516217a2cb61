// What the fuzz targets share: a scratch file the file-based loaders read, and the bounds
// every fuzzed run is held to (so a slow or huge input is an error, not a timeout or OOM).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "ir/model.h"
#include "onnxkit/session.h"

namespace onnxkit::fuzz {

// Writes `size` bytes to a file named `name` in this process's scratch folder (created once,
// removed at exit) and returns its path.
std::filesystem::path write_scratch_file(const std::string& name, const uint8_t* data, size_t size);

// Resource bounds for fuzzed sessions: 64 MiB tensors, 256 MiB per run, 256 Loop
// iterations, one thread.
SessionOptions bounded_session_options(OptimizationLevel level);

// Gives every random op of `model` (its subgraphs included) without a `seed` attribute a
// fixed one: unseeded, they draw from std::random_device, and values that differ from run to
// run take different branches downstream, so a short run's coverage would not repeat.
void seed_random_ops(Model& model);

// Inputs the fuzzers feed: declared shapes with symbolic / unknown dims set to 2; false when
// an input cannot be generated (no declared shape, more than 2^16 elements, an odd dtype).
bool make_fuzz_inputs(const Session& session, NamedValues& inputs);

}  // namespace onnxkit::fuzz

// Small text helpers shared by the subcommands.
#pragma once

#include <cstdint>
#include <string>

namespace onnxkit::cli {

// "1.5 KiB", "2.25 GiB": binary units, two decimals past KiB.
std::string format_bytes(uint64_t bytes);
// "25,557,032"
std::string format_count(uint64_t count);

}  // namespace onnxkit::cli

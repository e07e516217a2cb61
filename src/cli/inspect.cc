// `onnxkit inspect MODEL [--json]`: what a model is, without running it.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/inputs.h"
#include "cli/progress.h"
#include "core/buffer.h"
#include "ir/model_stats.h"
#include "onnxkit/model_io.h"
#include "passes/infer_types.h"
#include "registry/builtin_registry.h"
#include "report/graph_svg.h"

namespace onnxkit::cli {
namespace {

namespace fs = std::filesystem;

struct InspectArgs {
  std::string model;
  bool json = false;
  std::string svg;
  bool quiet = false;
};

// The graph alone as an SVG picture, with every edge's type inferred first.
report::GraphSvg write_svg(Model& model, const InspectArgs& args) {
  auto inferred = infer_types(model, builtin_registry());
  if (!inferred) fail("type inference: {}", inferred.error());
  auto picture = report::render_graph_svg(model.graph());
  if (!picture) fail("{}", picture.error());
  std::ofstream out(args.svg, std::ios::binary);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" << picture.value().svg;
  out.close();
  if (!out.good()) fail("cannot write '{}'", args.svg);
  return std::move(picture).value();
}

// Files the model's tensors are mapped from, besides the model file itself.
std::set<fs::path> external_files(const Model& model, const fs::path& model_path) {
  std::set<fs::path> files;
  for (const Value* value : model.graph().initializers()) {
    const FileRegion* region = value->initializer().file_region();
    if (region && fs::absolute(region->file->path()) != fs::absolute(model_path)) {
      files.insert(region->file->path());
    }
  }
  return files;
}

nlohmann::json dims_json(const ValueType& type) {
  if (!type.shape) return nullptr;
  nlohmann::json dims = nlohmann::json::array();
  for (const Dim& dim : *type.shape) {
    if (dim.is_known()) {
      dims.push_back(dim.value);
    } else if (dim.is_symbolic()) {
      dims.push_back(dim.param);
    } else {
      dims.push_back(nullptr);
    }
  }
  return dims;
}

nlohmann::json value_json(const Value& value) {
  const ValueType& type = value.type();
  nlohmann::json entry{{"name", value.name()}, {"type", value_type_to_string(type)}};
  if (type.kind == ValueType::Kind::kTensor) {
    entry["dtype"] = dtype_name(type.elem_type);
    entry["shape"] = dims_json(type);
  }
  return entry;
}

int run_inspect(const InspectArgs& args) {
  Progress progress("inspect", !args.quiet && !args.json);
  progress.phase("loading " + fs::path(args.model).filename().string());
  auto loaded = load_model(args.model);
  if (!loaded) {
    progress.clear();
    std::cerr << "onnxkit inspect: " << loaded.error() << "\n";
    return kExitFailure;
  }
  Model& model = loaded.value();
  if (!args.svg.empty()) {
    if (same_file(args.svg, args.model)) {
      fail("--svg {}: refusing to write over the model", args.svg);
    }
    progress.phase("drawing the graph");
    const report::GraphSvg picture = write_svg(model, args);
    progress.clear();
    if (!args.json) {
      std::cout << fmt::format("wrote {} ({} nodes, {} edges; layout {:.2f} s)\n\n", args.svg,
                               picture.nodes, picture.edges, picture.layout_seconds);
    }
  }
  progress.clear();
  const ModelStats stats = compute_model_stats(model);
  const uint64_t model_file_bytes = fs::file_size(args.model);
  uint64_t external_bytes = 0;
  auto data_files = external_files(model, args.model);
  for (const auto& file : data_files) external_bytes += fs::file_size(file);

  // Inputs that are also initializers (old exporters list them) are not real inputs.
  std::vector<const Value*> inputs;
  for (const Value* value : model.graph().inputs()) {
    if (!value->has_initializer()) inputs.push_back(value);
  }

  if (args.json) {
    nlohmann::json out;
    out["file"] = args.model;
    out["file_bytes"] = model_file_bytes;
    out["external_data_bytes"] = external_bytes;
    out["ir_version"] = model.ir_version;
    out["producer"] = {{"name", model.producer_name}, {"version", model.producer_version}};
    out["opsets"] = nlohmann::json::object();
    for (const auto& opset : model.opset_imports)
      out["opsets"][domain_label(opset.domain)] = opset.version;
    out["inputs"] = nlohmann::json::array();
    for (const Value* value : inputs) out["inputs"].push_back(value_json(*value));
    out["outputs"] = nlohmann::json::array();
    for (const Value* value : model.graph().outputs()) out["outputs"].push_back(value_json(*value));
    out["nodes"] = stats.nodes;
    out["nodes_total"] = stats.nodes_total;
    out["subgraphs"] = stats.subgraphs;
    out["functions"] = model.functions.size();
    out["op_histogram"] = stats.op_histogram;
    out["initializers"] = stats.initializers;
    out["initializer_bytes"] = stats.initializer_bytes;
    out["parameters"] = stats.parameters;
    std::cout << out.dump(2) << "\n";
    return 0;
  }

  auto row = [](std::string_view label, const std::string& text) {
    std::cout << fmt::format("{:<13}{}\n", label, text);
  };
  std::string file_text = format_bytes(model_file_bytes);
  if (!data_files.empty()) {
    file_text += fmt::format(" + {} external data in {} file(s)", format_bytes(external_bytes),
                             data_files.size());
  }
  row("model", args.model + " (" + file_text + ")");
  row("ir_version", std::to_string(model.ir_version));
  std::string producer = model.producer_name;
  if (!model.producer_version.empty()) producer += " " + model.producer_version;
  row("producer", producer.empty() ? "-" : producer);
  std::string opsets;
  for (const auto& opset : model.opset_imports) {
    if (!opsets.empty()) opsets += ", ";
    opsets += domain_label(opset.domain) + " " + std::to_string(opset.version);
  }
  row("opsets", opsets);
  auto print_values = [&](std::string_view label, const std::vector<const Value*>& values) {
    if (values.empty()) row(label, "-");
    for (size_t i = 0; i < values.size(); ++i) {
      row(i == 0 ? label : "", values[i]->name() + ": " + value_type_to_string(values[i]->type()));
    }
  };
  print_values("inputs", inputs);
  print_values("outputs", {model.graph().outputs().begin(), model.graph().outputs().end()});
  std::string nodes = format_count(stats.nodes);
  if (stats.nodes_total != stats.nodes) {
    nodes +=
        fmt::format(" ({} with {} subgraphs)", format_count(stats.nodes_total), stats.subgraphs);
  }
  row("nodes", nodes);
  if (!model.functions.empty()) row("functions", std::to_string(model.functions.size()));
  row("initializers",
      fmt::format("{} ({}, {} parameters)", format_count(stats.initializers),
                  format_bytes(stats.initializer_bytes), format_count(stats.parameters)));
  std::vector<std::pair<std::string, size_t>> ops(stats.op_histogram.begin(),
                                                  stats.op_histogram.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::cout << "\nop histogram\n";
  for (const auto& [op, count] : ops) std::cout << fmt::format("  {:<28}{:>8}\n", op, count);
  return 0;
}

}  // namespace

Command add_inspect_command(CLI::App& root) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* command =
      root.add_subcommand("inspect", "Show a model's inputs, outputs, ops and size");
  command->add_option("model", args->model, "The .onnx file")->required();
  command->add_flag("--json", args->json, "Print one JSON object instead of a table");
  command->add_option("--svg", args->svg,
                      "Also draw the graph (Graphviz dot; types on edges) into this SVG file");
  command->add_flag("--quiet", args->quiet, "No progress line on the terminal");
  return {command, [args] { return run_inspect(*args); }};
}

}  // namespace onnxkit::cli

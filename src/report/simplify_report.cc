#include "report/simplify_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "passes/infer_types.h"
#include "registry/builtin_registry.h"
#include "report/graph_diff.h"
#include "report/graph_svg.h"
#include "report/html_page.h"

namespace onnxkit::report {
namespace {

std::string with_delta(size_t before, size_t after) {
  if (before == after) return std::to_string(after);
  return fmt::format("{} ({:+})", after,
                     static_cast<int64_t>(after) - static_cast<int64_t>(before));
}

Table op_count_table(const SimplifyReport& report, uint64_t size_before, uint64_t size_after) {
  Table table;
  table.header = {"op type", "original", "simplified"};
  std::set<std::string> ops;
  for (const auto& [op, n] : report.before.ops) ops.insert(op);
  for (const auto& [op, n] : report.after.ops) ops.insert(op);
  auto count = [](const std::map<std::string, size_t>& counts, const std::string& op) {
    auto it = counts.find(op);
    return it == counts.end() ? size_t{0} : it->second;
  };
  for (const auto& op : ops) {
    const size_t a = count(report.before.ops, op), b = count(report.after.ops, op);
    table.rows.push_back({op, std::to_string(a), with_delta(a, b)});
  }
  table.rows.push_back({"nodes", std::to_string(report.before.nodes),
                        with_delta(report.before.nodes, report.after.nodes)});
  table.rows.push_back({"initializers", std::to_string(report.before.initializers),
                        with_delta(report.before.initializers, report.after.initializers)});
  table.rows.push_back({"parameters", std::to_string(report.before.parameters),
                        std::to_string(report.after.parameters)});
  table.rows.push_back(
      {"file size", format_bytes(size_before), size_after ? format_bytes(size_after) : "-"});
  return table;
}

// "1,136 nodes, 1,363 edges: 509 removed, 10 fused (layout 1.7 s)"
std::string pane_note(const GraphSvg& picture) {
  std::string note = fmt::format("{} nodes, {} edges", picture.nodes, picture.edges);
  std::string marks;
  for (const auto& [mark, count] : picture.marked) {
    marks += fmt::format("{}{} {}", marks.empty() ? "" : ", ", count,
                         mark == NodeMark::kAdded ? "new" : mark_class(mark));
  }
  note += marks.empty() ? ": no node marked" : ": " + marks;
  return note + fmt::format(" (layout {})", format_seconds(picture.layout_seconds));
}

}  // namespace

Result<std::string> render_simplify_page(const SimplifyPageInput& input) {
  return capture([&]() -> std::string {
    const SimplifyReport& report = *input.report;
    // The input model carries only the types its file declares; the picture wants every edge's.
    TypeInferenceOptions inference;
    auto inferred = infer_types(*input.before, builtin_registry(), inference);
    if (!inferred) fail("type inference of {}: {}", input.input_path, inferred.error());

    const GraphDiff diff = diff_graphs(input.before->graph(), input.after->graph());
    GraphSvgOptions before_options;
    before_options.id_prefix = "b";
    before_options.marks = &diff.before;
    GraphSvgOptions after_options;
    after_options.id_prefix = "a";
    after_options.marks = &diff.after;
    // A graph too large to draw leaves its pane with the reason; the tables still come.
    auto picture = [](const Graph& graph, const GraphSvgOptions& options) {
      auto drawn = render_graph_svg(graph, options);
      if (drawn) return std::move(drawn).value();
      GraphSvg missing;
      missing.svg = "<p class=\"note\">No picture: " + html_escape(drawn.error()) + "</p>";
      return missing;
    };
    const GraphSvg before_svg = picture(input.before->graph(), before_options);
    const GraphSvg after_svg = picture(input.after->graph(), after_options);
    HtmlPage page("onnxkit simplify: " + input.input_path);
    std::vector<std::pair<std::string, std::string>> facts{
        {"input", input.input_path},
        {"output",
         input.output_path.empty() ? "not written (the check failed)" : input.output_path},
        {"nodes", fmt::format("{} -> {}", report.before.nodes, report.after.nodes)},
        {"file size", fmt::format("{} -> {}", format_bytes(input.size_before),
                                  input.size_after ? format_bytes(input.size_after) : "-")},
        {"time",
         fmt::format("load {}, optimize {} ({} rounds, shape inference {}), check {}, save {}, "
                     "total {}",
                     format_seconds(input.load_seconds), format_seconds(report.seconds_passes),
                     report.pipeline.rounds,
                     format_seconds(report.pipeline.shape_inference_seconds),
                     format_seconds(report.seconds_check), format_seconds(input.save_seconds),
                     format_seconds(input.total_seconds))},
    };
    if (report.checks_run > 0) {
      double max_abs = 0, max_rel = 0;
      for (const auto& check : report.checks) {
        max_abs = std::max(max_abs, check.max_abs_error);
        max_rel = std::max(max_rel, check.max_rel_error);
      }
      facts.emplace_back(
          "check",
          fmt::format("{} run(s), {} (max abs error {:.3g}, max relative error {:.3g}){}",
                      report.checks_run, report.check_ok ? "outputs match" : "MISMATCH", max_abs,
                      max_rel,
                      report.check_dims.empty() ? "" : "; dynamic dims " + report.check_dims));
    } else {
      facts.emplace_back("check", report.check_skipped.empty() ? "not run" : report.check_skipped);
    }
    if (!report.check_ok) facts.emplace_back("check failure", report.check_message);
    page.facts(facts);
    for (const auto& warning : report.warnings) page.paragraph("warning: " + warning);
    for (const auto& note : report.notes) page.paragraph("note: " + note);

    page.heading("Graph before and after");
    page.graph_panes({
        {"before: " + input.input_path, before_svg.svg, pane_note(before_svg)},
        {"after: " + (input.output_path.empty() ? std::string("(not written)") : input.output_path),
         after_svg.svg, pane_note(after_svg)},
    });
    page.paragraph(
        "Drag to pan, wheel to zoom, double click to fit. Edges carry dtype and shape (symbolic "
        "dims by name); initializers are folded into the box of the node that reads them (their "
        "shapes on the box's last line).");

    page.heading("Op counts");
    page.table(op_count_table(report, input.size_before, input.size_after));

    page.heading("Passes");
    Table passes;
    passes.header = {"pass", "applications", "changes", "time"};
    for (const PassStats& pass : report.pipeline.passes) {
      passes.rows.push_back({pass.name, std::to_string(pass.applications),
                             std::to_string(pass.changes), format_seconds(pass.seconds)});
    }
    passes.caption = fmt::format("{} rounds{}", report.pipeline.rounds,
                                 report.pipeline.converged ? ", converged" : ", not converged");
    page.table(passes);
    if (!report.checks.empty()) {
      page.heading("Check per output");
      Table checks;
      checks.header = {"output", "max abs error", "max relative error", "result"};
      for (const OutputCheck& check : report.checks) {
        checks.rows.push_back({check.name, fmt::format("{:.3g}", check.max_abs_error),
                               fmt::format("{:.3g}", check.max_rel_error),
                               check.ok ? "match" : "MISMATCH"});
      }
      page.table(checks);
    }
    return page.finish();
  });
}

}  // namespace onnxkit::report

#include "report/quantize_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "report/charts.h"
#include "report/html_page.h"

namespace onnxkit::report {
namespace {

std::string top1_text(const quant::OutputAgreement& output) {
  return output.top1_agreement >= 0
             ? fmt::format("{:.2f}% of {}", 100 * output.top1_agreement, output.rows)
             : "-";
}

void agreement_section(HtmlPage& page, const quant::ModelComparison& comparison) {
  page.heading("Outputs");
  Table table;
  table.header = {"output", "max abs error", "mean abs error", "cosine", "top-1 agreement"};
  table.caption = fmt::format(
      "Over {} input sample(s); top-1 only for [batch, classes] outputs "
      "made by Gemm, MatMul, Add or (Log)Softmax",
      comparison.samples);
  for (const quant::OutputAgreement& output : comparison.outputs) {
    table.rows.push_back({output.name, fmt::format("{:.4g}", output.max_abs_error),
                          fmt::format("{:.4g}", output.mean_abs_error),
                          fmt::format("{:.6f}", output.cosine), top1_text(output)});
  }
  page.table(table);
  page.raw("<div class=\"charts\">");
  for (const quant::OutputAgreement& output : comparison.outputs) {
    if (output.error_sample.empty()) continue;
    page.figure(histogram_svg({{output.name, output.error_sample}}, "|fp32 - int8|"),
                fmt::format("Absolute errors of '{}' ({} elements)", output.name,
                            output.error_sample.size()));
  }
  page.raw("</div>");
}

void cost_section(HtmlPage& page, const QuantizePageInput& input) {
  const quant::ModelComparison& comparison = *input.comparison;
  page.heading("Size and latency");
  Table table;
  table.header = {"", "fp32", "int8", "fp32 / int8"};
  auto ratio = [](double a, double b) { return b > 0 ? fmt::format("{:.2f}x", a / b) : ""; };
  table.rows.push_back({"file size", format_bytes(input.reference_bytes),
                        format_bytes(input.candidate_bytes),
                        ratio(static_cast<double>(input.reference_bytes),
                              static_cast<double>(input.candidate_bytes))});
  if (comparison.reference_ms > 0) {
    table.rows.push_back({fmt::format("median latency, {} thread{} (ms)", input.threads,
                                      input.threads == 1 ? "" : "s"),
                          fmt::format("{:.3f}", comparison.reference_ms),
                          fmt::format("{:.3f}", comparison.candidate_ms),
                          ratio(comparison.reference_ms, comparison.candidate_ms)});
  }
  table.caption = "Timed runs alternate between the two models, so a busy machine slows both";
  page.table(table);
  page.raw("<div class=\"charts\">");
  page.figure(bar_chart_svg({"file size"},
                            {{"fp32", {static_cast<double>(input.reference_bytes) / (1 << 20)}},
                             {"int8", {static_cast<double>(input.candidate_bytes) / (1 << 20)}}},
                            "MiB"),
              "File size");
  if (!comparison.reference_runs_ms.empty()) {
    page.figure(histogram_svg({{"fp32", comparison.reference_runs_ms},
                               {"int8", comparison.candidate_runs_ms}},
                              "latency (ms)"),
                "Latency histogram of the timed runs");
    std::vector<std::pair<double, double>> fp32, int8;
    for (size_t i = 0; i < comparison.reference_runs_ms.size(); ++i) {
      fp32.emplace_back(static_cast<double>(i + 1), comparison.reference_runs_ms[i]);
    }
    for (size_t i = 0; i < comparison.candidate_runs_ms.size(); ++i) {
      int8.emplace_back(static_cast<double>(i + 1), comparison.candidate_runs_ms[i]);
    }
    page.figure(line_chart_svg({{"fp32", fp32}, {"int8", int8}}, "run", "ms"),
                "Each timed run in order");
  }
  page.raw("</div>");
}

void quantize_section(HtmlPage& page, const QuantizeReport& report) {
  page.heading("What was quantized");
  std::vector<std::pair<std::string, std::string>> facts;
  for (const auto& [op, count] : report.quantized) {
    facts.emplace_back(op, fmt::format("{} node(s)", count));
  }
  facts.emplace_back("float weights", format_bytes(report.float_weight_bytes));
  facts.emplace_back("their int8 replacement", format_bytes(report.quantized_weight_bytes));
  facts.emplace_back("calibration",
                     fmt::format("{} sample(s), {} tensor(s)", report.calibration_samples,
                                 report.calibrated_tensors));
  facts.emplace_back("time", fmt::format("simplify {}, calibrate {}, quantize {}",
                                         format_seconds(report.seconds_simplify),
                                         format_seconds(report.seconds_calibrate),
                                         format_seconds(report.seconds_quantize)));
  page.facts(facts);
  for (const std::string& warning : report.warnings) page.paragraph("warning: " + warning);
  Table nodes;
  nodes.header = {"node", "op type", "became"};
  nodes.caption = "Every candidate node: its int8 form, or why it stayed float";
  for (const QuantizedNode& node : report.nodes) {
    nodes.rows.push_back({node.node, node.op_type, node.how});
  }
  if (!nodes.rows.empty()) page.table(nodes);
}

}  // namespace

std::string render_quantize_page(const QuantizePageInput& input) {
  HtmlPage page("onnxkit quantize: " + input.candidate_path);
  page.facts({{"fp32 model", input.reference_path}, {"int8 model", input.candidate_path}});
  if (input.comparison) {
    agreement_section(page, *input.comparison);
    cost_section(page, input);
  }
  if (input.quantize_report) quantize_section(page, *input.quantize_report);
  return page.finish();
}

}  // namespace onnxkit::report

#include "report/bench_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "report/charts.h"
#include "report/html_page.h"

namespace onnxkit::report {
namespace {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (rank - static_cast<double>(below));
}

std::string ms_text(double ms) {
  return ms > 0 ? fmt::format("{:.2f}", ms) : "-";
}

// The ratio column: how many times the second record's number is the first's.
std::string ratio(double first, double second) {
  if (first <= 0 || second <= 0) return "";
  return fmt::format("{:.2f}x", second / first);
}

void summary_table(HtmlPage& page, const std::vector<BenchRecord>& records) {
  Table table;
  table.header = {"ms unless named"};
  for (const BenchRecord& r : records) table.header.push_back(r.label);
  if (records.size() == 2) table.header.push_back(records[1].label + " / " + records[0].label);
  auto add = [&](const std::string& name, auto value_of, auto text_of) {
    std::vector<std::string> row{name};
    std::vector<double> values;
    for (const BenchRecord& r : records) {
      values.push_back(value_of(r));
      row.push_back(text_of(values.back()));
    }
    if (records.size() == 2) row.push_back(ratio(values[0], values[1]));
    table.rows.push_back(std::move(row));
  };
  auto latency = [](const BenchRecord& r, const std::string& key) {
    for (const auto& [name, value] : r.latency_ms) {
      if (name == key) return value;
    }
    return 0.0;
  };
  for (const char* key : {"min", "p50", "p90", "p95", "p99", "max", "mean"}) {
    add(
        std::string("latency ") + key, [&](const BenchRecord& r) { return latency(r, key); },
        ms_text);
  }
  add(
      "first run", [](const BenchRecord& r) { return r.first_run_ms; }, ms_text);
  add(
      "session create", [](const BenchRecord& r) { return r.session_create_ms; }, ms_text);
  add(
      "throughput (1/s)", [](const BenchRecord& r) { return r.throughput; }, ms_text);
  add(
      "peak RSS (MB)", [](const BenchRecord& r) { return r.peak_rss_mb; },
      [](double v) { return v > 0 ? fmt::format("{:.1f}", v) : std::string("-"); });
  add(
      "timed runs", [](const BenchRecord& r) { return static_cast<double>(r.runs_ms.size()); },
      [](double v) { return v > 0 ? fmt::format("{:.0f}", v) : std::string("-"); });
  page.table(table);
}

void op_section(HtmlPage& page, const std::vector<BenchRecord>& records) {
  // The op types of the first record that has a profile, largest first, then the others'.
  std::vector<std::string> order;
  std::map<std::string, size_t> index;
  for (const BenchRecord& r : records) {
    for (const OpTime& op : r.ops) {
      if (index.emplace(op.op_type, order.size()).second) order.push_back(op.op_type);
    }
  }
  if (order.empty()) {
    page.paragraph("No per-op profile: the records carry none.");
    return;
  }
  constexpr size_t kShown = 20;
  if (order.size() > kShown) order.resize(kShown);
  std::vector<BarSeries> series;
  for (const BenchRecord& r : records) {
    if (r.ops.empty()) continue;
    BarSeries s{r.label, std::vector<double>(order.size(), 0.0)};
    for (const OpTime& op : r.ops) {
      auto it = std::find(order.begin(), order.end(), op.op_type);
      if (it != order.end()) s.values[it - order.begin()] = op.percent;
    }
    series.push_back(std::move(s));
  }
  page.figure(bar_chart_svg(order, series, "% of kernel time"),
              "Kernel time by op type (share of all kernel time, so runtimes compare)");
  Table table;
  table.header = {"op type"};
  for (const BenchRecord& r : records) {
    if (r.ops.empty()) continue;
    table.header.push_back(r.label + " ms/run");
    table.header.push_back("%");
    table.header.push_back("calls/run");
  }
  for (const std::string& op_type : order) {
    std::vector<std::string> row{op_type};
    for (const BenchRecord& r : records) {
      if (r.ops.empty()) continue;
      const double runs = static_cast<double>(std::max<size_t>(1, r.profiled_runs));
      auto it = std::find_if(r.ops.begin(), r.ops.end(),
                             [&](const OpTime& op) { return op.op_type == op_type; });
      if (it == r.ops.end()) {
        row.insert(row.end(), {"-", "-", "-"});
      } else {
        row.push_back(fmt::format("{:.3f}", it->total_ms / runs));
        row.push_back(fmt::format("{:.1f}", it->percent));
        row.push_back(fmt::format("{:.0f}", static_cast<double>(it->calls) / runs));
      }
    }
    table.rows.push_back(std::move(row));
  }
  table.caption = "per run: totals over the profiled runs divided by their number";
  page.table(table);
}

void memory_section(HtmlPage& page, const std::vector<BenchRecord>& records) {
  std::vector<PointSeries> rss, tensors;
  for (const BenchRecord& r : records) {
    if (r.memory.empty()) continue;
    PointSeries a{r.label + " RSS", {}}, b{r.label + " tensors", {}};
    for (const MemorySample& m : r.memory) {
      a.points.emplace_back(m.ms, m.rss_mb);
      if (m.tensors_mb) b.points.emplace_back(m.ms, *m.tensors_mb);
    }
    rss.push_back(std::move(a));
    if (!b.points.empty()) tensors.push_back(std::move(b));
  }
  if (rss.empty()) {
    page.paragraph("No memory samples: the records carry none (peak RSS is in the table).");
    return;
  }
  page.raw("<div class=\"charts\">");
  page.figure(line_chart_svg(rss, "ms since the model started loading", "MB resident"),
              "Resident memory of the process: load, session creation, first run, timed runs");
  if (!tensors.empty()) {
    page.figure(line_chart_svg(tensors, "ms since the model started loading", "MB"),
                "Tensor memory held from the session's pool (the arena counts whole while a "
                "planned run holds it)");
  }
  page.raw("</div>");
}

}  // namespace

std::vector<std::pair<std::string, double>> latency_summary(std::vector<double> runs_ms) {
  std::sort(runs_ms.begin(), runs_ms.end());
  if (runs_ms.empty()) return {};
  const double mean =
      std::accumulate(runs_ms.begin(), runs_ms.end(), 0.0) / static_cast<double>(runs_ms.size());
  return {{"min", runs_ms.front()},
          {"p50", percentile(runs_ms, 50)},
          {"p90", percentile(runs_ms, 90)},
          {"p95", percentile(runs_ms, 95)},
          {"p99", percentile(runs_ms, 99)},
          {"max", runs_ms.back()},
          {"mean", mean}};
}

std::string render_bench_page(const std::vector<BenchRecord>& records) {
  std::string title = "onnxkit bench: " + (records.empty() ? std::string() : records[0].model);
  if (records.size() == 2 && records[1].model != records[0].model) {
    title += " vs " + records[1].model;
  }
  HtmlPage page(title);
  for (const BenchRecord& r : records) {
    page.heading(r.label + ": " + r.model, 3);
    page.facts(r.settings);
  }
  if (records.size() == 2) {
    page.paragraph(
        "The two were measured one after the other, not alternating: on a shared machine their "
        "timings swing with the load; compare ratios over several reports.");
  }
  page.heading("Latency");
  summary_table(page, records);
  std::vector<Series> latencies;
  std::vector<PointSeries> timeline;
  for (const BenchRecord& r : records) {
    if (r.runs_ms.empty()) continue;
    latencies.push_back({r.label, r.runs_ms});
    PointSeries line{r.label, {}};
    for (size_t i = 0; i < r.runs_ms.size(); ++i) {
      line.points.emplace_back(static_cast<double>(i + 1), r.runs_ms[i]);
    }
    timeline.push_back(std::move(line));
  }
  if (latencies.empty()) {
    page.paragraph("No per-run latencies in the records (only their summary above).");
  } else {
    page.raw("<div class=\"charts\">");
    page.figure(histogram_svg(latencies, "latency (ms)"), "Latency histogram of the timed runs");
    page.figure(line_chart_svg(timeline, "run", "ms"), "Each timed run in order");
    page.raw("</div>");
  }
  page.heading("Time per op type");
  op_section(page, records);
  page.heading("Memory over the run");
  memory_section(page, records);
  return page.finish();
}

}  // namespace onnxkit::report

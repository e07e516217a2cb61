#include "report/charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/html_page.h"

namespace onnxkit::report {
namespace {

constexpr double kWidth = 560;
constexpr double kHeight = 260;
constexpr double kLeft = 56, kRight = 12, kTop = 24, kBottom = 40;

// Round tick steps (1, 2, 5 x 10^k) giving about `target` ticks over [low, high].
std::vector<double> ticks(double low, double high, int target = 5) {
  std::vector<double> out;
  if (!(high > low)) return {low};
  const double raw = (high - low) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    step = factor * magnitude;
    if (raw <= step) break;
  }
  for (double t = std::ceil(low / step) * step; t <= high + step * 1e-9; t += step)
    out.push_back(t);
  return out;
}

std::string number(double value) {
  if (value == 0) return "0";
  const double magnitude = std::fabs(value);
  if (magnitude >= 1000) return fmt::format("{:.0f}", value);
  if (magnitude >= 10) return fmt::format("{:.4g}", value);
  return fmt::format("{:.3g}", value);
}

struct Frame {
  double x0, x1, y0, y1;  // data ranges
  double sx(double x) const { return kLeft + (x - x0) / (x1 - x0) * (kWidth - kLeft - kRight); }
  double sy(double y) const {
    return kHeight - kBottom - (y - y0) / (y1 - y0) * (kHeight - kTop - kBottom);
  }
};

std::string open_svg() {
  return fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">", kWidth,
      kHeight, kWidth, kHeight);
}

std::string axes(const Frame& f, const std::string& x_label, const std::string& y_label,
                 bool x_ticks = true) {
  std::string out;
  for (double t : ticks(f.y0, f.y1)) {
    out += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
        kLeft, kWidth - kRight, f.sy(t), f.sy(t), kLeft - 4, f.sy(t) + 4, number(t));
  }
  if (x_ticks) {
    for (double t : ticks(f.x0, f.x1, 6)) {
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
                         f.sx(t), kHeight - kBottom + 14, number(t));
    }
  }
  out += fmt::format(
      "<line class=\"axis\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>"
      "<line class=\"axis\" x1=\"{0}\" x2=\"{3}\" y1=\"{2}\" y2=\"{2}\"/>",
      kLeft, kTop, kHeight - kBottom, kWidth - kRight);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
                     (kLeft + kWidth - kRight) / 2, kHeight - 6, html_escape(x_label));
  if (!y_label.empty()) {
    out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>", 4, kTop - 10, html_escape(y_label));
  }
  return out;
}

std::string legend(const std::vector<std::string>& labels) {
  std::string out;
  double x = kWidth - kRight;
  for (size_t i = labels.size(); i-- > 0;) {
    const std::string text = html_escape(labels[i]);
    x -= 12 + 6.5 * static_cast<double>(labels[i].size()) + 10;
    out += fmt::format(
        "<rect class=\"s{}\" x=\"{:.1f}\" y=\"4\" width=\"10\" height=\"10\"/>"
        "<text x=\"{:.1f}\" y=\"13\">{}</text>",
        i % 2, x, x + 14, text);
  }
  return out;
}

}  // namespace

std::string histogram_svg(const std::vector<Series>& series, const std::string& x_label, int bins) {
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (const Series& s : series) {
    for (double v : s.values) {
      low = std::min(low, v);
      high = std::max(high, v);
    }
  }
  std::string out = open_svg();
  if (!std::isfinite(low)) return out + "<text x=\"20\" y=\"40\">no data</text></svg>";
  if (high <= low) high = low + std::max(1e-9, std::fabs(low) * 0.01);
  const double width = (high - low) / bins;
  std::vector<std::vector<size_t>> counts(series.size(), std::vector<size_t>(bins, 0));
  size_t tallest = 1;
  for (size_t s = 0; s < series.size(); ++s) {
    for (double v : series[s].values) {
      const int bin = std::min(bins - 1, static_cast<int>((v - low) / width));
      tallest = std::max(tallest, ++counts[s][bin]);
    }
  }
  Frame f{low, high, 0, static_cast<double>(tallest)};
  out += axes(f, x_label, "runs");
  const double slot = (f.sx(low + width) - f.sx(low)) / static_cast<double>(series.size());
  for (size_t s = 0; s < series.size(); ++s) {
    for (int b = 0; b < bins; ++b) {
      if (counts[s][b] == 0) continue;
      const double x = f.sx(low + b * width) + slot * static_cast<double>(s);
      const double y = f.sy(static_cast<double>(counts[s][b]));
      out += fmt::format(
          "<rect class=\"s{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">"
          "<title>{}: {} runs in [{}, {})</title></rect>",
          s % 2, x, y, std::max(1.0, slot - 0.5), f.sy(0) - y, html_escape(series[s].label),
          counts[s][b], number(low + b * width), number(low + (b + 1) * width));
    }
  }
  std::vector<std::string> labels;
  for (const Series& s : series) labels.push_back(s.label);
  return out + legend(labels) + "</svg>";
}

std::string line_chart_svg(const std::vector<PointSeries>& series, const std::string& x_label,
                           const std::string& y_label) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y1 = 0;
  for (const PointSeries& s : series) {
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y1 = std::max(y1, y);
    }
  }
  std::string out = open_svg();
  if (!std::isfinite(x0)) return out + "<text x=\"20\" y=\"40\">no data</text></svg>";
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= 0) y1 = 1;
  Frame f{x0, x1, 0, y1 * 1.05};
  out += axes(f, x_label, y_label);
  for (size_t s = 0; s < series.size(); ++s) {
    std::string points;
    for (const auto& [x, y] : series[s].points) {
      points += fmt::format("{:.1f},{:.1f} ", f.sx(x), f.sy(y));
    }
    out += fmt::format("<polyline class=\"s{}\" points=\"{}\"><title>{}</title></polyline>", s % 2,
                       points, html_escape(series[s].label));
  }
  std::vector<std::string> labels;
  for (const PointSeries& s : series) labels.push_back(s.label);
  return out + legend(labels) + "</svg>";
}

std::string bar_chart_svg(const std::vector<std::string>& categories,
                          const std::vector<BarSeries>& series, const std::string& x_label) {
  constexpr double kRow = 18, kNameWidth = 210;
  const double height = kTop + kBottom + kRow * static_cast<double>(categories.size());
  double largest = 0;
  for (const BarSeries& s : series) {
    for (double v : s.values) largest = std::max(largest, v);
  }
  if (largest <= 0) largest = 1;
  std::string out = fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\">",
      kWidth, height);
  const double left = kNameWidth, right = kWidth - kRight - 40;
  auto sx = [&](double v) { return left + v / largest * (right - left); };
  const double bar = (kRow - 4) / static_cast<double>(std::max<size_t>(1, series.size()));
  for (size_t c = 0; c < categories.size(); ++c) {
    const double y = kTop + kRow * static_cast<double>(c);
    std::string name = categories[c];
    if (name.size() > 32) name = "…" + name.substr(name.size() - 31);
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}<title>{}</title></text>", left - 6,
        y + kRow / 2 + 4, html_escape(name), html_escape(categories[c]));
    for (size_t s = 0; s < series.size(); ++s) {
      const double v = c < series[s].values.size() ? series[s].values[c] : 0;
      out += fmt::format(
          "<rect class=\"s{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">"
          "<title>{} {}: {}</title></rect>"
          "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\">{}</text>",
          s % 2, left, y + 2 + bar * static_cast<double>(s), std::max(0.5, sx(v) - left), bar,
          html_escape(series[s].label), html_escape(categories[c]), number(v), sx(v) + 3,
          y + 2 + bar * (static_cast<double>(s) + 0.8), number(v));
    }
  }
  out += fmt::format("<line class=\"axis\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>", left,
                     kTop, height - kBottom);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
                     (left + right) / 2, height - kBottom + 20, html_escape(x_label));
  std::vector<std::string> labels;
  for (const BarSeries& s : series) labels.push_back(s.label);
  return out + legend(labels) + "</svg>";
}

}  // namespace onnxkit::report

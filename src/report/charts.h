// Small inline SVG charts for the report pages: a histogram, a line chart and a horizontal
// bar chart, each with up to two series side by side (classes s0 / s1, coloured by the page's
// theme). No script: the charts are plain SVG that prints as it shows.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace onnxkit::report {

struct Series {
  std::string label;
  std::vector<double> values;
};

struct PointSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // x, y
};

struct BarSeries {
  std::string label;
  std::vector<double> values;  // one per category
};

// Histogram of each series' values over shared bins (`bins` equal widths across all values).
std::string histogram_svg(const std::vector<Series>& series, const std::string& x_label,
                          int bins = 30);
// Lines through each series' points, on shared axes.
std::string line_chart_svg(const std::vector<PointSeries>& series, const std::string& x_label,
                           const std::string& y_label);
// One row per category, a bar per series.
std::string bar_chart_svg(const std::vector<std::string>& categories,
                          const std::vector<BarSeries>& series, const std::string& x_label);

}  // namespace onnxkit::report

// One self-contained HTML page: the project's own small CSS (light and dark themes, print) and
// script (pan and zoom of graph pictures, a node search box, a signal that the page rendered),
// inline; no network, no external script. The report writers (simplify, bench, ...) fill it
// with sections, tables, charts and graph pictures.
//
// When the page has run its script it sets `data-render="ok"` on <body> (or "error" when a
// script error or console.error happened first), and `data-render-ms` to performance.now():
// what the browser tests read back with `chromium --headless --dump-dom`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxkit::report {

// &, <, >, " and ' as entities.
std::string html_escape(std::string_view text);
// "1.50 KiB", "2.25 GiB" (binary units, as the CLI prints them).
std::string format_bytes(uint64_t bytes);
// "0.42 s", "12.3 ms"
std::string format_seconds(double seconds);

// A table: a header row and body rows of escaped cells; columns after the first align right.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string caption;
};

// A picture of a graph with its title, shown in a pan-and-zoom pane.
struct GraphPane {
  std::string title;
  std::string svg;   // from render_graph_svg
  std::string note;  // a line under the title (counts, the legend)
};

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  void heading(std::string_view text, int level = 2);
  void paragraph(std::string_view text);  // escaped
  // label: value pairs in a compact definition list (values escaped).
  void facts(const std::vector<std::pair<std::string, std::string>>& items);
  void table(const Table& table);
  // Panes side by side (print: one under the other), with one search box for all of them.
  void graph_panes(const std::vector<GraphPane>& panes);
  // An inline chart (svg from charts.h) with a caption.
  void figure(std::string_view svg, std::string_view caption);
  // Trusted markup, as it is.
  void raw(std::string_view html);

  std::string finish() const;

 private:
  std::string title_;
  std::string body_;
};

}  // namespace onnxkit::report

// The SVG pictures and pages of src/report: nodes, edges, labels and marks present for small
// known graphs (the browser tests in tests/report/browser_check.sh load whole pages).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "../passes/pass_test_util.h"
#include "passes/pass.h"
#include "report/bench_report.h"
#include "report/charts.h"
#include "report/graph_diff.h"
#include "report/graph_svg.h"
#include "report/html_page.h"

namespace onnxkit::report {
namespace {

using onnxkit::testing::empty_model;
using onnxkit::testing::float_dims;
using onnxkit::testing::float_type;

size_t count_matches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// x[batch,3,8,8] -> Conv(W, B) -> Relu -> y
Model conv_relu_model() {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input(
      "x", float_dims({Dim::symbol("batch"), Dim::known(3), Dim::known(8), Dim::known(8)}));
  Value* w = g.add_initializer("W", Tensor(DType::kFloat, {4, 3, 3, 3}));
  Value* b = g.add_initializer("B", Tensor(DType::kFloat, {4}));
  Node* conv = g.add_node("Conv", {x, w, b}, {"conv_out"}, "", "conv1");
  Node* relu = g.add_node("Relu", {conv->output(0)}, {"y"}, "", "relu1");
  g.add_output(relu->output(0));
  return model;
}

TEST(GraphSvg, NodesEdgesAndLabels) {
  Model model = conv_relu_model();
  auto picture = render_graph_svg(model.graph());
  ASSERT_TRUE(picture.ok()) << picture.error();
  const std::string& svg = picture.value().svg;
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(picture.value().nodes, 2u);
  // x -> conv1, conv1 -> relu1, relu1 -> output y; the weights are no edges.
  EXPECT_EQ(picture.value().edges, 3u);
  EXPECT_EQ(count_matches(svg, R"(class="node op")"), 2u);
  EXPECT_EQ(count_matches(svg, R"re(class="node io (input|output)")re"), 2u);
  EXPECT_EQ(count_matches(svg, R"(class="edge flow")"), 3u);
  EXPECT_NE(svg.find(">Conv<"), std::string::npos);
  EXPECT_NE(svg.find(">conv1<"), std::string::npos);
  EXPECT_NE(svg.find(">Relu<"), std::string::npos);
  // The initializers folded into the Conv box, by shape.
  EXPECT_NE(svg.find("[4,3,3,3] [4]"), std::string::npos);
  EXPECT_EQ(svg.find(">W<"), std::string::npos);
  // The input's symbolic dim by name on its edge and in its ellipse.
  EXPECT_GE(count_matches(svg, R"(float\[batch,3,8,8\])"), 2u);
}

TEST(GraphSvg, RefusesGraphsAboveTheLimit) {
  Model model = conv_relu_model();
  GraphSvgOptions options;
  options.max_nodes = 1;
  auto picture = render_graph_svg(model.graph(), options);
  ASSERT_FALSE(picture.ok());
  EXPECT_NE(picture.error().find("2 nodes to draw"), std::string::npos) << picture.error();
}

TEST(GraphSvg, SubgraphsAreClusters) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Value* c = g.add_input("c", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  auto then_branch = std::make_unique<Graph>(&g);
  then_branch->add_output(then_branch->add_node("Neg", {x}, {"t"}, "", "neg_then")->output(0));
  auto else_branch = std::make_unique<Graph>(&g);
  else_branch->add_output(else_branch->add_node("Abs", {x}, {"e"}, "", "abs_else")->output(0));
  Node* node = g.add_node("If", {c}, {"y"}, "", "branch");
  node->set_attribute(graph_attribute("then_branch", std::move(then_branch)));
  node->set_attribute(graph_attribute("else_branch", std::move(else_branch)));
  g.add_output(node->output(0));

  auto picture = render_graph_svg(g);
  ASSERT_TRUE(picture.ok()) << picture.error();
  const std::string& svg = picture.value().svg;
  EXPECT_EQ(picture.value().nodes, 3u);
  EXPECT_EQ(count_matches(svg, R"(class="cluster subgraph")"), 2u);
  EXPECT_NE(svg.find(">neg_then<"), std::string::npos);
  EXPECT_NE(svg.find(">abs_else<"), std::string::npos);
  // x read inside both branches, c by If, the two branch results into If, If to y.
  EXPECT_EQ(picture.value().edges, 6u);
  EXPECT_EQ(count_matches(svg, R"(class="edge flow result")"), 2u);
}

TEST(GraphDiff, MarksRemovedFusedAddedAndChanged) {
  Model before = empty_model();
  Graph& b = before.graph();
  Value* x = b.add_input("x", float_type({4}));
  Node* r1 = b.add_node("Relu", {x}, {"y1"}, "", "r1");
  Node* n1 = b.add_node("Neg", {r1->output(0)}, {"y2"}, "", "n1");
  Node* a1 = b.add_node("Abs", {n1->output(0)}, {"y3"}, "", "a1");
  Node* s1 = b.add_node("Sigmoid", {a1->output(0)}, {"y4"}, "", "s1");
  Node* dead = b.add_node("Neg", {x}, {"w"}, "", "dead");
  b.add_output(s1->output(0));
  b.add_output(dead->output(0));

  Model after = empty_model();
  Graph& a = after.graph();
  Value* x2 = a.add_input("x", float_type({4}));
  Node* fused = a.add_node("Foo", {x2}, {"y2"}, "", "r1");  // r1 and n1 became one
  Node* same = a.add_node("Abs", {fused->output(0)}, {"y3"}, "", "a1");
  Node* changed = a.add_node("HardSigmoid", {same->output(0)}, {"y4"}, "", "s1");
  Node* added = a.add_node("Identity", {changed->output(0)}, {"z"}, "", "new_identity");
  a.add_output(added->output(0));

  const GraphDiff diff = diff_graphs(b, a);
  EXPECT_EQ(diff.removed, 1u);
  EXPECT_EQ(diff.fused, 1u);
  EXPECT_EQ(diff.added, 1u);
  EXPECT_EQ(diff.changed, 1u);
  EXPECT_EQ(diff.before.at(dead), NodeMark::kRemoved);
  EXPECT_EQ(diff.before.at(r1), NodeMark::kFused);
  EXPECT_EQ(diff.before.at(n1), NodeMark::kFused);
  EXPECT_EQ(diff.before.count(a1), 0u);
  EXPECT_EQ(diff.before.at(s1), NodeMark::kChanged);
  EXPECT_EQ(diff.after.at(fused), NodeMark::kFused);
  EXPECT_EQ(diff.after.count(same), 0u);
  EXPECT_EQ(diff.after.at(changed), NodeMark::kChanged);
  EXPECT_EQ(diff.after.at(added), NodeMark::kAdded);

  GraphSvgOptions options;
  options.marks = &diff.before;
  auto picture = render_graph_svg(b, options);
  ASSERT_TRUE(picture.ok()) << picture.error();
  EXPECT_EQ(count_matches(picture.value().svg, R"(class="node op removed")"), 1u);
  EXPECT_EQ(count_matches(picture.value().svg, R"(class="node op fused")"), 2u);
  EXPECT_EQ(count_matches(picture.value().svg, R"(class="node op changed")"), 1u);
}

// Conv + BatchNormalization -> Conv with folded weights: the fused Conv keeps its name and
// output, the BatchNormalization leaves no trace but the Conv's new weights.
TEST(GraphDiff, NodeFoldedIntoItsProducerIsFused) {
  Model before = empty_model();
  Graph& b = before.graph();
  Value* x = b.add_input("x", float_type({1, 3, 4, 4}));
  Value* w = b.add_initializer("w", Tensor(DType::kFloat, {2, 3, 1, 1}));
  Node* conv = b.add_node("Conv", {x, w}, {"a"}, "", "conv");
  std::vector<Value*> bn_inputs{conv->output(0)};
  for (const char* name : {"scale", "bias", "mean", "var"}) {
    bn_inputs.push_back(b.add_initializer(name, Tensor(DType::kFloat, {2})));
  }
  Node* bn = b.add_node("BatchNormalization", bn_inputs, {"n"}, "", "bn");
  Node* relu = b.add_node("Relu", {bn->output(0)}, {"y"}, "", "relu");
  b.add_output(relu->output(0));

  Model after = empty_model();
  Graph& a = after.graph();
  Value* x2 = a.add_input("x", float_type({1, 3, 4, 4}));
  Value* w2 = a.add_initializer("w_folded", Tensor(DType::kFloat, {2, 3, 1, 1}));
  Value* b2 = a.add_initializer("b_folded", Tensor(DType::kFloat, {2}));
  Node* conv2 = a.add_node("Conv", {x2, w2, b2}, {"a"}, "", "conv");
  Node* relu2 = a.add_node("Relu", {conv2->output(0)}, {"y"}, "", "relu");
  a.add_output(relu2->output(0));

  const GraphDiff diff = diff_graphs(b, a);
  EXPECT_EQ(diff.removed, 0u);
  EXPECT_EQ(diff.fused, 1u);
  EXPECT_EQ(diff.before.at(conv), NodeMark::kFused);
  EXPECT_EQ(diff.before.at(bn), NodeMark::kFused);
  EXPECT_EQ(diff.before.count(relu), 0u);
  EXPECT_EQ(diff.after.at(conv2), NodeMark::kFused);
  EXPECT_EQ(diff.after.count(relu2), 0u);
}

// An eliminated Identity leaves its producer as it was: removed, not fused.
TEST(GraphDiff, EliminatedIdentityIsRemoved) {
  Model before = empty_model();
  Graph& b = before.graph();
  Value* x = b.add_input("x", float_type({2}));
  Node* neg = b.add_node("Neg", {x}, {"a"}, "", "neg");
  Node* identity = b.add_node("Identity", {neg->output(0)}, {"i"}, "", "identity");
  b.add_output(b.add_node("Abs", {identity->output(0)}, {"y"}, "", "abs")->output(0));
  Model after = empty_model();
  Graph& a = after.graph();
  Value* x2 = a.add_input("x", float_type({2}));
  Node* neg2 = a.add_node("Neg", {x2}, {"a"}, "", "neg");
  a.add_output(a.add_node("Abs", {neg2->output(0)}, {"y"}, "", "abs")->output(0));
  const GraphDiff diff = diff_graphs(b, a);
  EXPECT_EQ(diff.removed, 1u);
  EXPECT_EQ(diff.fused, 0u);
  EXPECT_EQ(diff.before.at(identity), NodeMark::kRemoved);
  EXPECT_EQ(diff.before.count(neg), 0u);
}

TEST(GraphSvg, NamesAreEscaped) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x<&>\"", float_type({1}));
  Node* relu = g.add_node("Relu", {x}, {"y\\n"}, "", "a\\b<script>");
  g.add_output(relu->output(0));
  auto picture = render_graph_svg(g);
  ASSERT_TRUE(picture.ok()) << picture.error();
  const std::string& svg = picture.value().svg;
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_NE(svg.find("a\\b&lt;script&gt;"), std::string::npos);
}

TEST(HtmlPage, SelfContainedWithRenderSignal) {
  HtmlPage page("t <1>");
  page.paragraph("a & b");
  page.table({{"op", "n"}, {{"Conv", "3"}}, ""});
  const std::string html = page.finish();
  EXPECT_NE(html.find("<title>t &lt;1&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("a &amp; b"), std::string::npos);
  EXPECT_NE(html.find("data-render=\"pending\""), std::string::npos);
  EXPECT_NE(html.find("prefers-color-scheme:dark"), std::string::npos);
  EXPECT_NE(html.find("@media print"), std::string::npos);
  // Nothing fetched from anywhere.
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
}

TEST(Charts, HistogramCountsEveryValue) {
  const std::string svg = histogram_svg({{"a", {1, 1, 2, 3}}, {"b", {2, 2}}}, "ms", 3);
  // Bins [1,1.67) [1.67,2.33) [2.33,3]: a has 2,1,1 and b 0,2,0 -> 4 bars.
  EXPECT_EQ(count_matches(svg, R"(<rect class="s0")"), 3u + 1u);  // 3 bars + its legend swatch
  EXPECT_EQ(count_matches(svg, R"(<rect class="s1")"), 1u + 1u);
  EXPECT_NE(svg.find("a: 2 runs"), std::string::npos);
  EXPECT_NE(svg.find("b: 2 runs"), std::string::npos);
}

TEST(BenchPage, TwoRecordsSideBySide) {
  BenchRecord first;
  first.label = "onnxkit m";
  first.model = "m.onnx";
  first.runs_ms = {2, 3, 4};
  first.latency_ms = latency_summary(first.runs_ms);
  first.ops = {{"Conv", 6, 75, 3}, {"Relu", 2, 25, 3}};
  first.profiled_runs = 3;
  first.memory = {{0, 10, 1.0}, {5, 12, 2.0}};
  BenchRecord second = first;
  second.label = "peer";
  second.runs_ms = {4, 6, 8};
  second.latency_ms = latency_summary(second.runs_ms);
  const std::string html = render_bench_page({first, second});
  EXPECT_NE(html.find("peer / onnxkit m"), std::string::npos);
  EXPECT_NE(html.find("2.00x"), std::string::npos);  // p50 6 vs 3
  EXPECT_GE(count_matches(html, R"(<svg class="chart")"), 5u);
  EXPECT_NE(html.find("peer Conv: 75"), std::string::npos);
}

}  // namespace
}  // namespace onnxkit::report

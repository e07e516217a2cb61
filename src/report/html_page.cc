#include "report/html_page.h"

#include <fmt/format.h>

#include <iterator>

namespace onnxkit::report {
namespace {

// Colours are CSS variables, so one block of rules serves both themes; Graphviz's own fill
// and stroke attributes are overridden (CSS beats SVG presentation attributes).
constexpr std::string_view kStyle = R"CSS(
:root{--bg:#fff;--fg:#1d1f21;--muted:#5f6368;--line:#3c4043;--edge:#80868b;--node:#f8f9fa;
--io:#e8f0fe;--removed:#fad2cf;--added:#ceead6;--fused:#fde8a8;--changed:#e1d5f7;--hit:#d93025;
--cluster:#f1f3f4;--s0:#1a73e8;--s1:#e8710a;--grid:#dadce0;--pane:#fcfcfd}
@media (prefers-color-scheme:dark){:root{--bg:#1e1f22;--fg:#e8eaed;--muted:#9aa0a6;--line:#bdc1c6;
--edge:#9aa0a6;--node:#2d2f33;--io:#1f3a5f;--removed:#6b2b27;--added:#1f4d2e;--fused:#5c4a12;
--changed:#43325f;--hit:#f28b82;--cluster:#26282c;--s0:#8ab4f8;--s1:#fcad70;--grid:#3c4043;
--pane:#232428}}
body{background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,sans-serif;margin:1.2em 2em}
h1{font-size:1.4em;margin:.2em 0 .6em}h2{font-size:1.15em;margin:1.4em 0 .5em}
table{border-collapse:collapse;margin:.4em 0 1em}caption{text-align:left;color:var(--muted)}
td,th{padding:.15em .8em;border-bottom:1px solid var(--grid)}th{text-align:left}
td+td,th+th{text-align:right;font-variant-numeric:tabular-nums}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:.1em 1.2em}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
.panes{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:1em}
.pane{border:1px solid var(--grid);border-radius:6px;background:var(--pane);overflow:hidden}
.pane h3{font-size:1em;margin:0;padding:.4em .7em;border-bottom:1px solid var(--grid)}
.pane .note{color:var(--muted);font-size:.85em;padding:0 .7em}
.pane .view{height:78vh;cursor:grab;touch-action:none}
.pane svg{width:100%;height:100%;display:block}
.tools{display:flex;gap:.6em;align-items:center;margin:.4em 0}
.tools input{font:inherit;padding:.2em .5em;min-width:22em;background:var(--bg);color:var(--fg);
border:1px solid var(--line);border-radius:4px}
.legend span{display:inline-block;padding:0 .5em;margin-right:.3em;border-radius:3px}
.graph>polygon{fill:transparent;stroke:none}
svg text{fill:var(--fg);font-family:Helvetica,Arial,sans-serif}
.node path,.node polygon,.node ellipse{fill:var(--node);stroke:var(--line)}
.node.io ellipse{fill:var(--io)}
.removed,.node.removed path,.node.removed polygon{fill:var(--removed);background:var(--removed)}
.added,.node.added path,.node.added polygon{fill:var(--added);background:var(--added)}
.fused,.node.fused path,.node.fused polygon{fill:var(--fused);background:var(--fused)}
.changed,.node.changed path,.node.changed polygon{fill:var(--changed);background:var(--changed)}
.node.hit path,.node.hit polygon,.node.hit ellipse{stroke:var(--hit);stroke-width:4}
.edge path{stroke:var(--edge)}.edge polygon{fill:var(--edge);stroke:var(--edge)}
.edge text{fill:var(--muted)}
.cluster polygon,.cluster path{fill:var(--cluster);stroke:var(--edge)}
.chart .axis{stroke:var(--line)}.chart .grid{stroke:var(--grid)}
.chart .s0{fill:var(--s0);stroke:var(--s0)}.chart .s1{fill:var(--s1);stroke:var(--s1)}
.chart polyline.s0,.chart polyline.s1{fill:none;stroke-width:1.5}.chart text{font-size:11px}
.chart rect.s0,.chart rect.s1{fill-opacity:.75}
figure{margin:.6em 0 1.2em}figcaption{color:var(--muted);font-size:.9em}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:1em}
@media print{body{margin:0;background:#fff;color:#000}.tools{display:none}
.panes{display:block}.pane{break-inside:avoid;margin-bottom:1em;border:none}
.pane .view{height:auto}.pane svg{height:auto;max-height:95vh}
:root{--bg:#fff;--fg:#000;--pane:#fff}}
)CSS";

// Before anything else runs: collect script errors and console.error calls, so the page can
// say whether it rendered cleanly.
constexpr std::string_view kErrorTrap = R"JS(
window.reportErrors=[];
window.addEventListener('error',function(e){reportErrors.push(String(e.message));
if(document.body)document.body.dataset.render='error';});
(function(){var original=console.error;console.error=function(){
reportErrors.push(Array.prototype.join.call(arguments,' '));
if(document.body)document.body.dataset.render='error';return original.apply(console,arguments);};})();
)JS";

// Pan (drag), zoom (wheel, around the pointer), fit (double click) on each graph pane by
// moving the SVG's viewBox; search marks matching nodes in every pane and zooms to the first
// (Enter: the next); then the render signal.
constexpr std::string_view kScript = R"JS(
(function(){
'use strict';
var panes=[];
function Pane(view){
  var svg=view.querySelector('svg');
  this.nodes=[];this.texts=[];this.center=function(){};this.fit=function(){};
  if(!svg)return;  // a graph too large to draw: its pane holds the reason
  svg.removeAttribute('width');svg.removeAttribute('height');
  var base=svg.viewBox.baseVal;
  var full={x:base.x,y:base.y,w:base.width,h:base.height};
  var box={x:full.x,y:full.y,w:full.w,h:full.h};
  function apply(){svg.setAttribute('viewBox',box.x+' '+box.y+' '+box.w+' '+box.h);}
  function toSvg(clientX,clientY){
    var m=svg.getScreenCTM();
    if(!m)return{x:box.x,y:box.y};
    var p=svg.createSVGPoint();p.x=clientX;p.y=clientY;
    return p.matrixTransform(m.inverse());}
  function zoom(factor,clientX,clientY){
    var p=toSvg(clientX,clientY);
    box.x=p.x-(p.x-box.x)*factor;box.y=p.y-(p.y-box.y)*factor;
    box.w*=factor;box.h*=factor;apply();}
  function fit(){box={x:full.x,y:full.y,w:full.w,h:full.h};apply();}
  // The picture starts at its top, at most 1.5 graph units per pixel (a transformer's
  // thousand nodes stay readable) and never enlarged; double click fits the whole graph.
  function start(){
    var r=view.getBoundingClientRect();
    if(!r.width||!r.height){fit();return;}
    var w=Math.max(r.width,Math.min(full.w,r.width*1.5)),h=w*r.height/r.width;
    box={x:full.x+(full.w-w)/2,y:full.y,w:w,h:h};apply();}
  // Moves the view to `el`, `width` graph units wide.
  function center(el,width){
    var b=el.getBBox(),m=el.getScreenCTM(),s=svg.getScreenCTM();
    if(!m||!s)return;
    var p=svg.createSVGPoint();p.x=b.x+b.width/2;p.y=b.y+b.height/2;
    p=p.matrixTransform(m).matrixTransform(s.inverse());
    var aspect=box.h/box.w;box.w=width;box.h=width*aspect;
    box.x=p.x-box.w/2;box.y=p.y-box.h/2;apply();}
  view.addEventListener('wheel',function(e){e.preventDefault();
    zoom(Math.pow(1.0015,e.deltaY),e.clientX,e.clientY);},{passive:false});
  var drag=null;
  view.addEventListener('pointerdown',function(e){drag={x:e.clientX,y:e.clientY};
    view.setPointerCapture(e.pointerId);view.style.cursor='grabbing';});
  view.addEventListener('pointermove',function(e){if(!drag)return;
    var m=svg.getScreenCTM();if(!m)return;
    box.x-=(e.clientX-drag.x)/m.a;box.y-=(e.clientY-drag.y)/m.d;
    drag={x:e.clientX,y:e.clientY};apply();});
  function release(){drag=null;view.style.cursor='';}
  view.addEventListener('pointerup',release);view.addEventListener('pointercancel',release);
  view.addEventListener('dblclick',fit);
  this.nodes=Array.prototype.slice.call(svg.querySelectorAll('g.node'));
  this.texts=this.nodes.map(function(n){return n.textContent.toLowerCase();});
  this.center=center;this.fit=fit;
  start();
}
var views=document.querySelectorAll('.pane .view');
for(var i=0;i<views.length;++i)panes.push(new Pane(views[i]));
var search=document.getElementById('search'),count=document.getElementById('search-count');
var hits=[],current=-1;
function find(){
  var q=search.value.trim().toLowerCase();hits=[];current=-1;
  panes.forEach(function(pane){
    pane.nodes.forEach(function(node,k){
      var hit=q.length>0&&pane.texts[k].indexOf(q)>=0;
      node.classList.toggle('hit',hit);
      if(hit)hits.push({pane:pane,node:node});});});
  if(count)count.textContent=q?hits.length+' found':'';
  if(q)next();}
function next(){
  if(!hits.length)return;
  current=(current+1)%hits.length;
  var first=hits[current];
  first.pane.center(first.node,600);
  panes.forEach(function(pane){
    if(pane===first.pane)return;
    for(var k=0;k<hits.length;++k)if(hits[k].pane===pane){pane.center(hits[k].node,600);break;}});}
if(search){
  var timer=null;
  search.addEventListener('input',function(){clearTimeout(timer);timer=setTimeout(find,150);});
  search.addEventListener('keydown',function(e){if(e.key==='Enter'){e.preventDefault();next();}});}
// Paper shows each whole graph.
window.addEventListener('beforeprint',function(){panes.forEach(function(p){p.fit();});});
document.body.offsetHeight;
document.body.dataset.renderMs=performance.now().toFixed(1);
document.body.dataset.render=window.reportErrors.length?'error':'ok';
})();
)JS";

// Graphviz's SVG as the page embeds it, a sixth smaller (BERT-base: 2.57 -> 2.16 MB of page),
// which the browser parses that much sooner: no comments, no <title> (Graphviz's are element
// ids, useless as tooltips), no font-family on every text (the page's CSS sets it).
std::string compact_svg(std::string_view svg) {
  constexpr std::string_view kFont = " font-family=\"";
  std::string out;
  out.reserve(svg.size());
  size_t pos = 0;
  while (pos < svg.size()) {
    if (svg.compare(pos, 4, "<!--") == 0) {
      const size_t end = svg.find("-->", pos);
      if (end == std::string_view::npos) break;
      pos = end + 3;
      if (pos < svg.size() && svg[pos] == '\n') ++pos;
    } else if (svg.compare(pos, 7, "<title>") == 0) {
      const size_t end = svg.find("</title>", pos);
      if (end == std::string_view::npos) break;
      pos = end + 8;
    } else if (svg.compare(pos, kFont.size(), kFont) == 0) {
      const size_t end = svg.find('"', pos + kFont.size());
      if (end == std::string_view::npos) break;
      pos = end + 1;
    } else {
      out += svg[pos++];
    }
  }
  return out;
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", value, kUnits[unit]);
}

std::string format_seconds(double seconds) {
  if (seconds < 1.0) return fmt::format("{:.1f} ms", seconds * 1e3);
  return fmt::format("{:.2f} s", seconds);
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {
  body_ += fmt::format("<h1>{}</h1>\n", html_escape(title_));
}

void HtmlPage::heading(std::string_view text, int level) {
  body_ += fmt::format("<h{0}>{1}</h{0}>\n", level, html_escape(text));
}

void HtmlPage::paragraph(std::string_view text) {
  body_ += fmt::format("<p>{}</p>\n", html_escape(text));
}

void HtmlPage::facts(const std::vector<std::pair<std::string, std::string>>& items) {
  body_ += "<dl class=\"facts\">\n";
  for (const auto& [label, value] : items) {
    body_ += fmt::format("<dt>{}</dt><dd>{}</dd>\n", html_escape(label), html_escape(value));
  }
  body_ += "</dl>\n";
}

void HtmlPage::table(const Table& table) {
  body_ += "<table>\n";
  if (!table.caption.empty())
    body_ += fmt::format("<caption>{}</caption>\n", html_escape(table.caption));
  body_ += "<thead><tr>";
  for (const auto& cell : table.header) body_ += fmt::format("<th>{}</th>", html_escape(cell));
  body_ += "</tr></thead>\n<tbody>\n";
  for (const auto& row : table.rows) {
    body_ += "<tr>";
    for (const auto& cell : row) body_ += fmt::format("<td>{}</td>", html_escape(cell));
    body_ += "</tr>\n";
  }
  body_ += "</tbody></table>\n";
}

void HtmlPage::graph_panes(const std::vector<GraphPane>& panes) {
  body_ +=
      "<div class=\"tools\"><input id=\"search\" type=\"search\" placeholder=\"Find a node: op "
      "type, name or shape (Enter: next)\"><span id=\"search-count\"></span><span "
      "class=\"legend\"><span class=\"removed\">removed</span><span "
      "class=\"fused\">fused</span><span class=\"changed\">changed</span><span "
      "class=\"added\">new</span></span></div>\n<div class=\"panes\">\n";
  for (const GraphPane& pane : panes) {
    body_ += fmt::format("<section class=\"pane\"><h3>{}</h3>", html_escape(pane.title));
    if (!pane.note.empty())
      body_ += fmt::format("<p class=\"note\">{}</p>", html_escape(pane.note));
    body_ += "<div class=\"view\">";
    body_ += compact_svg(pane.svg);
    body_ += "</div></section>\n";
  }
  body_ += "</div>\n";
}

void HtmlPage::figure(std::string_view svg, std::string_view caption) {
  body_ += "<figure>";
  body_ += svg;
  body_ += fmt::format("<figcaption>{}</figcaption></figure>\n", html_escape(caption));
}

void HtmlPage::raw(std::string_view html) {
  body_ += html;
}

std::string HtmlPage::finish() const {
  std::string page;
  page.reserve(body_.size() + 16384);
  page += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n";
  page += "<meta name=\"color-scheme\" content=\"light dark\">\n";
  page += fmt::format("<title>{}</title>\n", html_escape(title_));
  page += "<script>";
  page += kErrorTrap;
  page += "</script>\n<style>";
  page += kStyle;
  page += "</style></head>\n<body data-render=\"pending\">\n";
  page += body_;
  page += "<script>";
  page += kScript;
  page += "</script>\n</body></html>\n";
  return page;
}

}  // namespace onnxkit::report

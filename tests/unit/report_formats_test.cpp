// The report's text formats: HTML, DOT and Mermaid escaping of hostile names, the tree and
// chart SVG, and the chart's tick choice.
#include <catch2/catch.hpp>

#include "report/graph_formats.h"
#include "report/html_report.h"
#include "report/html_text.h"
#include "report/svg_chart.h"
#include "report/svg_tree.h"

using namespace scion::report;

namespace {

const std::string kOdd = "odd \"name\" <x>&y";

std::vector<ReportModel> odd_family() {
  return {{.name = "base",
           .method = "base",
           .status = "trained",
           .parameters = 10,
           .own_parameters = 10},
          {.name = kOdd, .parent = "base", .method = "lora r=4", .status = "not trained"},
          {.name = "back\\slash", .parent = "base", .method = "prefix", .status = "out of date"}};
}

std::vector<ReportShare> odd_share() {
  return {{.name = "s\"1", .models = {kOdd, "back\\slash"}, .modules = {"head.$model.*"}}};
}

}  // namespace

TEST_CASE("short texts and numbers", "[report]") {
  CHECK(shorten("abcdef", 4) == "abc…");
  CHECK(shorten("abc", 4) == "abc");
  CHECK(shorten("ééééé", 3) == "éé…");  // cuts between UTF-8 characters, never inside one
  CHECK(percent(0.125) == "12.5%");
  CHECK(percent(0.4) == "40%");
}

TEST_CASE("DOT labels and ids are escaped; shares are undirected dashed links", "[report]") {
  const std::string dot = family_dot(odd_family(), odd_share());
  CHECK(dot_escape(kOdd) == "odd \\\"name\\\" <x>&y");
  CHECK_THAT(dot, Catch::Contains("  \"odd \\\"name\\\" <x>&y\" [label=\"odd \\\"name\\\" "
                                  "<x>&y\\nlora r=4\\nnot trained\", style=dashed];"));
  CHECK_THAT(
      dot, Catch::Contains(
               "\"back\\\\slash\" [label=\"back\\\\slash\\nprefix\\nout of date\", color=orange]"));
  CHECK_THAT(dot, Catch::Contains("  \"base\" -> \"odd \\\"name\\\" <x>&y\";"));
  CHECK_THAT(dot, Catch::Contains(
                      "\"odd \\\"name\\\" <x>&y\" -> \"back\\\\slash\" [dir=none, style=dashed"));
  CHECK_THAT(dot, Catch::Contains("label=\"share s\\\"1\"]"));
  // Every quote that opens a string is closed: outside strings, quotes pair up per line.
  for (std::size_t start = 0, end; (end = dot.find('\n', start)) != std::string::npos;
       start = end + 1) {
    int quotes = 0;
    for (std::size_t i = start; i < end; ++i) {
      if (dot[i] == '\\')
        ++i;  // an escaped character
      else if (dot[i] == '"')
        ++quotes;
    }
    CHECK(quotes % 2 == 0);
  }
}

TEST_CASE("Mermaid labels use entity codes; status classes and shares are drawn", "[report]") {
  const std::string mermaid = family_mermaid(odd_family(), odd_share());
  CHECK_THAT(mermaid,
             Catch::Contains(
                 "  m1[\"odd #quot;name#quot; #lt;x#gt;#amp;y<br/>lora r=4<br/>not trained\"]"));
  CHECK_THAT(mermaid, Catch::Contains("  m0 --> m1\n"));
  CHECK_THAT(mermaid, Catch::Contains("  m1 -.-|\"share s#quot;1\"| m2\n"));
  CHECK_THAT(mermaid, Catch::Contains("  class m1 absent\n"));
  CHECK_THAT(mermaid, Catch::Contains("  class m2 stale\n"));
  CHECK(mermaid.find(kOdd) == std::string::npos);
}

TEST_CASE("the tree SVG has a box per model, an edge per parent and the share", "[report]") {
  const std::string svg = lineage_tree_svg(odd_family(), odd_share());
  CHECK_THAT(svg, Catch::StartsWith("<svg class=\"lineage-tree\""));
  CHECK_THAT(svg, Catch::Contains("data-model=\"odd &quot;name&quot; &lt;x&gt;&amp;y\""));
  CHECK(svg.find(kOdd) == std::string::npos);
  std::size_t nodes = 0, edges = 0, shares = 0;
  for (std::size_t at = 0; (at = svg.find("<g class=\"node ", at)) != std::string::npos; ++at)
    ++nodes;
  for (std::size_t at = 0; (at = svg.find("<g class=\"edge\"", at)) != std::string::npos; ++at)
    ++edges;
  for (std::size_t at = 0; (at = svg.find("<g class=\"share\"", at)) != std::string::npos; ++at)
    ++shares;
  CHECK(nodes == 3);
  CHECK(edges == 2);
  CHECK(shares == 1);
  CHECK_THAT(svg, Catch::Contains("status-absent"));
  CHECK_THAT(svg, Catch::Contains("status-stale"));
}

TEST_CASE("charts: round ticks covering the data, one path per series", "[report]") {
  CHECK(nice_ticks(0, 40, 5) == std::vector<double>{0, 10, 20, 30, 40});
  const auto ticks = nice_ticks(0.652, 0.836, 4);
  CHECK(ticks.front() <= 0.652);
  CHECK(ticks.back() >= 0.836);
  CHECK(ticks.size() <= 6);
  Chart chart{.title = "loss <1>", .x_label = "step"};
  chart.series.push_back(
      {.name = "loss", .css_class = "s0", .points = {{1, 0.7}, {2, 0.6}, {3, 0.65}}});
  chart.series.push_back(
      {.name = "val_loss", .css_class = "s1", .points = {{3, 0.66}}, .markers = true});
  const std::string svg = line_chart_svg(chart);
  CHECK_THAT(svg, Catch::Contains("aria-label=\"loss &lt;1&gt;\""));
  CHECK_THAT(svg, Catch::Contains("data-series=\"loss\"><path d=\"M"));
  CHECK_THAT(svg, Catch::Contains("<circle"));
  CHECK_THAT(line_chart_svg({.title = "empty"}), Catch::Contains("no values recorded"));
}

TEST_CASE("the page escapes every name and loads nothing", "[report]") {
  FamilyReport report{
      .title = "fam<ily>", .generated_at = "2026-11-24T00:00:00Z", .scion_version = "0.1.0"};
  report.models = odd_family();
  report.tests = {"t&1"};
  report.matrix.push_back(
      {.test = "t&1",
       .model = kOdd,
       .run = 3,
       .cases = 4,
       .failures = 1,
       .previous_rate = 0.5,
       .max_failure_rate = 0.1,
       .failing = {
           {.case_index = 2, .input = "<script>x</script>", .expected = "a", .output = "b"}}});
  const std::string html = render_html(report);
  CHECK(html.find(kOdd) == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK_THAT(html, Catch::Contains("&lt;script&gt;x&lt;/script&gt;"));
  CHECK_THAT(html, Catch::Contains("<title>fam&lt;ily&gt; — scion family report</title>"));
  CHECK_THAT(html, Catch::Contains("class=\"cell over\""));
  CHECK_THAT(html, Catch::Contains("(-25)"));  // 25% now against 50% in the previous run
  CHECK_THAT(html, Catch::Contains("href=\"#cases-0\""));
  CHECK_THAT(html, Catch::Contains("id=\"cases-0\""));
}

TEST_CASE("a violation's output rounds its numbers for reading", "[report]") {
  FamilyReport report{.title = "f", .generated_at = "2026-11-24T00:00:00Z"};
  scion::lineage::AssertionViolation worst;
  worst.input = "where is it";
  worst.detail = {{"severity", 0.4},
                  {"label", "question"},
                  {"confidence", 0.6810895204544067},
                  {"log_likelihoods", {{"yes", -1.23456789}}}};
  report.violations.push_back({.assertion = "low-confidence",
                               .model = "intent",
                               .count = 1,
                               .max_severity = 0.4,
                               .worst = {worst}});
  const std::string html = render_html(report);
  CHECK_THAT(html,
             Catch::Contains("confidence 0.681, label question, log_likelihoods {yes -1.23}"));
  CHECK(html.find("0.6810895") == std::string::npos);
}

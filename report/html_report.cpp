#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "base/markup_escape.h"
#include "report/html_style.h"
#include "report/html_text.h"
#include "report/svg_chart.h"
#include "report/svg_tree.h"

namespace scion::report {
namespace {

// Violations and blame rows the page lists; the rest are counted.
constexpr std::size_t kViolationRows = 20;

std::string esc(const std::string& s) { return base::markup_escape(s); }

std::string header(const FamilyReport& r) {
  std::size_t stored = 0, over = 0, violations = 0;
  for (const ReportModel& m : r.models) stored += m.parameters ? 1 : 0;
  for (const MatrixCell& c : r.matrix)
    over += c.max_failure_rate && c.failure_rate() > *c.max_failure_rate ? 1 : 0;
  for (const ViolationGroup& v : r.violations) violations += static_cast<std::size_t>(v.count);
  std::string out = "<header><h1>" + esc(r.title) + " — scion family report</h1>";
  out +=
      "<div class=\"sub\">generated " + esc(r.generated_at) + " by scion " + esc(r.scion_version);
  if (!r.spec_note.empty()) out += " · " + esc(r.spec_note);
  out += "</div><div class=\"summary\">";
  out += fmt::format("<div><b>{}</b>models</div><div><b>{}</b>with stored parameters</div>",
                     r.models.size(), stored);
  out +=
      fmt::format("<div><b>{}</b>tests × models</div><div><b>{}</b>over their failure rate</div>",
                  r.matrix.size(), over);
  out += fmt::format("<div><b>{}</b>assertion violations</div></div></header>", violations);
  return out;
}

std::string nav() {
  return "<nav><a href=\"#tree\">Family tree</a><a href=\"#matrix\">Test matrix</a>"
         "<a href=\"#violations\">Assertion violations</a><a href=\"#blame\">Blame</a>"
         "<a href=\"#curves\">Training curves</a><a href=\"#evaluations\">Evaluations</a>"
         "<a href=\"#recipes\">Recipes</a></nav>";
}

std::string tree_section(const FamilyReport& r) {
  std::string out = "<section id=\"tree\"><h2>Family tree</h2>";
  if (r.models.empty())
    return out + "<p class=\"empty\">no models: the spec and the store are empty</p></section>";
  out +=
      "<p class=\"note\">Each box: model, method · status, tensors shared with the parent and its "
      "own, "
      "last validation metrics. Edges say how many tensors a child shares with its parent; dashed "
      "purple links join the members of a <code>share</code>. Click a box for its recipe.</p>";
  out += "<div class=\"scroll\">" + lineage_tree_svg(r.models, r.shares) + "</div>";
  out +=
      "<div class=\"legend-row\"><span><span class=\"swatch\" "
      "style=\"border-color:#1e8e3e;background:#f1faf3\"></span>"
      "trained / imported</span><span><span class=\"swatch\" "
      "style=\"border-color:#d08a00;background:#fff8e6\"></span>"
      "out of date / interrupted</span><span><span class=\"swatch\" "
      "style=\"border-color:#9aa5b1;border-style:dashed\">"
      "</span>not trained</span><span><span class=\"swatch\" "
      "style=\"border-color:#c5221f;background:#fdf1f0\"></span>"
      "other</span></div></section>";
  return out;
}

// White through amber to red as the failure rate grows; green at zero.
std::string heat_style(double rate) {
  if (rate <= 0) return "background:#e6f4ea;color:#1e5631";
  const double t = std::clamp(std::sqrt(rate), 0.0, 1.0);  // small rates stay visible
  auto mix = [t](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * t)); };
  const int red = mix(0xfd, 0xc5), green = mix(0xef, 0x22), blue = mix(0xd5, 0x1f);
  return fmt::format("background:rgb({},{},{});color:{}", red, green, blue,
                     t > 0.55 ? "#fff" : "#3c2a00");
}

std::string delta_text(const MatrixCell& c) {
  if (!c.previous_rate) return "";
  const double delta = 100 * (c.failure_rate() - *c.previous_rate);
  if (std::abs(delta) < 0.05)
    return "<span class=\"delta\" title=\"same as the previous run\">(=)</span>";
  return fmt::format(
      "<span class=\"delta\" title=\"change since the model's previous test run, in "
      "points\">({:+.0f})</span>",
      delta);
}

std::string matrix_section(
    const FamilyReport& r,
    const std::map<std::pair<std::string, std::string>, std::size_t>& cell_of) {
  std::string out = "<section id=\"matrix\"><h2>Behavioural-test matrix</h2>";
  if (r.matrix.empty())
    return out +
           "<p class=\"empty\">no test results stored: run <code>scion test</code></p></section>";
  out +=
      "<p class=\"note\">Failure rate of each test on each model in the model's newest test run, "
      "with the "
      "change since its previous run in points. A red outline marks a rate over the test's "
      "<code>max_failure_rate</code>. Click a cell for its failing cases.</p>";
  std::vector<std::string> columns;
  for (const ReportModel& m : r.models)
    if (std::any_of(r.matrix.begin(), r.matrix.end(),
                    [&](const MatrixCell& c) { return c.model == m.name; }))
      columns.push_back(m.name);
  out += "<div class=\"scroll\"><table class=\"test-matrix\"><thead><tr><th>test \\ model</th>";
  for (const std::string& m : columns) out += "<th>" + esc(m) + "</th>";
  out += "</tr></thead><tbody>";
  for (const std::string& test : r.tests) {
    out += "<tr><th>" + esc(test) + "</th>";
    for (const std::string& model : columns) {
      auto it = cell_of.find({test, model});
      if (it == cell_of.end()) {
        out += "<td class=\"cell none\" title=\"not run on this model\">–</td>";
        continue;
      }
      const MatrixCell& c = r.matrix[it->second];
      const bool over = c.max_failure_rate && c.failure_rate() > *c.max_failure_rate;
      std::string tip = fmt::format("{} on {}: {} of {} cases fail (run {})", test, model,
                                    c.failures, c.cases, c.run);
      if (c.max_failure_rate) tip += ", allowed " + percent(*c.max_failure_rate);
      std::string body = (c.cases == 0 ? std::string("no cases") : percent(c.failure_rate())) +
                         " " + delta_text(c) +
                         fmt::format("<span class=\"n\">{}/{}</span>", c.failures, c.cases);
      if (c.failures > 0) body = fmt::format("<a href=\"#cases-{}\">{}</a>", it->second, body);
      out += fmt::format(
          "<td class=\"cell{}\" data-test=\"{}\" data-model=\"{}\" data-rate=\"{:.4f}\" "
          "style=\"{}\" "
          "title=\"{}\">{}</td>",
          over ? " over" : "", esc(test), esc(model), c.failure_rate(),
          heat_style(c.failure_rate()), esc(tip), body);
    }
    out += "</tr>";
  }
  out += "</tbody></table></div>";
  out += "<h3>Failing cases</h3>";
  bool any = false;
  for (std::size_t i = 0; i < r.matrix.size(); ++i) {
    const MatrixCell& c = r.matrix[i];
    if (c.failures == 0) continue;
    any = true;
    out += fmt::format(
        "<details class=\"failing\" id=\"cases-{}\"><summary>{} on {}: {} of {} cases "
        "fail</summary>",
        i, esc(c.test), esc(c.model), c.failures, c.cases);
    out +=
        "<table "
        "class=\"cases\"><tr><th>case</th><th>input</th><th>expected</th><th>output</th></tr>";
    for (const FailingCase& f : c.failing)
      out += fmt::format(
          "<tr><td class=\"num\">{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td></tr>",
          f.case_index, esc(f.input), esc(f.expected), esc(f.output));
    out += "</table>";
    if (static_cast<std::size_t>(c.failures) > c.failing.size())
      out += fmt::format(
          "<p class=\"note\">{} more: <code>scion test --json</code> lists them all</p>",
          static_cast<std::size_t>(c.failures) - c.failing.size());
    out += "</details>";
  }
  if (!any) out += "<p class=\"empty\">none: every case passes</p>";
  return out + "</section>";
}

// A detail's value for reading: text as it is, numbers rounded as the report's others
// (a confidence of 0.6810895204544067 reads 0.681), objects and lists by their members.
std::string detail_value(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) return short_number(value.get<double>());
  if (value.is_object()) {
    std::string out;
    for (const auto& [key, member] : value.items())
      out += (out.empty() ? "" : ", ") + key + " " + detail_value(member);
    return "{" + out + "}";
  }
  if (value.is_array()) {
    std::string out;
    for (const nlohmann::json& item : value) out += (out.empty() ? "" : ", ") + detail_value(item);
    return "[" + out + "]";
  }
  return value.dump();
}

std::string violation_detail(const nlohmann::json& detail) {
  std::string out;
  for (const auto& [key, value] : detail.items()) {
    if (key == "severity") continue;
    out += (out.empty() ? "" : ", ") + key + " " + detail_value(value);
  }
  return out;
}

std::string violations_section(const FamilyReport& r) {
  std::string out = "<section id=\"violations\"><h2>Top assertion violations</h2>";
  if (r.violations.empty())
    return out +
           "<p class=\"empty\">no violations stored in the models' newest test runs</p></section>";
  out +=
      "<table class=\"violations\"><tr><th>assertion</th><th>model</th><th "
      "class=\"num\">violations</th>"
      "<th class=\"num\">worst severity</th><th>worst input</th><th>output</th></tr>";
  std::size_t rows = 0;
  for (const ViolationGroup& g : r.violations) {
    if (rows++ == kViolationRows) break;
    const lineage::AssertionViolation* worst = g.worst.empty() ? nullptr : &g.worst.front();
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"mono\">{}</td>"
        "<td>{}</td></tr>",
        esc(g.assertion), esc(g.model), g.count, short_number(g.max_severity),
        worst ? esc(worst->input) : "", worst ? esc(violation_detail(worst->detail)) : "");
  }
  out += "</table>";
  if (r.violations.size() > kViolationRows)
    out +=
        fmt::format("<p class=\"note\">{} more groups</p>", r.violations.size() - kViolationRows);
  return out + "</section>";
}

std::string blame_section(const FamilyReport& r) {
  std::string out = "<section id=\"blame\"><h2>Blame</h2>";
  if (r.blame.empty()) return out + "<p class=\"empty\">no failing cases to trace</p></section>";
  out +=
      "<p class=\"note\">For each failing test, where up the model's ancestry its failing cases "
      "first appear, "
      "from the stored results of each ancestor's newest test run (a case is introduced by the "
      "model just "
      "below the nearest ancestor that passes it, or by the top of the chain, which stops below "
      "the first ancestor of another kind). <code>scion lineage blame MODEL</code> runs the "
      "whole "
      "chain again and also covers ancestors the test does not select.</p>";
  out +=
      "<table class=\"blame\"><tr><th>model</th><th>test</th><th "
      "class=\"num\">failing</th><th>first appear in</th></tr>";
  for (const BlameSummary& b : r.blame) {
    std::string origins;
    for (const auto& [origin, count] : b.by_origin)
      origins += (origins.empty() ? "" : ", ") + fmt::format("{} ({})", esc(origin), count);
    if (b.untested_ancestry > 0)
      origins += (origins.empty() ? "" : ", ") +
                 fmt::format("unknown ({}): an ancestor has no result", b.untested_ancestry);
    out += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                       esc(b.model), esc(b.test), b.failures, origins);
  }
  return out + "</table></section>";
}

std::vector<ChartSeries> curve_series(const TrainingCurve& curve, bool losses) {
  ChartSeries train{.name = "loss", .css_class = "s0"};
  std::map<std::string, ChartSeries> validation;
  for (const lineage::StepMetrics& s : curve.steps) {
    if (losses && s.loss) train.points.emplace_back(double(s.step), *s.loss);
    for (const auto& [name, value] : s.validation) {
      if ((name.find("loss") != std::string::npos) != losses) continue;
      ChartSeries& series = validation[name];
      series.name = name;
      series.markers = true;
      series.points.emplace_back(double(s.step), value);
    }
  }
  std::vector<ChartSeries> out;
  if (!train.points.empty()) out.push_back(std::move(train));
  int colour = 1;
  for (auto& [name, series] : validation) {
    series.css_class = fmt::format("s{}", colour++ % 6);
    out.push_back(std::move(series));
  }
  return out;
}

// A stored metric as text: 4 decimals, or "-" where the store holds none.
std::string metric(const nlohmann::json& metrics, const char* key) {
  const auto it = metrics.find(key);
  return it != metrics.end() && it->is_number() ? fmt::format("{:.4f}", it->get<double>()) : "-";
}

std::string confusion_table(const nlohmann::json& m) {
  const auto labels = m.find("labels"), confusion = m.find("confusion");
  if (labels == m.end() || confusion == m.end() || !labels->is_array() || !confusion->is_array())
    return "";
  std::string out = "<table class=\"confusion\"><tr><th>true \\ predicted</th>";
  for (const auto& l : *labels) out += fmt::format("<th>{}</th>", esc(l.get<std::string>()));
  out += "</tr>";
  for (std::size_t i = 0; i < confusion->size() && i < labels->size(); ++i) {
    out += fmt::format("<tr><th>{}</th>", esc((*labels)[i].get<std::string>()));
    for (const auto& count : (*confusion)[i])
      out += fmt::format("<td class=\"num\">{}</td>", count.dump());
    out += "</tr>";
  }
  return out + "</table>";
}

// A stored evaluation's scores by its task (docs/json.md, "Task heads"): "name value" pairs
// joined by " · ", "-" for a score the data left undefined.
std::string scores(const nlohmann::json& m) {
  static const std::vector<std::pair<const char*, const char*>> kByTask[] = {
      {{"accuracy", "accuracy"},
       {"macro_f1", "macro-F1"},
       {"mcc", "MCC"},
       {"ece", "ECE"},
       {"roc_auc", "ROC-AUC"}},
      {{"rmse", "RMSE"}, {"mae", "MAE"}, {"pearson", "Pearson"}, {"spearman", "Spearman"}},
      {{"micro_f1", "micro-F1"}, {"macro_f1", "macro-F1"}, {"subset_accuracy", "subset accuracy"}},
      {{"f1", "entity F1"},
       {"precision", "precision"},
       {"recall", "recall"},
       {"accuracy", "word accuracy"}},
      {{"perplexity", "perplexity"}}};
  const std::string task =
      m.value("task", m.contains("perplexity") ? "language model" : "classification");
  const std::size_t row = task == "regression"             ? 1
                          : task == "multi_label"          ? 2
                          : task == "token_classification" ? 3
                          : task == "language model"       ? 4
                                                           : 0;
  std::string out;
  for (const auto& [key, name] : kByTask[row]) {
    if (!m.contains(key)) continue;
    out += fmt::format("{}{} {}", out.empty() ? "" : " · ", name, metric(m, key));
  }
  return out;
}

std::string evaluations_section(const FamilyReport& r) {
  std::string out = "<section id=\"evaluations\"><h2>Evaluations</h2>";
  if (r.evaluations.empty())
    return out + "<p class=\"empty\">no evaluations stored: run <code>scion eval MODEL --data "
                 "NAME</code></p></section>";
  out +=
      "<table class=\"evaluations\"><tr><th>model</th><th>dataset</th><th class=\"num\">rows"
      "</th><th>task</th><th>scores</th><th>version</th><th>confusion matrix</th></tr>";
  for (const ReportEvaluation& e : r.evaluations) {
    const nlohmann::json& m = e.result.metrics;
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>",
        esc(e.result.model), esc(e.result.dataset), e.result.rows,
        esc(m.value("task", e.result.kind)), esc(scores(m)),
        e.current ? "current" : "older parameters", confusion_table(m));
  }
  return out + "</table></section>";
}

std::string curves_section(const FamilyReport& r) {
  std::string out = "<section id=\"curves\"><h2>Training and validation curves</h2>";
  if (r.curves.empty())
    return out +
           "<p class=\"empty\">no training metrics stored: run <code>scion "
           "run</code></p></section>";
  out +=
      "<p class=\"note\">Per-step metrics of the run that made each model's stored parameters "
      "(<code>scion lineage metrics MODEL</code> prints them).</p><div class=\"curves\">";
  for (const TrainingCurve& c : r.curves) {
    out += fmt::format(
        "<div class=\"curve-card\" data-model=\"{}\"><h3>{} <span class=\"note\">run {}, {} "
        "steps</span></h3>",
        esc(c.model), esc(c.model), c.run, c.steps.empty() ? 0 : c.steps.back().step);
    const double last_step = c.steps.empty() ? 0.0 : double(c.steps.back().step);
    out += line_chart_svg(
        {.title = "loss", .x_label = "step", .series = curve_series(c, true), .x_to = last_step});
    std::vector<ChartSeries> other = curve_series(c, false);
    if (!other.empty())
      out += line_chart_svg(
          {.title = "validation", .x_label = "step", .series = other, .x_to = last_step});
    out += "</div>";
  }
  return out + "</div></section>";
}

std::string recipes_section(const FamilyReport& r) {
  std::string out = "<section id=\"recipes\"><h2>Recipes</h2><div class=\"recipes\">";
  for (std::size_t i = 0; i < r.models.size(); ++i) {
    const ReportModel& m = r.models[i];
    out += fmt::format("<div class=\"recipe\" id=\"model-{}\"><h3>{}</h3><table>", i, esc(m.name));
    out += "<tr><td>parent</td><td>" +
           (m.parent.empty() ? std::string("— (base)") : esc(m.parent)) + "</td></tr>";
    out += "<tr><td>status</td><td>" + esc(m.status) + "</td></tr>";
    if (!m.recipe_hash.empty())
      out += "<tr><td>recipe hash</td><td class=\"mono\">" + esc(m.recipe_hash.substr(0, 16)) +
             "…</td></tr>";
    for (const auto& [field, value] : m.recipe)
      out += "<tr><td>" + esc(field) + "</td><td class=\"mono\">" + esc(value) + "</td></tr>";
    out += "</table></div>";
  }
  if (r.models.empty()) out += "<p class=\"empty\">no models</p>";
  return out + "</div></section>";
}

}  // namespace

std::string render_html(const FamilyReport& report) {
  std::map<std::pair<std::string, std::string>, std::size_t> cell_of;
  for (std::size_t i = 0; i < report.matrix.size(); ++i)
    cell_of[{report.matrix[i].test, report.matrix[i].model}] = i;
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<meta name=\"generator\" content=\"scion " +
      esc(report.scion_version) +
      "\">"
      "<title>" +
      esc(report.title) + " — scion family report</title><style>" + kReportStyle +
      "</style></head><body>";
  page += header(report) + nav() + "<main>";
  page += tree_section(report) + matrix_section(report, cell_of) + violations_section(report) +
          blame_section(report) + curves_section(report) + evaluations_section(report) +
          recipes_section(report);
  page += "</main></body></html>\n";
  return page;
}

}  // namespace scion::report

#include "report/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/markup_escape.h"
#include "report/html_text.h"

namespace scion::report {
namespace {

constexpr double kLeft = 52, kRight = 12, kTop = 28, kBottom = 58;

struct Range {
  double low = std::numeric_limits<double>::infinity();
  double high = -std::numeric_limits<double>::infinity();
  void add(double v) {
    low = std::min(low, v);
    high = std::max(high, v);
  }
  bool empty() const { return !(low <= high); }
};

}  // namespace

std::vector<double> nice_ticks(double low, double high, int count) {
  if (!(high > low)) {  // one value: a band around it
    const double pad = low == 0 ? 1 : std::abs(low) * 0.1;
    low -= pad;
    high += pad;
  }
  const double raw = (high - low) / std::max(1, count);
  const double power = std::pow(10, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::floor(low / step) * step; t <= high + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  if (ticks.back() < high) ticks.push_back(ticks.back() + step);
  return ticks;
}

std::string line_chart_svg(const Chart& chart) {
  Range xs, ys;
  for (const ChartSeries& s : chart.series)
    for (const auto& [x, y] : s.points)
      if (std::isfinite(x) && std::isfinite(y)) {
        xs.add(x);
        ys.add(y);
      }
  std::string svg = fmt::format(
      "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" "
      "height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" role=\"img\" aria-label=\"{2}\"><text class=\"chart-title\" "
      "x=\"{3:.0f}\" y=\"18\">{2}</text>",
      chart.width, chart.height, base::markup_escape(chart.title), kLeft);
  if (xs.empty()) {
    svg += fmt::format(
        "<text class=\"chart-empty\" x=\"{:.0f}\" y=\"{:.0f}\">no values recorded</text></svg>",
        kLeft, chart.height / 2);
    return svg;
  }
  if (chart.x_to > chart.x_from) {
    xs.add(chart.x_from);
    xs.add(chart.x_to);
  }
  const std::vector<double> xt = nice_ticks(xs.low, xs.high, 5),
                            yt = nice_ticks(ys.low, ys.high, 4);
  const double x0 = xt.front(), x1 = xt.back(), y0 = yt.front(), y1 = yt.back();
  const double plot_w = chart.width - kLeft - kRight, plot_h = chart.height - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * plot_w; };
  auto py = [&](double y) { return kTop + plot_h - (y - y0) / (y1 - y0) * plot_h; };

  svg += "<g class=\"axes\">";
  for (double t : yt)
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\"/>"
        "<text class=\"tick\" x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>",
        kLeft, kLeft + plot_w, py(t), kLeft - 6, py(t) + 4, short_number(t));
  for (double t : xt)
    svg += fmt::format(
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", px(t),
        kTop + plot_h + 16, short_number(t));
  svg += fmt::format(
      "<rect class=\"frame\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>", kLeft,
      kTop, plot_w, plot_h);
  svg += fmt::format(
      "<text class=\"axis-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
      kLeft + plot_w / 2, kTop + plot_h + 32, base::markup_escape(chart.x_label));
  svg += "</g>";

  double legend_x = kLeft;
  for (const ChartSeries& s : chart.series) {
    std::string path;
    std::string dots;
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", px(x), py(y));
      if (s.markers)
        dots += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"/>", px(x), py(y));
    }
    if (path.empty()) continue;
    svg += fmt::format("<g class=\"series {}\" data-series=\"{}\"><path d=\"{}\"/>{}</g>",
                       base::markup_escape(s.css_class), base::markup_escape(s.name), path, dots);
    const double ly = chart.height - 10;
    svg += fmt::format(
        "<g class=\"legend {}\"><line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text></g>",
        base::markup_escape(s.css_class), legend_x, legend_x + 16, ly - 4, ly - 4, legend_x + 20, ly,
        base::markup_escape(s.name));
    legend_x += 34 + 7.0 * static_cast<double>(s.name.size());
  }
  svg += "</svg>";
  return svg;
}

}  // namespace scion::report

// Line charts as SVG: series of (x, y) points over shared axes with "nice" ticks, for the
// training and validation curves of the report.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace scion::report {

struct ChartSeries {
  std::string name;
  std::string css_class;                          // colour: "s0".."s5" (html_report's stylesheet)
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending; non-finite y skipped
  bool markers = false;                           // a dot at each point (sparse series)
};

struct Chart {
  std::string title;
  std::string x_label;
  std::vector<ChartSeries> series;
  // The x axis covers at least [x_from, x_to] (charts of one run share its step range).
  double x_from = 0, x_to = 0;
  double width = 460, height = 240;
};

// The chart as an <svg class="chart">; a chart without any finite point says so.
std::string line_chart_svg(const Chart& chart);

// About `count` round tick values covering [low, high] (1, 2 or 5 times a power of ten).
std::vector<double> nice_ticks(double low, double high, int count);

}  // namespace scion::report

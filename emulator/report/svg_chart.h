// Small self-contained SVG line charts for the HTML report (no scripts, no external resources): axes with ticks,
// one polyline per series with a circle per data point (class "pt"), an optional horizontal reference line.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace feedrate {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
  std::string color;
};

struct Chart {
  std::string title, x_label, y_label;
  std::vector<ChartSeries> series;
  bool has_reference = false;
  double reference = 0;          // e.g. the AU bar
  std::string reference_label;
  double y_max = 0;  // 0: from the data (e.g. 100 for percentages)
  bool bars = false;  // a bar per point (histograms) instead of lines; x = the bin's left edge
  double bar_width = 1;
};

// The chart as an <svg> element (640 x 320), with a data-points attribute counting its points (each drawn as a
// circle of class "pt", or a rect of class "bar" for bar charts).
std::string RenderSvgChart(const Chart& chart);

// Escapes &, <, >, " for HTML/SVG text.
std::string HtmlEscape(const std::string& s);

}  // namespace feedrate

// Charts as inline SVG for the run report: line charts, stacked areas over steps and stacked bars
// per category, with ticks, labels and a legend, drawn here so the report needs no script and no
// network. Torch-free.
#pragma once

#include <string>
#include <vector>

namespace cvtrain {

struct ChartSeries {
  std::string name;
  std::string colour;     // CSS colour
  std::vector<double> x;  // line charts: one per y; stacked charts: unused (they share the chart's x)
  std::vector<double> y;  // NaN breaks a line
  bool dashed = false;
  bool dots = false;  // a marker on every point, for sparse series (one per epoch)
  bool line = true;   // false: the points alone (a scatter), each with a marker
};

struct ChartFrame {
  std::string id;  // the svg's data-chart attribute
  std::string title;
  std::string x_label, y_label;
  bool percent = false;     // y values are fractions, labelled as %
  bool y_from_zero = true;  // else the axis starts near the smallest value
  bool whole_x = false;     // x counts something whole (epochs, steps): no ticks between integers
};

// Lines of (x, y) points (or scatters: ChartSeries::line); a series with no finite point is left out of the chart and the legend.
std::string line_chart(const ChartFrame& frame, const std::vector<ChartSeries>& series);

// `layers` stacked on each other over the shared `x` (each layer's y has one value per x): the
// top edge is their sum, e.g. a step's phases adding up to its time.
std::string stacked_area_chart(const ChartFrame& frame, const std::vector<double>& x, const std::vector<ChartSeries>& layers);

// One horizontal bar per category, its length the sum of the layers' values for it.
std::string stacked_bar_chart(const ChartFrame& frame, const std::vector<std::string>& categories,
                              const std::vector<ChartSeries>& layers);

// Round axis ticks covering [low, high]: about `count` values of 1, 2 or 5 times a power of ten.
std::vector<double> nice_ticks(double low, double high, int count);

}  // namespace cvtrain

// Inline SVG charts for the run report (see svg_chart.h).
#include "cvtrain/observe/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cvtrain/core/text.h"

namespace cvtrain {

namespace {

constexpr double kWidth = 640;
constexpr double kRight = 624;  // the plot's right edge
constexpr double kTop = 40;     // below the title
constexpr double kPlotHeight = 200;
constexpr double kLegendRow = 18;
constexpr size_t kMaxPoints = 1500;  // more are thinned out: a chart is 560 pixels wide

struct Scale {
  double lo = 0, hi = 1, from = 0, to = 1;
  double operator()(double v) const { return from + (v - lo) / (hi - lo) * (to - from); }
};

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

std::string number_label(double v, bool percent, double step) {
  if (std::fabs(v) < 1e-6 * step) v = 0;  // a tick computed as -1e-17 would read "-0%"
  if (percent) return step < 0.01 ? fmt::format("{:.1f}%", v * 100) : fmt::format("{:.0f}%", v * 100);
  const double a = std::fabs(v);
  if (a >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", std::round(v / step) * step == 0 ? 0.0 : v);
}

// The y scale over `range`, widened to round ticks; the ticks it shows.
Scale y_scale(Range range, bool from_zero, double bottom, std::vector<double>& ticks) {
  if (range.empty()) range = Range{0, 1};
  if (from_zero) range.lo = std::min(range.lo, 0.0);
  if (range.hi - range.lo < 1e-12 * std::max(1.0, std::fabs(range.hi))) range.hi = range.lo + std::max(1.0, std::fabs(range.lo)) * 0.1;
  ticks = nice_ticks(range.lo, range.hi, 5);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : range.hi - range.lo;
  const double lo = std::floor(range.lo / step + 1e-9) * step, hi = std::ceil(range.hi / step - 1e-9) * step;
  ticks = nice_ticks(lo, hi, 5);
  return Scale{lo, hi, bottom, bottom - kPlotHeight};
}

Scale x_scale(Range range, double left) {
  if (range.empty()) range = Range{0, 1};
  if (range.hi == range.lo) range = Range{range.lo - 0.5, range.hi + 0.5};
  return Scale{range.lo, range.hi, left, kRight};
}

std::string header(const ChartFrame& frame, double height) {
  return fmt::format(
      "<svg class=\"chart\" data-chart=\"{}\" viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" aria-label=\"{}\" "
      "font-family=\"system-ui, sans-serif\" font-size=\"12\">\n<text x=\"8\" y=\"22\" font-size=\"15\" font-weight=\"600\" "
      "fill=\"#222\">{}</text>\n",
      xml_escape(frame.id), kWidth, height, xml_escape(frame.title), xml_escape(frame.title));
}

std::string y_axis(const ChartFrame& frame, const Scale& y, const std::vector<double>& ticks, double left) {
  std::string out;
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (const double t : ticks) {
    const double py = y(t);
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e5e5e5\"/>", left, py, kRight, py);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#555\">{}</text>\n", left - 6, py + 4,
                       number_label(t, frame.percent, step));
  }
  if (!frame.y_label.empty())
    out += fmt::format("<text transform=\"translate(14,{:.1f}) rotate(-90)\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n",
                       y.from - kPlotHeight / 2, xml_escape(frame.y_label));
  return out;
}

std::string x_axis(const ChartFrame& frame, const Scale& x, double bottom) {
  std::string out = fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#999\"/>", x.from, bottom, kRight, bottom);
  std::vector<double> ticks = nice_ticks(x.lo, x.hi, 6);
  if (frame.whole_x && ticks.size() > 1 && ticks[1] - ticks[0] < 1) {
    ticks.clear();
    for (double t = std::ceil(x.lo); t <= x.hi; ++t) ticks.push_back(t);
  }
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (const double t : ticks) {
    const double px = x(t);
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#999\"/>", px, bottom, px, bottom + 4);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n", px, bottom + 17,
                       number_label(t, false, step));
  }
  if (!frame.x_label.empty())
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n", (x.from + kRight) / 2,
                       bottom + 33, xml_escape(frame.x_label));
  return out;
}

// Swatches and names in rows under the plot; the height they take.
double legend(const std::vector<const ChartSeries*>& series, double top, std::string& out) {
  double x = 64, y = top;
  for (const ChartSeries* s : series) {
    const double width = 26 + 7.0 * static_cast<double>(s->name.size());
    if (x + width > kRight && x > 64) {
      x = 64;
      y += kLegendRow;
    }
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"14\" height=\"10\" fill=\"{}\"/>", x, y - 9, s->colour);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#333\">{}</text>\n", x + 18, y, xml_escape(s->name));
    x += width + 12;
  }
  return series.empty() ? 0 : y - top + kLegendRow;
}

std::string no_data(double y) {
  return fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#888\">no data in this run</text>\n", (64 + kRight) / 2, y);
}

// The legend's rows for `series`, needed before the svg's height is known.
double legend_height(const std::vector<const ChartSeries*>& series) {
  std::string ignored;
  return legend(series, 0, ignored);
}

// The legend and the svg's end.
std::string legend_after(const std::vector<const ChartSeries*>& series, double top) {
  std::string out;
  legend(series, top, out);
  return out + "</svg>\n";
}

// A stack over one x (a run of a single logging interval) has no area to fill: a column of the
// layers instead, centred on it.
std::string single_column(double center, const Scale& y, const std::vector<std::vector<double>>& tops,
                          const std::vector<ChartSeries>& layers) {
  constexpr double kColumn = 28;
  std::string out;
  for (size_t l = 0; l < layers.size(); ++l) {
    const double top = y(tops[l][0]), base = y(l == 0 ? 0.0 : tops[l - 1][0]);
    if (base - top <= 0) continue;
    out += fmt::format(
        "<rect class=\"series\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\"><title>{}</title></rect>\n",
        center - kColumn / 2, top, kColumn, base - top, layers[l].colour, xml_escape(layers[l].name));
  }
  return out;
}

size_t stride_of(size_t n) { return n > kMaxPoints ? (n + kMaxPoints - 1) / kMaxPoints : 1; }

std::string line_path(const ChartSeries& s, const Scale& x, const Scale& y) {
  std::string d, dots;
  bool pen_down = false;
  const size_t n = std::min(s.x.size(), s.y.size()), stride = stride_of(n);
  // A line of one point draws nothing: that series is its marker, as a scatter's.
  size_t finite = 0;
  for (size_t i = 0; i < n; ++i) finite += std::isfinite(s.x[i]) && std::isfinite(s.y[i]);
  const bool points_only = !s.line || finite == 1;
  for (size_t i = 0; i < n; i += stride) {
    if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
      pen_down = false;
      continue;
    }
    d += fmt::format("{}{:.1f},{:.1f} ", pen_down ? "L" : "M", x(s.x[i]), y(s.y[i]));
    pen_down = true;
    if (s.dots || points_only)
      dots += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"/>", x(s.x[i]), y(s.y[i]), s.line ? 3 : 5, s.colour);
  }
  if (points_only) return fmt::format("<g class=\"series\"><title>{}</title>{}</g>\n", xml_escape(s.name), dots);
  return fmt::format("<path class=\"series\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}><title>{}</title></path>{}\n", d,
                     s.colour, s.dashed ? " stroke-dasharray=\"6 4\"" : "", xml_escape(s.name), dots);
}

bool has_finite(const std::vector<double>& values) {
  return std::any_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
}

double value_or_zero(const std::vector<double>& values, size_t i) {
  return i < values.size() && std::isfinite(values[i]) ? values[i] : 0.0;
}

}  // namespace

std::vector<double> nice_ticks(double low, double high, int count) {
  if (!(high > low) || count < 1) return {low};
  const double raw = (high - low) / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power * 10;
  for (const double m : {1.0, 2.0, 5.0})
    if (raw <= m * power) {
      step = m * power;
      break;
    }
  std::vector<double> ticks;
  // Multiples of the step, not a running sum, so that 10 x 0.2 is 2 and not 1.9999999999999998.
  for (double k = std::ceil(low / step - 1e-9); k * step <= high + step * 1e-9; ++k) ticks.push_back(k * step);
  return ticks;
}

std::string line_chart(const ChartFrame& frame, const std::vector<ChartSeries>& series) {
  std::vector<const ChartSeries*> shown;
  Range xs, ys;
  for (const ChartSeries& s : series) {
    if (!has_finite(s.y)) continue;
    shown.push_back(&s);
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
      if (std::isfinite(s.y[i])) {
        xs.add(s.x[i]);
        ys.add(s.y[i]);
      }
  }
  // A scatter's markers at the ends of the x range would be cut in half by the plot's edges.
  if (!xs.empty() && std::any_of(shown.begin(), shown.end(), [](const ChartSeries* s) { return !s->line; })) {
    const double pad = xs.hi > xs.lo ? 0.05 * (xs.hi - xs.lo) : 0.5;
    xs = Range{xs.lo - pad, xs.hi + pad};
  }
  const double bottom = kTop + kPlotHeight, height = bottom + 44 + legend_height(shown);
  std::vector<double> ticks;
  const Scale y = y_scale(ys, frame.y_from_zero, bottom, ticks), x = x_scale(xs, 64);
  std::string out = header(frame, height) + y_axis(frame, y, ticks, 64) + x_axis(frame, x, bottom);
  if (shown.empty()) out += no_data(bottom - kPlotHeight / 2);
  for (const ChartSeries* s : shown) out += line_path(*s, x, y);
  return out + legend_after(shown, bottom + 56);
}

std::string stacked_area_chart(const ChartFrame& frame, const std::vector<double>& x_values, const std::vector<ChartSeries>& layers) {
  std::vector<const ChartSeries*> shown;
  for (const ChartSeries& l : layers) shown.push_back(&l);
  const size_t n = x_values.size(), stride = stride_of(n);
  std::vector<std::vector<double>> tops(layers.size(), std::vector<double>(n, 0));
  Range xs, ys;
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (size_t l = 0; l < layers.size(); ++l) tops[l][i] = sum += value_or_zero(layers[l].y, i);
    xs.add(x_values[i]);
    ys.add(sum);
  }
  const double bottom = kTop + kPlotHeight, height = bottom + 44 + legend_height(shown);
  std::vector<double> ticks;
  const Scale y = y_scale(ys, true, bottom, ticks), x = x_scale(xs, 64);
  std::string out = header(frame, height) + y_axis(frame, y, ticks, 64) + x_axis(frame, x, bottom);
  if (n == 0) out += no_data(bottom - kPlotHeight / 2);
  if (n == 1) return out + single_column(x(x_values[0]), y, tops, layers) + legend_after(shown, bottom + 56);
  for (size_t l = 0; n > 0 && l < layers.size(); ++l) {
    std::string d;
    for (size_t i = 0; i < n; i += stride) d += fmt::format("{}{:.1f},{:.1f} ", i == 0 ? "M" : "L", x(x_values[i]), y(tops[l][i]));
    for (size_t i = (n - 1) / stride * stride + 1; i-- > 0;)
      if (i % stride == 0) d += fmt::format("L{:.1f},{:.1f} ", x(x_values[i]), y(l == 0 ? 0.0 : tops[l - 1][i]));
    out += fmt::format("<path class=\"series\" d=\"{}Z\" fill=\"{}\" stroke=\"{}\" stroke-width=\"0.5\"><title>{}</title></path>\n", d,
                       layers[l].colour, layers[l].colour, xml_escape(layers[l].name));
  }
  return out + legend_after(shown, bottom + 56);
}

std::string stacked_bar_chart(const ChartFrame& frame, const std::vector<std::string>& categories, const std::vector<ChartSeries>& layers) {
  constexpr double kLeft = 190, kBar = 18, kGap = 8;
  std::vector<const ChartSeries*> shown;
  for (const ChartSeries& l : layers) shown.push_back(&l);
  Range values;
  values.add(0);
  for (size_t c = 0; c < categories.size(); ++c) {
    double sum = 0;
    for (const ChartSeries& l : layers) sum += value_or_zero(l.y, c);
    values.add(sum);
  }
  const double plot_height = std::max(kBar, static_cast<double>(categories.size()) * (kBar + kGap));
  const double bottom = kTop + plot_height, height = bottom + 44 + legend_height(shown);
  std::vector<double> ticks = nice_ticks(0, values.hi > 0 ? values.hi : 1, 5);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  const Scale x{0, std::ceil((values.hi > 0 ? values.hi : 1) / step - 1e-9) * step, kLeft, kRight};
  std::string out = header(frame, height);
  for (const double t : nice_ticks(x.lo, x.hi, 5)) {
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e5e5e5\"/>", x(t), kTop, x(t), bottom);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n", x(t), bottom + 17,
                       number_label(t, frame.percent, step));
  }
  if (!frame.x_label.empty())
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n", (kLeft + kRight) / 2,
                       bottom + 33, xml_escape(frame.x_label));
  for (size_t c = 0; c < categories.size(); ++c) {
    const double top = kTop + static_cast<double>(c) * (kBar + kGap) + kGap / 2;
    const std::string label = categories[c].size() > 30 ? categories[c].substr(0, 29) + "…" : categories[c];
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#333\">{}</text>", kLeft - 6, top + 13, xml_escape(label));
    double start = 0;
    for (const ChartSeries& l : layers) {
      const double v = value_or_zero(l.y, c);
      if (v <= 0) continue;
      out += fmt::format("<rect class=\"series\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {} {:.4g}</title></rect>",
                         x(start), top, x(start + v) - x(start), kBar, l.colour, xml_escape(categories[c]), xml_escape(l.name), v);
      start += v;
    }
    out += "\n";
  }
  if (categories.empty()) out += no_data(kTop + plot_height / 2 + 4);
  return out + legend_after(shown, bottom + 56);
}

}  // namespace cvtrain

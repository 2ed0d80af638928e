// Segmentation's figures on the run report (see segmentation_report.h).
#include "cvtrain/observe/segmentation_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cvtrain/core/text.h"
#include "cvtrain/observe/report_html.h"
#include "cvtrain/observe/svg_chart.h"

namespace cvtrain {
namespace {

std::vector<double> finite_of(const std::vector<double>& values) {
  std::vector<double> kept;
  for (double v : values)
    if (std::isfinite(v)) kept.push_back(v);
  return kept;
}

ChartSeries epoch_series(const RunHistory& run, const std::string& name, const char* key, const char* colour) {
  ChartSeries s;
  s.name = name;
  s.colour = colour;
  s.x = column(run.epochs, "epoch");
  s.y = column(run.epochs, key);
  s.dots = true;
  return s;
}

}  // namespace

bool scored_by_miou(const RunHistory& run) { return !finite_of(column(run.epochs, "miou")).empty(); }

std::string miou_tile(const RunHistory& run) {
  const std::vector<double> miou = finite_of(column(run.epochs, "miou"));
  if (miou.empty()) return html_tile("mIoU", "—", "no evaluated epoch (yet, or no data.val)");
  const double best = *std::max_element(miou.begin(), miou.end());
  const std::optional<double> kept = run.best.number("miou"), epoch = run.best.number("epoch");
  const std::string note = kept && epoch && run.best.text("metric") == "miou"
                               ? fmt::format("best {:.2f}% at epoch {:.0f}, its checkpoint in best/", 100 * *kept, *epoch)
                               : fmt::format("best {:.2f}%", 100 * best);
  return html_tile("mIoU", fmt::format("{:.2f}%", 100 * miou.back()), note);
}

std::string miou_chart(const RunHistory& run) {
  const std::vector<ChartSeries> s{epoch_series(run, "mIoU", "miou", "#4c78a8"),
                                   epoch_series(run, "pixel accuracy", "pixel_acc", "#54a24b"),
                                   epoch_series(run, "mean class accuracy", "macc", "#f58518")};
  return html_card(line_chart(ChartFrame{"miou", "Validation mIoU", "epoch", "score", true, false, true}, s),
                   "every labelled pixel of data.val at its own resolution, each image once across ranks");
}

std::string class_iou_section(const JsonValue& eval) {
  if (eval.text("task") != "segmentation") return "";
  std::vector<std::pair<std::string, double>> classes;
  for (const auto& [name, value] : eval["class_iou"].object()) classes.emplace_back(name, value.number().value_or(std::nan("")));
  if (classes.empty()) return "";
  std::stable_sort(classes.begin(), classes.end(), [](const auto& a, const auto& b) {
    return (std::isnan(a.second) ? 2.0 : a.second) < (std::isnan(b.second) ? 2.0 : b.second);
  });
  std::string rows;
  for (const auto& [name, iou] : classes)
    rows += std::isnan(iou) ? fmt::format("<tr><td>{}</td><td>— (neither present nor predicted)</td></tr>\n", xml_escape(name))
                            : fmt::format(
                                  "<tr><td>{}</td><td><span class=\"track\"><span class=\"bar\" style=\"width:{:.1f}%\"></span></span> "
                                  "{:.2f}%</td></tr>\n",
                                  xml_escape(name), 100 * iou, 100 * iou);
  const std::string by = eval.text("by") == "training" ? "the last evaluation of training" : "cvtrain eval";
  const std::string figures =
      fmt::format("mIoU {:.2f}%, pixel accuracy {:.2f}% on {:.0f} images of {}, weights {}", 100 * eval.number("miou").value_or(0),
                  100 * eval.number("pixel_acc").value_or(0), eval.number("samples").value_or(0), eval.text("data"), eval.text("weights"));
  return "<h2>IoU by class (" + by + ")</h2>\n<p class=\"sub\">" + xml_escape(figures) +
         "</p>\n<table>\n<tr><th>class</th><th>IoU</th></tr>\n" + rows + "</table>\n";
}

}  // namespace cvtrain

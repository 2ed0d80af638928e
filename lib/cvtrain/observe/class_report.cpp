// Per-class report section (see class_report.h).
#include "cvtrain/observe/class_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cvtrain/core/text.h"

namespace cvtrain {
namespace {

constexpr size_t kRows = 12;

// The lowest classes by top-1, each with a bar as long as its top-1.
std::string lowest_table(const JsonValue::Array& classes) {
  std::vector<const JsonValue*> order;
  for (const JsonValue& c : classes)
    if (c.number("samples").value_or(0) > 0) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(),
                   [](const JsonValue* a, const JsonValue* b) { return a->number("top1") < b->number("top1"); });
  std::string rows;
  for (size_t i = 0; i < std::min(kRows, order.size()); ++i) {
    const double top1 = order[i]->number("top1").value_or(0);
    rows += fmt::format(
        "<tr><td>{}</td><td>{:.0f}</td><td><span class=\"track\"><span class=\"bar\" style=\"width:{:.1f}%\"></span></span> "
        "{:.2f}%</td></tr>\n",
        xml_escape(order[i]->text("class")), order[i]->number("samples").value_or(0), 100 * top1, 100 * top1);
  }
  return fmt::format(
      "<div><h3>Lowest top-1 ({} of {} classes)</h3>\n<table>\n<tr><th>class</th><th>samples</th>"
      "<th>top-1</th></tr>\n{}</table>\n</div>\n",
      std::min(kRows, order.size()), order.size(), rows);
}

std::string confusion_table(const JsonValue::Array& confusions, const JsonValue::Array& classes) {
  std::map<std::string, double> samples;
  for (const JsonValue& c : classes) samples[c.text("class")] = c.number("samples").value_or(0);
  std::string rows;
  for (size_t i = 0; i < std::min(kRows, confusions.size()); ++i) {
    const JsonValue& x = confusions[i];
    const double count = x.number("count").value_or(0), of = samples[x.text("true")];
    rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.0f}</td><td>{}</td></tr>\n", xml_escape(x.text("true")),
                        xml_escape(x.text("predicted")), count, of > 0 ? fmt::format("{:.0f}%", 100 * count / of) : "—");
  }
  if (rows.empty())
    return "<div><h3>Most frequent confusions</h3>\n<p class=\"sub\">None kept (no misses, or too many classes for the "
           "matrix).</p>\n</div>\n";
  return "<div><h3>Most frequent confusions</h3>\n<table>\n<tr><th>true class</th><th>taken for</th><th>times</th>"
         "<th>of the true class</th></tr>\n" +
         rows + "</table>\n</div>\n";
}

}  // namespace

std::string class_accuracy_section(const JsonValue& eval) {
  const JsonValue::Array& classes = eval["per_class"].array();
  if (classes.empty()) return "";
  const std::string figures = fmt::format("top-1 {:.2f}% on {:.0f} samples of {}, weights {}", 100 * eval.number("top1").value_or(0),
                                          eval.number("samples").value_or(0), eval.text("data"), eval.text("weights"));
  // Files of earlier versions say nothing of who wrote them: cvtrain eval alone did.
  const std::string by = eval.text("by") == "training" ? "the last evaluation of training" : "cvtrain eval";
  return "<h2>Per class (" + by + ")</h2>\n<p class=\"sub\">" + xml_escape(figures) + "</p>\n<div class=\"pair\">\n" +
         lowest_table(classes) + confusion_table(eval["confusions"].array(), classes) + "</div>\n";
}

}  // namespace cvtrain

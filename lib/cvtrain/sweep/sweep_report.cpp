// The sweep report's page (see sweep_report.h): what was searched, which trial won and by how much,
// how the trials learned, and what each searched key did to the metric.
#include "cvtrain/sweep/sweep_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/text_file.h"
#include "cvtrain/observe/report_html.h"
#include "cvtrain/observe/run_history.h"
#include "cvtrain/observe/svg_chart.h"
#include "cvtrain/recipe/recipe_schema.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBest = "#e45756";
constexpr const char* kStoppedEarly = "#9d9d9d";
constexpr std::array<const char*, 8> kPalette{"#4c78a8", "#f58518", "#54a24b", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d", "#ff9da6"};

bool percent_metric(const SweepSpace& space) { return space.metric.rfind("top", 0) == 0; }

std::string metric_text(const SweepSpace& space, std::optional<double> v) {
  if (!v) return "—";
  return percent_metric(space) ? fmt::format("{:.2f}%", 100 * *v) : fmt::format("{:.4g}", *v);
}

int64_t epochs_trained(const SweepHistory& sweep, const Trial& t) {
  const auto it = sweep.epochs.find(t.index);
  if (it == sweep.epochs.end()) return 0;
  double last = 0;
  for (const JsonValue& e : it->second) last = std::max(last, e.number("epoch").value_or(0));
  return static_cast<int64_t>(last);
}

const Trial* best_trial(const SweepHistory& sweep) {
  for (const Trial* t : best_first(sweep.trials, sweep.space.maximize))
    if (t->status == TrialStatus::kDone && t->metric) return t;
  return nullptr;
}

std::string key_figures(const SweepHistory& sweep) {
  int64_t started = 0, done = 0, failed = 0, stopped_early = 0, epochs = 0, longest = 0;
  double seconds = 0;
  for (const Trial& t : sweep.trials) {
    started += t.logged_start;
    done += t.status == TrialStatus::kDone;
    failed += t.status == TrialStatus::kFailed;
    stopped_early += t.status == TrialStatus::kStoppedEarly;
    const int64_t trained = epochs_trained(sweep, t);
    epochs += trained;
    longest = std::max(longest, trained);
    seconds += t.seconds;
  }
  const Trial* best = best_trial(sweep);
  std::string out = "<div class=\"tiles\">\n";
  out += html_tile("trials", fmt::format("{}", started), fmt::format("{} done, {} failed, {} stopped early", done, failed, stopped_early));
  out += html_tile("best " + sweep.space.metric, best ? metric_text(sweep.space, best->metric) : "—",
                   best ? trial_name(best->index) + ": " + join(overrides_of(best->values), " ") : "no trial finished yet");
  const int64_t full = started * longest;
  out += html_tile("epochs trained", fmt::format("{}", epochs),
                   full > 0 && stopped_early > 0 ? fmt::format("{:.0f}% fewer than {} trials × {} epochs", 100.0 * (1 - double(epochs) / double(full)),
                                                               started, longest)
                                                 : "every trial to its end");
  out += html_tile("trial time", fmt::format("{:.0f} s", seconds), "summed over trials (they run side by side)");
  return out + "</div>\n";
}

ChartSeries curve_of(const SweepHistory& sweep, const Trial& t, const Trial* best, size_t& colour) {
  ChartSeries s;
  const auto it = sweep.epochs.find(t.index);
  if (it != sweep.epochs.end()) {
    s.x = column(it->second, "epoch");
    s.y = column(it->second, sweep.space.metric);
  }
  s.dots = true;
  s.name = trial_name(t.index);
  if (&t == best) {
    s.colour = kBest;
    s.name += " (best)";
  } else if (t.status == TrialStatus::kStoppedEarly) {
    s.colour = kStoppedEarly;
    s.dashed = true;
    s.name += " (stopped early)";
  } else {
    s.colour = kPalette[colour++ % kPalette.size()];
    if (t.status != TrialStatus::kDone) s.name += fmt::format(" ({})", status_name(t.status));
  }
  return s;
}

std::string curves_chart(const SweepHistory& sweep) {
  const Trial* best = best_trial(sweep);
  std::vector<ChartSeries> series;
  size_t colour = 0;
  for (const Trial& t : sweep.trials) series.push_back(curve_of(sweep, t, best, colour));
  ChartFrame frame{"curves", "Learning curves of every trial", "epoch", sweep.space.metric, percent_metric(sweep.space), false, true};
  return html_card(line_chart(frame, series), "each trial's " + sweep.space.metric + " after each epoch; dashed grey: stopped early by ASHA");
}

// A searched key's values as x positions: the numbers (log10 for loguniform), else the choice's index.
struct Axis {
  std::string label, caption;
  std::vector<double> x;  // per trial
};

Axis axis_of(const SweepHistory& sweep, const SearchDimension& d) {
  Axis axis{d.key, "", {}};
  std::vector<std::string> values;
  for (const Trial& t : sweep.trials) {
    std::string v;
    for (const auto& [key, value] : t.values)
      if (key == d.key) v = value;
    values.push_back(v);
  }
  bool numeric = true;
  std::vector<double> numbers;
  for (const std::string& v : values) {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0') numeric = false;
    numbers.push_back(v.empty() ? std::nan("") : x);
  }
  if (numeric) {
    if (d.kind == SearchDimension::Kind::kLogUniform) {
      for (double& x : numbers) x = std::log10(x);
      axis.label = "log10(" + d.key + ")";
    }
    axis.x = numbers;
    return axis;
  }
  std::vector<std::string> categories = d.choices;
  for (const std::string& v : values) {
    if (v.empty()) {
      axis.x.push_back(std::nan(""));
      continue;
    }
    auto it = std::find(categories.begin(), categories.end(), v);
    if (it == categories.end()) it = categories.insert(categories.end(), v);
    axis.x.push_back(static_cast<double>(it - categories.begin()));
  }
  std::vector<std::string> legend;
  for (size_t i = 0; i < categories.size(); ++i) legend.push_back(fmt::format("{} = {}", i, categories[i]));
  axis.caption = join(legend, ", ");
  return axis;
}

std::string chart_id(const std::string& key) {
  std::string id = "key_";
  for (const char c : key) id += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
  return id;
}

std::string key_charts(const SweepHistory& sweep) {
  const Trial* best = best_trial(sweep);
  std::string out;
  for (const SearchDimension& d : sweep.space.dimensions) {
    const Axis axis = axis_of(sweep, d);
    ChartSeries finished, early, winner;
    finished.name = "finished";
    finished.colour = kPalette[0];
    early.name = "stopped early (metric at its last rung)";
    early.colour = kStoppedEarly;
    winner.name = "best";
    winner.colour = kBest;
    for (ChartSeries* s : {&finished, &early, &winner}) s->line = false;
    for (size_t i = 0; i < sweep.trials.size(); ++i) {
      const Trial& t = sweep.trials[i];
      if (!t.metric) continue;
      ChartSeries& s = &t == best ? winner : t.status == TrialStatus::kStoppedEarly ? early : finished;
      s.x.push_back(axis.x[i]);
      s.y.push_back(*t.metric);
    }
    ChartFrame frame{chart_id(d.key), sweep.space.metric + " against " + d.key, axis.label, sweep.space.metric,
                     percent_metric(sweep.space), false, !axis.caption.empty()};
    out += html_card(line_chart(frame, {finished, early, winner}), axis.caption);
  }
  return out;
}

std::string trials_table(const SweepHistory& sweep) {
  std::vector<std::string> header{"", "trial", "status", sweep.space.metric};
  for (const SearchDimension& d : sweep.space.dimensions) header.push_back(d.key);
  for (const char* h : {"epochs", "seconds", "launcher", "note"}) header.push_back(h);
  std::vector<std::vector<std::string>> rows;
  int rank = 0;
  for (const Trial* t : best_first(sweep.trials, sweep.space.maximize)) {
    std::vector<std::string> row{t->metric ? std::to_string(++rank) : "", trial_name(t->index), status_name(t->status),
                                 metric_text(sweep.space, t->metric)};
    for (const SearchDimension& d : sweep.space.dimensions) {
      std::string value = "—";
      for (const auto& [key, v] : t->values)
        if (key == d.key) value = v;
      row.push_back(value);
    }
    row.push_back(std::to_string(epochs_trained(sweep, *t)));
    row.push_back(fmt::format("{:.0f}", t->seconds));
    row.push_back(t->launcher.empty() ? "local" : t->launcher);
    row.push_back(t->message);
    rows.push_back(row);
  }
  return "<h2>Trials, best first</h2>\n" + html_table(header, rows);
}

std::string best_recipe_section(const SweepHistory& sweep) {
  if (sweep.best_trial.empty()) return "<h2>Best trial</h2>\n<p class=\"sub\">No trial has finished yet.</p>\n";
  const std::string best_recipe = (fs::path(sweep.folder) / "best_recipe.yaml").string();
  return fmt::format("<h2>Best trial: {}</h2>\n<p class=\"sub\">Its resolved recipe, ready to train from: <code>cvtrain --recipe {}</code> "
                     "(it trains into {}/best; add <code>output=DIR</code> for another folder). <code>cvtrain report {}</code> shows the "
                     "trial's own step time.</p>\n<pre>{}</pre>\n",
                     xml_escape(sweep.best_trial), xml_escape(best_recipe), xml_escape(sweep.folder),
                     xml_escape((fs::path(sweep.folder) / sweep.best_trial).string()),
                     xml_escape(sweep.best_recipe_yaml.empty() ? "(recipe.yaml is not in the trial's folder)" : sweep.best_recipe_yaml));
}

}  // namespace

bool is_sweep_folder(const std::string& folder) { return fs::exists(fs::path(folder) / "sweep.jsonl"); }

SweepHistory read_sweep_history(const std::string& folder) {
  const fs::path root(folder);
  if (!fs::exists(root / "sweep.jsonl")) throw Error(fmt::format("{}: not a sweep folder (no sweep.jsonl)", folder));
  if (!fs::exists(root / "space.yaml")) throw Error(fmt::format("{}: the sweep's space.yaml is missing", folder));
  SweepHistory sweep;
  sweep.folder = folder;
  sweep.space = load_sweep_space((root / "space.yaml").string(), recipe_keys());
  for (auto& [index, trial] : SweepLog((root / "sweep.jsonl").string()).read()) sweep.trials.push_back(std::move(trial));
  for (const Trial& t : sweep.trials) {
    const fs::path trial_folder = root / trial_name(t.index);
    try {
      sweep.epochs[t.index] = epochs_of_every_start(trial_folder.string());
    } catch (const Error& e) {
      sweep.notes.push_back(e.what());
    }
  }
  if (const Trial* best = best_trial(sweep)) {
    sweep.best_trial = trial_name(best->index);
    sweep.best_recipe_yaml = read_text_file((root / sweep.best_trial / "recipe.yaml").string()).value_or("");
  }
  return sweep;
}

std::string sweep_report_html(const SweepHistory& sweep, const std::string& generated_at) {
  const std::string name = fs::path(sweep.folder).lexically_normal().filename().string();
  return html_page(HtmlPage{"cvtrain sweep: " + name, "Sweep " + name, describe_space(sweep.space),
                            key_figures(sweep) + "<h2>How the trials learned</h2>\n<div class=\"grid\">\n" + curves_chart(sweep) +
                                key_charts(sweep) + "</div>\n" + trials_table(sweep) + best_recipe_section(sweep),
                            "the sweep folder's sweep.jsonl, space.yaml and each trial's metrics", generated_at, sweep.notes});
}

}  // namespace cvtrain

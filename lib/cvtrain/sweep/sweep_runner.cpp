// The sweep's loop: plan (or read back) each trial's values, check every candidate recipe, then
// keep `parallel` trials running, recording each end in sweep.jsonl as it comes.
#include "cvtrain/sweep/sweep_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cvtrain/core/error.h"
#include "cvtrain/core/failure_log.h"
#include "cvtrain/core/folder_lock.h"
#include "cvtrain/core/log.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/text_file.h"
#include "cvtrain/core/timer.h"
#include "cvtrain/launch/process_pool.h"
#include "cvtrain/launch/rank_environment.h"
#include "cvtrain/launch/slurm_steps.h"
#include "cvtrain/launch/stop_request.h"
#include "cvtrain/models/arch_traits.h"
#include "cvtrain/observe/run_history.h"
#include "cvtrain/recipe/recipe_loader.h"
#include "cvtrain/recipe/recipe_schema.h"
#include "cvtrain/sweep/successive_halving.h"
#include "cvtrain/sweep/sweep_log.h"
#include "cvtrain/sweep/sweep_tracking.h"
#include "cvtrain/sweep/trial_sampler.h"
#include "cvtrain/track/tracking_settings.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

// The trial's metric: its last epoch's value of `metric`; nullopt when none reported it.
std::optional<double> final_metric(const std::string& folder, const std::string& metric) {
  try {
    const RunHistory history = read_run_history(folder);
    for (auto it = history.epochs.rbegin(); it != history.epochs.rend(); ++it)
      if (auto value = it->number(metric)) return value;
  } catch (const Error&) {
  }
  return std::nullopt;
}

// What went wrong, on one line: the first failure the trial's ranks (or launcher) recorded in its
// folder since `recorded_before` lines (the cause; other ranks' lost connections come after it),
// else the last line of its output that says so (a failure in its set-up, which records nothing).
std::string failure_message(const std::string& trial_folder, size_t recorded_before, const std::string& log_file, int exit_code) {
  const std::vector<FailureRecord> recorded = read_failures(trial_folder);
  if (recorded.size() > recorded_before) {
    std::string message = recorded[recorded_before].message;
    std::replace(message.begin(), message.end(), '\n', ' ');
    return fmt::format("exit code {}: {}: {}", exit_code, recorded[recorded_before].who, message);
  }
  std::ifstream in(log_file);
  std::string line, last_error, last;
  bool continues = false;  // "error: 1 recipe error:" names the problem on the next line
  while (std::getline(in, line)) {
    if (continues && !line.empty()) last_error += " " + line.substr(line.find_first_not_of(' '));
    continues = false;
    if (line.find("error:") != std::string::npos) {
      last_error = line;
      continues = line.back() == ':';
    }
    if (!line.empty()) last = line;
  }
  const std::string what = !last_error.empty() ? last_error : last;
  return fmt::format("exit code {}{}", exit_code, what.empty() ? "" : ": " + what);
}

std::vector<std::string> trial_overrides(const SweepOptions& o, const Trial& t, const std::string& folder) {
  std::vector<std::string> overrides = o.overrides;
  for (const std::string& v : overrides_of(t.values)) overrides.push_back(v);
  overrides.push_back("output=" + (fs::path(folder) / trial_name(t.index)).string());
  return overrides;
}

// Loads a trial's recipe as `cvtrain check` does; its problems prefixed with the trial's values.
void check_trial(const SweepOptions& o, const SweepSpace& space, const Trial& t, const std::string& folder,
                 std::vector<std::string>& problems) {
  LoadOptions load;
  load.overrides = trial_overrides(o, t, folder);
  load.check_model = recipe_model_problems;
  const bool on_gpus = o.slurm ? o.slurm->gpus_per_node > 0 : o.visible_gpus > 0;
  load.visible_gpus = on_gpus ? static_cast<int>(space.gpus_per_trial) : 0;  // what each trial sees
  try {
    const Recipe recipe = load_recipe(o.recipe, load);
    const auto starts = [&](const char* prefix) { return space.metric.rfind(prefix, 0) == 0; };
    const bool classification_score = starts("top"), segmentation_score = starts("miou") || starts("pixel_acc") || starts("macc");
    const bool segmentation = recipe.task == TaskKind::kSegmentation;
    if ((classification_score && segmentation) || (segmentation_score && !segmentation))
      problems.push_back(fmt::format("{}: metric: '{}' is not measured with task: {}, which reports {}", space.file, space.metric,
                                     name_of(recipe.task), segmentation ? "miou, pixel_acc and macc" : "top1 and top5"));
    else if ((classification_score || segmentation_score || starts("val_")) && recipe.data.val.empty())
      problems.push_back(fmt::format("{}: metric: '{}' is measured on data.val, which the recipe does not have", space.file, space.metric));
  } catch (const RecipeError& e) {
    for (const std::string& p : e.problems())
      problems.push_back(fmt::format("{} ({}): {}", trial_name(t.index), join(overrides_of(t.values), " "), p));
  }
}

// Text for one cell of a Markdown table: a '|' would end the cell, a line break the row.
std::string table_cell(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// results.md: the trials by their metric, best first; failed and unfinished ones after.
std::string results_table(const SweepSpace& space, const std::vector<Trial>& trials) {
  const std::vector<const Trial*> order = best_first(trials, space.maximize);
  std::string header = "| | trial | status | " + space.metric + " |";
  std::string rule = "|---:|---|---|---:|";
  for (const SearchDimension& d : space.dimensions) {
    header += " `" + d.key + "` |";
    rule += "---|";
  }
  header += " seconds | note |\n";
  rule += "---:|---|\n";
  std::string rows;
  int rank = 0;
  for (const Trial* t : order) {
    rows += fmt::format("| {} | {} | {} | {} |", t->metric ? std::to_string(++rank) : "", trial_name(t->index), status_name(t->status),
                        t->metric ? fmt::format("{:.4f}", *t->metric) : "—");
    for (const auto& [key, value] : t->values) rows += " " + table_cell(value) + " |";
    rows += fmt::format(" {:.0f} | {} |\n", t->seconds, t->status == TrialStatus::kFailed ? table_cell(t->message) : "");
  }
  return header + rule + rows;
}

Trial planned(int64_t index, Assignment values) {
  Trial t;
  t.index = index;
  t.values = std::move(values);
  return t;
}

// Which trials the sweep has: as planned by the sampler, the logged ones as they were logged.
std::vector<Trial> plan_trials(const SweepSpace& space, const std::map<int64_t, Trial>& logged) {
  std::vector<Trial> trials;
  if (space.sampler == SweepSampler::kGrid) {
    const std::vector<Assignment> grid = grid_assignments(space);
    const size_t count = space.trials > 0 ? std::min<size_t>(static_cast<size_t>(space.trials), grid.size()) : grid.size();
    for (size_t i = 0; i < count; ++i) trials.push_back(planned(static_cast<int64_t>(i), grid[i]));
  } else {
    // Only different values: a cvtrain trial with another's values would repeat it bit for bit.
    const std::vector<Assignment> drawn =
        space.sampler == SweepSampler::kRandom ? random_assignments(space, space.trials) : std::vector<Assignment>{};
    const int64_t count = space.sampler == SweepSampler::kRandom
                              ? static_cast<int64_t>(drawn.size())
                              : std::min<int64_t>(space.trials, static_cast<int64_t>(distinct_assignments(space).value_or(space.trials)));
    if (count < space.trials)
      log::info(
          "the space holds only {} different assignment(s): {} trial(s), not {} (one with another's values would repeat it bit for bit)",
          count, count, space.trials);
    for (int64_t i = 0; i < count; ++i) trials.push_back(planned(i, drawn.empty() ? Assignment{} : drawn[static_cast<size_t>(i)]));
  }
  for (Trial& t : trials) {
    const auto it = logged.find(t.index);
    if (it == logged.end()) continue;
    const Trial& before = it->second;
    if (space.sampler != SweepSampler::kTpe && before.logged_start && before.values != t.values)
      throw Error(fmt::format("{} of this sweep ran with {}, but the space now gives {}; start the changed sweep in another folder (--out)",
                              trial_name(t.index), join(overrides_of(before.values), " "), join(overrides_of(t.values), " ")));
    t = before;
  }
  return trials;
}

// What TPE learns from: finished trials, failed ones (no score), and those early stopping holds at
// a rung (paused, or stopped early), scored by their last rung's metric and ranked by how far they got.
std::vector<ScoredTrial> scored(const SweepSpace& space, const std::vector<Trial>& trials) {
  std::vector<ScoredTrial> out;
  for (const Trial& t : trials) {
    const bool learned_from = t.status == TrialStatus::kDone || t.status == TrialStatus::kFailed || t.status == TrialStatus::kPaused ||
                              t.status == TrialStatus::kStoppedEarly;
    if (!learned_from) continue;
    const bool usable = t.metric && std::isfinite(*t.metric);
    out.push_back(ScoredTrial{t.values, usable ? std::optional<double>(space.maximize ? *t.metric : -*t.metric) : std::nullopt,
                              static_cast<int64_t>(t.rungs.size())});
  }
  return out;
}

// How a trial starts: the command before cvtrain's own (srun under Slurm), the environment on top
// of the sweep's, and a few words for the log.
struct TrialLaunch {
  std::vector<std::string> prefix;
  std::vector<std::pair<std::string, std::string>> env;
  std::string description;
};

// Where trial slot `slot` runs: a job step of the Slurm allocation, or its GPUs or its share of the
// cores on this machine.
TrialLaunch placement(const SweepOptions& o, const SweepSpace& space, const std::optional<StepPlan>& steps, int64_t slot,
                      int64_t parallel, const std::string& name) {
  if (steps)
    return {srun_arguments(steps->shape, name), {{"OMP_NUM_THREADS", std::to_string(steps->shape.cpus_per_task)}}, describe_step(steps->shape)};
  const int64_t cores_per_trial = std::max<int64_t>(1, static_cast<int64_t>(o.cores) / parallel);
  if (o.visible_gpus > 0) {
    std::vector<std::string> visible;
    if (const char* set = std::getenv("CUDA_VISIBLE_DEVICES")) {
      std::stringstream list(set);
      for (std::string id; std::getline(list, id, ',');) visible.push_back(id);
    }
    std::vector<std::string> mine;
    for (int64_t g = 0; g < space.gpus_per_trial; ++g) {
      const auto index = static_cast<size_t>(slot * space.gpus_per_trial + g);
      mine.push_back(index < visible.size() ? visible[index] : std::to_string(index));
    }
    return {{},
            {{"CUDA_VISIBLE_DEVICES", join(mine, ",")}, {kJobCoresVariable, std::to_string(cores_per_trial)}},
            "local, GPU " + join(mine, ",")};
  }
  return {{},
          {{"OMP_NUM_THREADS", std::to_string(cores_per_trial)}, {kJobCoresVariable, std::to_string(cores_per_trial)}},
          fmt::format("local, {} thread(s)", cores_per_trial)};
}

// One sweep's run: which trial goes next (a promotion at the highest rung first, as ASHA, else a
// new trial), how each trial's exit is recorded, and the summary.
class SweepRun {
 public:
  SweepRun(const SweepOptions& o, const SweepSpace& space, std::string folder, std::vector<Trial> trials, std::vector<int64_t> rungs,
           int64_t parallel, std::optional<StepPlan> steps)
      : o_(o), space_(space), folder_(std::move(folder)), log_((fs::path(folder_) / "sweep.jsonl").string()), trials_(std::move(trials)),
        rungs_(std::move(rungs)), parallel_(parallel), steps_(std::move(steps)) {
    for (int64_t s = parallel_ - 1; s >= 0; --s) free_slots_.push_back(s);
  }

  void run() {
    install_stop_handlers();
    for (;;) {
      while (!free_slots_.empty() && !stop_requested() && start_next()) {
      }
      if (pool_.running() == 0) break;
      on_exit(pool_.wait_any());
    }
    if (stop_requested()) return;
    for (Trial& t : trials_)  // nothing left that could promote them: final
      if (t.status == TrialStatus::kPaused) {
        t.status = TrialStatus::kStoppedEarly;
        t.message = fmt::format("stopped early after epoch {}", rungs_[t.rungs.size() - 1]);
        log_.ended(t);
      }
  }

  // The sweep's MLflow run, which the trials' runs are children of and which hears of each trial's
  // metric (nothing when tracking is off).
  void track_in(SweepTracking& tracking) {
    tracking_ = &tracking;
    parent_run_ = tracking.parent_run_id();
  }

  SweepSummary summary() const {
    SweepSummary summary;
    summary.folder = folder_;
    for (const Trial& t : trials_) {
      summary.done += t.status == TrialStatus::kDone;
      summary.failed += t.status == TrialStatus::kFailed;
      summary.stopped_early += t.status == TrialStatus::kStoppedEarly;
      summary.stopped += t.status == TrialStatus::kStopped || t.status == TrialStatus::kPending || t.status == TrialStatus::kPaused;
      summary.started += t.logged_start;
      summary.epochs_trained += t.rungs.empty() ? 0 : rungs_[t.rungs.size() - 1];
      const bool whole = t.status == TrialStatus::kDone;
      if (whole && t.metric && (!summary.best_metric || (space_.maximize ? *t.metric > *summary.best_metric : *t.metric < *summary.best_metric))) {
        summary.best_metric = t.metric;
        summary.best_trial = (fs::path(folder_) / trial_name(t.index)).string();
      }
    }
    summary.epochs_without_stopping = summary.started * rungs_.back();
    summary.table = results_table(space_, trials_);
    return summary;
  }

 private:
  // The trial to run next and the rung it runs to; false when there is none for now.
  bool start_next() {
    if (Trial* t = promotion()) return start(*t), true;
    for (Trial& t : trials_) {
      // A trial stopped during this run was stopped on purpose (a signal): it continues on the next start.
      if (t.status != TrialStatus::kPending && !(t.status == TrialStatus::kStopped && !stopped_here_.count(t.index))) continue;
      if (t.values.empty() && !draw(t)) return true;  // TPE's draw failed its check: recorded, look again
      start(t);
      return true;
    }
    return false;
  }

  // ASHA: a paused trial among the best 1/reduction of those that reached its rung, highest rung first.
  Trial* promotion() {
    for (size_t k = rungs_.size() - 1; k-- > 0;) {
      std::vector<double> results;
      for (const Trial& t : trials_)
        if (t.rungs.size() > k) results.push_back(t.rungs[k]);
      for (Trial& t : trials_)
        if (t.status == TrialStatus::kPaused && t.rungs.size() == k + 1 && promotable(results, t.rungs[k], space_.reduction, space_.maximize))
          return &t;
    }
    return nullptr;
  }

  // TPE: drawn now, from what has finished, and checked as the others were before the start.
  bool draw(Trial& t) {
    std::vector<Assignment> taken;
    for (const Trial& other : trials_)
      if (!other.values.empty()) taken.push_back(other.values);
    std::vector<std::string> problems;
    if (const auto values = untaken_tpe_assignment(space_, t.index, scored(space_, trials_), taken)) {
      t.values = *values;
      check_trial(o_, space_, t, folder_, problems);
    } else {
      problems.push_back("the space holds no assignment that another trial has not had");
    }
    if (problems.empty()) return true;
    t.status = TrialStatus::kFailed;
    t.message = problems.front();
    log_.started(t);
    log_.ended(t);
    return false;
  }

  void start(Trial& t) {
    const int64_t slot = free_slots_.back();
    free_slots_.pop_back();
    const int64_t rung_epoch = rungs_[t.rungs.size()];
    TrialLaunch launch = placement(o_, space_, steps_, slot, parallel_, trial_name(t.index));
    if (!parent_run_.empty()) launch.env.emplace_back(kParentRunVariable, parent_run_);  // the trial's MLflow run is its child
    std::vector<std::string> argv = launch.prefix;
    for (const std::string& word : {o_.executable, std::string("--recipe"), o_.recipe}) argv.push_back(word);
    for (const std::string& v : trial_overrides(o_, t, folder_)) argv.push_back(v);
    argv.push_back(fmt::format("distributed.master_port={}", 29700 + 13 * slot));
    argv.push_back(fmt::format("train.stop_at_epoch={}", rung_epoch < rungs_.back() ? rung_epoch : 0));
    failures_before_[t.index] = read_failures(trial_folder(t)).size();  // an earlier rung's or start's are not this one's
    const int pid = pool_.start(ChildSpec{argv, launch.env, log_file(t)});
    t.launcher = launch.description;
    if (!t.logged_start) log_.started(t);
    t.logged_start = true;
    t.status = TrialStatus::kRunning;
    running_[pid] = {&t, slot};
    clocks_[pid] = Stopwatch();
    log::info("{} {}: {}{} [{}]", trial_name(t.index), t.rungs.empty() ? "started" : "promoted", join(overrides_of(t.values), " "),
              rungs_.size() > 1 ? fmt::format(" (to epoch {})", rung_epoch) : "", launch.description);
  }

  void on_exit(const ChildExit& exit) {
    auto [trial, slot] = running_.at(exit.pid);
    running_.erase(exit.pid);
    free_slots_.push_back(slot);
    Trial& t = *trial;
    t.exit_code = exit.exit_code;
    t.seconds += clocks_[exit.pid].seconds();
    t.metric = final_metric(trial_folder(t), space_.metric);
    if (exit.exit_code == 0) {
      t.rungs.push_back(t.metric.value_or(std::nan("")));
      log_.rung(t, rungs_[t.rungs.size() - 1]);
      if (tracking_) tracking_->trial_reported(t.index, t.metric);
      t.status = t.rungs.size() == rungs_.size() ? TrialStatus::kDone : TrialStatus::kPaused;
    } else {
      t.status = exit.exit_code == kExitPreempted ? TrialStatus::kStopped : TrialStatus::kFailed;
      if (t.status == TrialStatus::kStopped) stopped_here_.insert(t.index);
    }
    t.message =
        t.status == TrialStatus::kFailed ? failure_message(trial_folder(t), failures_before_[t.index], log_file(t), exit.exit_code) : "";
    if (t.status != TrialStatus::kPaused) log_.ended(t);
    if (t.status == TrialStatus::kFailed)
      log::warn("{} failed ({}); the sweep goes on", trial_name(t.index), t.message);
    else
      log::info("{} {}{}", trial_name(t.index), status_name(t.status), t.metric ? fmt::format(": {} {:.4f}", space_.metric, *t.metric) : "");
  }

  std::string log_file(const Trial& t) const { return (fs::path(folder_) / (trial_name(t.index) + ".log")).string(); }
  std::string trial_folder(const Trial& t) const { return (fs::path(folder_) / trial_name(t.index)).string(); }

  const SweepOptions& o_;
  const SweepSpace& space_;
  std::string folder_;
  SweepLog log_;
  std::vector<Trial> trials_;
  std::vector<int64_t> rungs_;  // the epochs trials pause at; the last is train.epochs
  int64_t parallel_;
  std::optional<StepPlan> steps_;  // under Slurm: each trial one job step of this shape
  ProcessPool pool_;
  std::map<int, std::pair<Trial*, int64_t>> running_;  // pid -> trial, slot
  std::map<int, Stopwatch> clocks_;
  std::vector<int64_t> free_slots_;
  std::set<int64_t> stopped_here_;  // trials stopped by a signal during this run
  std::map<int64_t, size_t> failures_before_;  // per trial: its failures.jsonl lines before its latest launch
  SweepTracking* tracking_ = nullptr;
  std::string parent_run_;
};

// SWEEP/best_recipe.yaml: the best trial's resolved recipe as a run of its own (output SWEEP/best,
// no pause), to train from as it is.
void write_best_recipe(const std::string& trial_folder, const std::string& folder) {
  LoadOptions load;
  load.overrides = {"output=" + (fs::path(folder) / "best").string(), "train.stop_at_epoch=0"};
  load.check_paths = false;
  load.saved_by_run = true;
  const Recipe best = load_recipe((fs::path(trial_folder) / "recipe.yaml").string(), load);
  write_file_atomically((fs::path(folder) / "best_recipe.yaml").string(),
                   fmt::format("# The best trial of this sweep, {}, as a recipe: cvtrain --recipe THIS_FILE\n{}",
                               fs::path(trial_folder).filename().string(), recipe_to_yaml(best)));
}

// How many trials run at once: the space's `parallel`, as far as the GPUs here or the Slurm
// allocation hold them.
int64_t trials_at_once(const SweepOptions& o, const SweepSpace& space, const std::optional<StepPlan>& steps) {
  int64_t parallel = space.parallel;
  if (steps) {
    if (steps->concurrent < parallel)
      log::warn("Slurm job {} holds {} trial(s) of {} at once, not {}", o.slurm->job_id, steps->concurrent, describe_step(steps->shape), parallel);
    return std::min<int64_t>(parallel, steps->concurrent);
  }
  if (o.visible_gpus > 0) {
    const int64_t slots = std::max<int64_t>(1, o.visible_gpus / space.gpus_per_trial);
    if (parallel > slots)
      log::warn("{} GPU(s) hold {} trial(s) of {} GPU(s) at once, not {}", o.visible_gpus, slots, space.gpus_per_trial, parallel);
    parallel = std::min(parallel, slots);
  }
  return parallel;
}

// A space's text for a message: its lines indented by two, no trailing line break.
std::string indented(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 3)) text.insert(at + 1, "  ");
  return text;
}

// Where the space came from, for results.md: "S.yaml", "R.yaml's sweep: section", with the sweep.* overrides.
std::string space_source(const SweepOptions& o) {
  std::string source = o.space_file;
  if (source.empty() && recipe_sweep_section(o.recipe, recipe_keys())) source = o.recipe + "'s sweep: section";
  if (o.space_overrides.empty()) return source;
  return (source.empty() ? "" : source + " with ") + join(o.space_overrides, " ");
}

}  // namespace

SweepSummary run_sweep(const SweepOptions& o) {
  const SweepSpace space = o.space_file.empty() ? load_recipe_sweep_section(o.recipe, recipe_keys(), o.space_overrides)
                                                : load_sweep_space(o.space_file, recipe_keys(), o.space_overrides);
  // What a restart must find unchanged: the space file as written, or the space as read.
  const std::string space_text =
      o.space_file.empty() || !o.space_overrides.empty() ? space.text + "\n" : read_text_file(o.space_file).value_or("");
  LoadOptions base;
  base.overrides = o.overrides;
  base.check_paths = false;
  const Recipe recipe = load_recipe(o.recipe, base);
  const std::string folder = !o.folder.empty() ? o.folder : recipe.output + "_sweep";
  fs::create_directories(folder);
  const FolderLock lock(folder, "sweep");  // a second sweep here would run the same trials again
  const std::string space_copy = (fs::path(folder) / "space.yaml").string();
  if (const std::string earlier = read_text_file(space_copy).value_or(space_text); earlier != space_text)
    throw Error(
        fmt::format("{} holds a sweep of another search space: {} has\n  {}\nand this sweep's, from {}, is\n  {}\ngive another "
                    "--out, or the same space to continue that sweep",
                    folder, space_copy, indented(earlier), space_source(o), indented(space_text)));
  std::vector<Trial> trials = plan_trials(space, SweepLog((fs::path(folder) / "sweep.jsonl").string()).read());

  std::optional<StepPlan> steps;
  if (o.slurm) {
    const bool on_gpus = o.slurm->gpus_per_node > 0;
    steps = plan_steps(*o.slurm, on_gpus ? static_cast<int>(space.gpus_per_trial) : world_size_of(recipe.distributed, 0), on_gpus,
                       static_cast<int>(space.parallel));
  }
  const int64_t parallel = trials_at_once(o, space, steps);
  // Every candidate the sweep can know now, checked before anything runs (TPE's as they come).
  std::vector<std::string> problems;
  for (const Trial& t : trials)
    if (!t.values.empty() && (t.status == TrialStatus::kPending || t.status == TrialStatus::kStopped))
      check_trial(o, space, t, folder, problems);
  if (!problems.empty()) throw RecipeError(problems);
  write_file_atomically(space_copy, space_text);

  SweepRun sweep(o, space, folder, std::move(trials), rung_epochs(space.grace_epochs, space.reduction, recipe.train.epochs), parallel,
                 steps);
  SweepTracking tracking(recipe, space, folder);
  sweep.track_in(tracking);
  sweep.run();
  SweepSummary summary = sweep.summary();
  if (!summary.best_trial.empty()) write_best_recipe(summary.best_trial, folder);
  write_file_atomically((fs::path(folder) / "results.md").string(),
                        fmt::format("# Sweep of {} over {} ({} {})\n\n{}", o.recipe, space_source(o), space.maximize ? "max" : "min",
                                    space.metric, summary.table));
  tracking.finish(summary.stopped > 0);
  return summary;
}

}  // namespace cvtrain
